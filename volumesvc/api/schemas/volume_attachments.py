"""Schemas of /servers/{id}/os-volume_attachments, one constant per version range.

Requests follow Nova's ``volumes.create``/``update`` (2.49 tag, 2.79
delete_on_termination, 2.85 echoed fields on update); representations
follow doc/source/contributor/contract.rst §3.1 (2.70 tag, 2.79 delete_on_termination, 2.89 no
``id`` but attachment_id and bdm_uuid) and the POST table of §3.2 (2.89 is
not applied to POST; 2.101 answers 202 with no body). 2.108 (ours) adds
``read_only`` to the attach request.
"""

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.schemas.parameter_types import BOOL_LIKE, TAG, UUID
from volumesvc.api.validation import multi_params, object_

# Nova's match_device: only a hint, libvirt picks the name itself.
DEVICE_PATTERN = r"(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$"
_DEVICE = {"type": ["string", "null"], "pattern": DEVICE_PATTERN}

# --- GET list query: limit/offset ----------------------------------------------------
list_volume_attachments_query_v2_1 = object_({
    "limit": multi_params(parameter_types.QUERY_NON_NEGATIVE_INT),
    "offset": multi_params(parameter_types.QUERY_NON_NEGATIVE_INT),
})

# --- GET one query: nothing ----------------------------------------------------------
show_volume_attachment_query_v2_1 = object_({})


# --- POST attach ---------------------------------------------------------------------
def _create(attachment):
    return object_({"volumeAttachment": object_(attachment, required=["volumeId"])},
                   required=["volumeAttachment"])


_create_v2_1 = {"volumeId": UUID, "device": _DEVICE}
create_volume_attachment_v2_1 = _create(_create_v2_1)
# 2.49: a device tag.
_create_v2_49 = dict(_create_v2_1, tag=TAG)
create_volume_attachment_v2_49 = _create(_create_v2_49)
# 2.79: delete_on_termination.
_create_v2_79 = dict(_create_v2_49, delete_on_termination=BOOL_LIKE)
create_volume_attachment_v2_79 = _create(_create_v2_79)
# 2.108: read_only, a JSON boolean (Cinder's attachment mode ``ro`` when true).
create_volume_attachment_v2_108 = _create(dict(_create_v2_79, read_only={"type": "boolean"}))
CREATE_WINDOWS = ((mv.V2_1_BASE, create_volume_attachment_v2_1),
                  (mv.V2_49_ATTACH_TAGS, create_volume_attachment_v2_49),
                  (mv.V2_79_ATTACH_DELETE_ON_TERMINATION, create_volume_attachment_v2_79),
                  (mv.V2_108_READ_ONLY_ATTACH, create_volume_attachment_v2_108))

# --- PUT update/swap -------------------------------------------------------------------
update_volume_attachment_v2_1 = _create({"volumeId": UUID})
# 2.85: the other fields may be echoed (they must not change) and
# delete_on_termination may be set.
update_volume_attachment_v2_85 = _create({
    "volumeId": UUID, "id": UUID, "serverId": UUID, "device": _DEVICE, "tag": TAG,
    "delete_on_termination": BOOL_LIKE})
UPDATE_WINDOWS = ((mv.V2_1_BASE, update_volume_attachment_v2_1),
                  (mv.V2_85_UPDATE_ATTACHMENT, update_volume_attachment_v2_85))

# --- representations: rows in views/volume_attachments.py, envelopes here -------------
def show_volume_attachment_response(attachment, version=None):
    """GET one, and the 200 of POST below 2.101."""
    return object_({"volumeAttachment": attachment}, required=["volumeAttachment"])


def retried_attach_response(attachment, version=None):
    """POST from 2.107: no body (a new attach), or the attachment a retry asked for again."""
    return {"oneOf": [{"type": "null"}, show_volume_attachment_response(attachment, version)]}


def list_volume_attachments_response(attachment, version=None):
    return object_({"volumeAttachments": {"type": "array", "items": attachment}},
                   required=["volumeAttachments"])


# PUT and DELETE: 202, no body.
update_volume_attachment_response_v2_1 = None
delete_volume_attachment_response_v2_1 = None
