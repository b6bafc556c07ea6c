"""Schemas of /servers/{id}/os-volume_attachments, one constant per version range.

Requests follow Nova's ``volumes.create``/``update`` (2.49 tag, 2.79
delete_on_termination, 2.85 echoed fields on update); representations
follow doc/source/contributor/contract.rst §3.1 (2.70 tag, 2.79 delete_on_termination, 2.89 no
``id`` but attachment_id and bdm_uuid) and the POST table of §3.2 (2.89 is
not applied to POST; 2.101 answers 202 with no body).
"""

import copy

from volumesvc.api.validation import multi_params, object_

# --- shared parameter types (Nova's parameter_types) ------------------------------
_UUID = {"type": "string", "format": "uuid"}
# Nova's match_device: only a hint, libvirt picks the name itself.
DEVICE_PATTERN = r"(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$"
_DEVICE = {"type": ["string", "null"], "pattern": DEVICE_PATTERN}
_TAG = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}
_BOOL_LIKE = {"type": ["boolean", "string"], "enum": [
    True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t",
    False, "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n", "f"]}
_NON_NEGATIVE_INT = {"type": "string", "pattern": "^[0-9]+$"}

# --- GET list query: limit/offset (unknown keys dropped before 2.75, 400 after) ------
list_volume_attachments_query_v2_1 = object_({
    "limit": multi_params(_NON_NEGATIVE_INT),
    "offset": multi_params(_NON_NEGATIVE_INT),
})
list_volume_attachments_query_v2_75 = copy.deepcopy(list_volume_attachments_query_v2_1)

# --- GET one query: nothing (2.102: unknown keys give 400) ---------------------------
show_volume_attachment_query_v2_1 = object_({})
show_volume_attachment_query_v2_102 = copy.deepcopy(show_volume_attachment_query_v2_1)


# --- POST attach ---------------------------------------------------------------------
def _create(attachment):
    return object_({"volumeAttachment": object_(attachment, required=["volumeId"])},
                   required=["volumeAttachment"])


_create_v2_1 = {"volumeId": _UUID, "device": _DEVICE}
create_volume_attachment_v2_1 = _create(_create_v2_1)
# 2.49: a device tag.
_create_v2_49 = dict(_create_v2_1, tag=_TAG)
create_volume_attachment_v2_49 = _create(_create_v2_49)
# 2.79: delete_on_termination.
create_volume_attachment_v2_79 = _create(dict(_create_v2_49,
                                              delete_on_termination=_BOOL_LIKE))

# --- PUT update/swap -------------------------------------------------------------------
update_volume_attachment_v2_1 = _create({"volumeId": _UUID})
# 2.85: the other fields may be echoed (they must not change) and
# delete_on_termination may be set.
update_volume_attachment_v2_85 = _create({
    "volumeId": _UUID, "id": _UUID, "serverId": _UUID, "device": _DEVICE, "tag": _TAG,
    "delete_on_termination": _BOOL_LIKE})

# --- representations: rows in views/volume_attachments.py, envelopes here -------------
def show_volume_attachment_response(attachment, version=None):
    """GET one, and the 200 of POST below 2.101."""
    return object_({"volumeAttachment": attachment}, required=["volumeAttachment"])


def list_volume_attachments_response(attachment, version=None):
    return object_({"volumeAttachments": {"type": "array", "items": attachment}},
                   required=["volumeAttachments"])


# PUT and DELETE: 202, no body.
update_volume_attachment_response_v2_1 = None
delete_volume_attachment_response_v2_1 = None
