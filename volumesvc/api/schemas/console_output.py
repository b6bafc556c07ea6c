"""Request body of the os-getConsoleOutput server action.

``length``: how many lines from the end of the log; absent, ``null`` or -1
means all of it. An integer or a string of one (Nova takes both), never
below -1: a string must spell -1 or a non-negative integer (Nova's pattern
lets ``"-5"`` through to a line count that makes no sense).
"""

from volumesvc.api.validation import object_

get_console_output = object_({
    "length": {"type": ["integer", "string", "null"], "pattern": "^(-1|[0-9]+)$",
               "minimum": -1},
})
