"""The os-services representation per microversion (one table).

2.11 adds ``forced_down``; from 2.53 services are identified by uuid, so
``id`` changes type. Non-compute services are reported in the internal zone,
as Nova does.
"""

from volumesvc import servicegroup
from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr
from volumesvc.objects.compute_host import DEFAULT_ZONE

INTERNAL_ZONE = "internal"
_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}


def is_compute(service) -> bool:
    return service.binary.endswith("-compute")


def _isotime(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def zone_of(service) -> str:
    """The zone os-services and os-availability-zone report ``service`` in."""
    return _zone(service, None)


def _zone(service, ctx):
    if is_compute(service):
        return service.availability_zone or DEFAULT_ZONE
    return INTERNAL_ZONE


SERVICE = Representation("service", (
    Field("id", {"type": "integer"}, attr("id"), last=mv.before(mv.V2_53_SERVICE_UUIDS)),
    Field("id", {"type": "string", "format": "uuid"}, attr("uuid"),
          first=mv.V2_53_SERVICE_UUIDS),
    Field("binary", _STR, attr("binary")),
    Field("host", _STR, attr("host")),
    Field("zone", _STR, _zone),
    Field("status", {"type": "string", "enum": ["enabled", "disabled"]},
          lambda s, ctx: "disabled" if s.disabled else "enabled"),
    Field("state", {"type": "string", "enum": ["up", "down"]},
          lambda s, ctx: "up" if servicegroup.is_up(ctx.conf, s) else "down"),
    Field("updated_at", _NULLABLE_STR,
          lambda s, ctx: _isotime(servicegroup.last_heartbeat(s))),
    Field("disabled_reason", _NULLABLE_STR, attr("disabled_reason")),
    Field("forced_down", {"type": "boolean"}, lambda s, ctx: bool(s.forced_down),
          first=mv.V2_11_FORCED_DOWN),
))


def service(req, row) -> dict:
    return SERVICE.render(req.version, row, conf=req.conf)
