"""The volume attachment representation per microversion (api-contract §3.1, §3.2).

``read`` (list/show): 2.70 ``tag``, 2.79 ``delete_on_termination``, 2.89 no
``id`` but ``attachment_id`` and ``bdm_uuid``; ``device`` only when the BDM
has one. ``created`` (the 200 of POST below 2.101): ``device`` always (may
be null) and 2.89 was never applied to it, so it keeps ``id``.
"""

import types

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr

READ, CREATED = "read", "created"
_UUID = {"type": "string", "format": "uuid"}
_STR_OR_NULL = {"type": ["string", "null"]}


def _server_id(bdm, ctx):
    return ctx.server_id


ATTACHMENT = Representation("volume_attachment", (
    Field("id", _UUID, attr("volume_id"), last=mv.before(mv.V2_89_ATTACHMENT_IDS), views=(READ,)),
    Field("id", _UUID, attr("volume_id"), views=(CREATED,)),
    Field("serverId", _UUID, _server_id, views=(CREATED,)),
    Field("volumeId", _UUID, attr("volume_id")),
    Field("serverId", _UUID, _server_id, views=(READ,)),
    Field("device", _STR_OR_NULL, attr("device_name"), views=(READ,),
          when=lambda bdm, ctx: bool(bdm.device_name)),
    Field("device", _STR_OR_NULL, attr("device_name"), views=(CREATED,)),
    Field("tag", _STR_OR_NULL, attr("tag"), first=mv.V2_70_ATTACHMENT_TAGS),
    Field("delete_on_termination", {"type": "boolean"},
          lambda bdm, ctx: bool(bdm.delete_on_termination),
          first=mv.V2_79_ATTACH_DELETE_ON_TERMINATION),
    Field("attachment_id", _UUID, attr("attachment_id"), first=mv.V2_89_ATTACHMENT_IDS,
          views=(READ,)),
    Field("bdm_uuid", _UUID, attr("uuid"), first=mv.V2_89_ATTACHMENT_IDS, views=(READ,)),
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
