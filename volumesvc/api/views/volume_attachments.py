"""Volume attachments per microversion (doc/source/contributor/contract.rst §3.1, §3.2).

``read`` (list/show): 2.70 ``tag``, 2.79 ``delete_on_termination``, 2.89 no
``id`` but ``attachment_id`` and ``bdm_uuid``; ``device`` only when the BDM
has one. ``created`` (the 200 of POST below 2.101): ``device`` always (may
be null) and 2.89 was never applied to it, so it keeps ``id``.

2.106 (ours): ``status`` on every read entry and ``fault`` when one is
recorded (a failed attach, ``error``; or the last failed detach of an
``attached`` one). A failed attach that never got a Cinder attachment has
``attachment_id`` null, so from 2.106 that key may be null.

2.108 (ours): ``read_only`` on every read entry: the guest has the volume
read-only, because the attach asked for it or because Cinder made the
attachment read-only (the volume's read-only flag).
"""

import types

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr
from volumesvc.api.schemas.parameter_types import UUID
from volumesvc.api.validation import object_
from volumesvc.objects import attachment_status
from volumesvc.states import attach_states

READ, CREATED = "read", "created"
_STR_OR_NULL = {"type": ["string", "null"]}
_UUID_OR_NULL = {"type": ["string", "null"], "format": "uuid"}
_STATUS = {"type": "string", "enum": list(attach_states.STATUSES)}
_FAULT = object_({"code": {"type": "integer"}, "message": {"type": "string"},
                  "created": {"type": "string", "format": "date-time"}},
                 required=["code", "message", "created"])


def _server_id(bdm, ctx):
    return ctx.server_id


ATTACHMENT = Representation("volume_attachment", (
    Field("id", UUID, attr("volume_id"), last=mv.before(mv.V2_89_ATTACHMENT_IDS), views=(READ,)),
    Field("id", UUID, attr("volume_id"), views=(CREATED,)),
    Field("serverId", UUID, _server_id, views=(CREATED,)),
    Field("volumeId", UUID, attr("volume_id")),
    Field("serverId", UUID, _server_id, views=(READ,)),
    Field("device", _STR_OR_NULL, attr("device_name"), views=(READ,),
          when=lambda bdm, ctx: bool(bdm.device_name)),
    Field("device", _STR_OR_NULL, attr("device_name"), views=(CREATED,)),
    Field("tag", _STR_OR_NULL, attr("tag"), first=mv.V2_70_ATTACHMENT_TAGS),
    Field("delete_on_termination", {"type": "boolean"},
          lambda bdm, ctx: bool(bdm.delete_on_termination),
          first=mv.V2_79_ATTACH_DELETE_ON_TERMINATION),
    Field("attachment_id", UUID, attr("attachment_id"), first=mv.V2_89_ATTACHMENT_IDS,
          last=mv.before(mv.V2_106_ATTACHMENT_STATUS), views=(READ,)),
    Field("attachment_id", _UUID_OR_NULL, attr("attachment_id"),
          first=mv.V2_106_ATTACHMENT_STATUS, views=(READ,)),
    Field("bdm_uuid", UUID, attr("uuid"), first=mv.V2_89_ATTACHMENT_IDS, views=(READ,)),
    Field("status", _STATUS, lambda bdm, ctx: attach_states.shown(bdm),
          first=mv.V2_106_ATTACHMENT_STATUS, views=(READ,)),
    Field("fault", _FAULT, lambda bdm, ctx: attachment_status.fault_body(bdm),
          first=mv.V2_106_ATTACHMENT_STATUS, views=(READ,),
          when=lambda bdm, ctx: attachment_status.fault_body(bdm) is not None),
    Field("read_only", {"type": "boolean"}, lambda bdm, ctx: bool(bdm.read_only),
          first=mv.V2_108_READ_ONLY_ATTACH, views=(READ,)),
))


def attachment(req, bdm, server_id) -> dict:
    """One attachment (list/show) at the request's version."""
    return ATTACHMENT.render(req.version, bdm, view=READ, server_id=server_id)


def created(req, bdm: dict, server_id, volume_id) -> dict:
    """The 200 body of POST below 2.101 from the conductor's BDM dict."""
    source = types.SimpleNamespace(
        volume_id=volume_id, device_name=bdm.get("device_name"), tag=bdm.get("tag"),
        delete_on_termination=bdm.get("delete_on_termination"))
    return ATTACHMENT.render(req.version, source, view=CREATED, server_id=server_id)
