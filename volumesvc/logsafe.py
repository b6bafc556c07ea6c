"""Keep what a client sent from forging log records.

A request path may hold ``%0a``; once decoded, a path logged as it is starts
a new line that reads like another log record. :func:`escape` writes every
control character as a visible escape (``\\n``, ``\\x1b``...);
:class:`EscapeControlCharacters` does it to the whole message of every
record a handler formats, so no log call in the API process has to remember.
Tracebacks are left alone: they come from our code, not from the client.
"""

import logging
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _replace(match: re.Match) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def escape(text) -> str:
    """``text`` (any object, as str) with each control character escaped."""
    return _CONTROL.sub(_replace, str(text))


class EscapeControlCharacters(logging.Filter):
    """A handler filter: the record's message, arguments merged, escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        escaped = escape(message)
        if escaped != message:
            record.msg, record.args = escaped, None
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Add the filter to every handler of ``logger`` (default: the root logger)."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, EscapeControlCharacters) for f in handler.filters):
            handler.addFilter(EscapeControlCharacters())
