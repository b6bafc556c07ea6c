"""Request bodies of the lock, unlock and os-resetState server actions.

``lock`` reads nothing below 2.73 (any object or ``null``, as Nova)
and an optional ``locked_reason`` of up to 255 characters from 2.73;
``unlock`` never takes anything; ``os-resetState`` needs ``state``
``active`` or ``error``.
"""

from volumesvc.api.validation import object_

_no_body = {"type": ["null", "object"], "additionalProperties": False}
# Below 2.73 Nova validates no lock body at all.
lock_v2_1 = {"type": ["null", "object"]}
lock_v2_73 = {"oneOf": [
    {"type": "null"},
    object_({"locked_reason": {"type": "string", "minLength": 1, "maxLength": 255}}),
]}
unlock = _no_body
reset_state = object_({"state": {"type": "string", "enum": ["active", "error"]}},
                      required=["state"])
