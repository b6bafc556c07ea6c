"""Schemas of /os-assisted-volume-snapshots (doc/source/contributor/contract.rst §8)."""

from volumesvc.api.validation import multi_params, object_

# --- POST ----------------------------------------------------------------------
create_assisted_volume_snapshot_v2_1 = object_({
    "snapshot": object_({
        "volume_id": {"type": "string"},
        "create_info": object_({
            "snapshot_id": {"type": "string"},
            "type": {"type": "string", "enum": ["qcow2"]},
            "new_file": {"type": "string"},
            "id": {"type": "string"},
        }, required=["snapshot_id", "type", "new_file"]),
    }, required=["volume_id", "create_info"]),
}, required=["snapshot"])

create_assisted_volume_snapshot_response_v2_1 = object_({
    "snapshot": object_({
        "id": {"type": ["string", "null"]},
        "volumeId": {"type": "string"},
    }, required=["id", "volumeId"]),
}, required=["snapshot"])

# --- DELETE ----------------------------------------------------------------------
# delete_info is the only key (an unknown one is a 400 from 2.75 on: the
# handler declares it with Nova's list routes).
delete_assisted_volume_snapshot_query_v2_1 = object_({
    "delete_info": multi_params({"type": "string"}),
})

delete_assisted_volume_snapshot_response_v2_1 = None
