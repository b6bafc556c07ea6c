"""Request bodies of ``os-migrateLive``, per microversion (Nova's).

2.1: ``host`` (null: the scheduler chooses), ``block_migration`` and
``disk_over_commit``, all three required. 2.25: ``block_migration`` may be
``auto`` and ``disk_over_commit`` is gone. 2.30 adds ``force`` (take the
named host without checking its room); 2.68 removes it again.
"""

from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_

_HOST = {"oneOf": [{"type": "null"}, parameter_types.HOST_NAME]}
_AUTO = {"oneOf": [parameter_types.BOOL_LIKE, {"type": "string", "enum": ["auto"]}]}

migrate_live_v2_1 = object_({
    "host": _HOST,
    "block_migration": parameter_types.BOOL_LIKE,
    "disk_over_commit": parameter_types.BOOL_LIKE,
}, required=["host", "block_migration", "disk_over_commit"])
migrate_live_v2_25 = object_({"host": _HOST, "block_migration": _AUTO},
                             required=["host", "block_migration"])
migrate_live_v2_30 = object_({"host": _HOST, "block_migration": _AUTO,
                              "force": parameter_types.BOOL_LIKE},
                             required=["host", "block_migration"])
migrate_live_v2_68 = migrate_live_v2_25
