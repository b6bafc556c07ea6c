"""Request bodies of ``resize``, ``migrate``, ``confirmResize`` and ``revertResize`` (Nova's).

``resize`` names the new flavor (``flavorRef``, its id) and may carry
``OS-DCF:diskConfig``, which a volume-backed server has no use for and
which is accepted as Nova accepts it. ``migrate`` has no body before 2.56;
2.56 adds an optional ``host`` (null: the scheduler chooses).
``confirmResize`` and ``revertResize`` carry nothing (``null``; ``{}`` is
taken too, as Nova takes it).
"""

from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_

resize = object_({
    "flavorRef": {"type": ["string", "integer"], "minLength": 1},
    "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
}, required=["flavorRef"])

no_body = {"type": ["null", "object"], "additionalProperties": False}
migrate_v2_1 = no_body
migrate_v2_56 = {"oneOf": [
    {"type": "null"},
    object_({"host": {"oneOf": [{"type": "null"}, parameter_types.HOST_NAME]}}),
]}
