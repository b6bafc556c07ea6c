"""The key pair representation per microversion: one table for list, show and create.

The list shows name, public_key and fingerprint; create adds ``user_id``
(and ``private_key`` when the key was generated); show adds the row's id and
timestamps with Nova's constant ``deleted: false``/``deleted_at: null`` (key
pairs are hard-deleted). ``type`` everywhere from 2.2.
"""

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr

INDEX, CREATE, SHOW = "index", "create", "show"
_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}


def _timestamp(name):
    def value(keypair, ctx):
        stamp = getattr(keypair, name)
        return stamp.isoformat() if stamp is not None else None
    return value


KEYPAIR = Representation("keypair", (
    Field("name", _STR, attr("name")),
    Field("public_key", _STR, attr("public_key")),
    Field("fingerprint", _STR, attr("fingerprint")),
    Field("private_key", _STR, lambda k, ctx: ctx.private_key, views=(CREATE,),
          when=lambda k, ctx: ctx.private_key is not None),
    Field("user_id", _STR, attr("user_id"), views=(CREATE, SHOW)),
    Field("created_at", _NULLABLE_STR, _timestamp("created_at"), views=(SHOW,)),
    Field("updated_at", _NULLABLE_STR, _timestamp("updated_at"), views=(SHOW,)),
    Field("deleted", {"type": "boolean"}, lambda k, ctx: False, views=(SHOW,)),
    Field("deleted_at", {"type": "null"}, lambda k, ctx: None, views=(SHOW,)),
    Field("id", {"type": "integer"}, attr("id"), views=(SHOW,)),
    Field("type", {"type": "string", "enum": ["ssh", "x509"]}, attr("type"),
          first=mv.V2_2_KEYPAIR_TYPE),
))


def render(req, keypair, view, private_key=None) -> dict:
    return KEYPAIR.render(req.version, keypair, view=view, private_key=private_key)
