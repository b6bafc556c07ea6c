"""/os-availability-zone: the zones the compute services are in (list; detail for admins).

A zone exists because a compute service row names it: each compute reports
its ``[DEFAULT] default_availability_zone`` (``nova`` unless configured)
with its heartbeat. It is available while one of its computes is enabled
and up, i.e. while a boot into it can find a host. The detail adds Nova's
``internal`` zone holding the non-compute services, and per host and service whether it is up
(``available``), enabled (``active``) and when it last reported.
"""

from volumesvc import servicegroup
from volumesvc.api import validation
from volumesvc.api.policies import availability_zones as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import availability_zones as schema
from volumesvc.api.views import services as service_views
from volumesvc.objects import service as service_obj


def _zones(req):
    """zone name → its live services, ordered by zone name."""
    zones: dict = {}
    for service in service_obj.list_services(req.deps.db, req.context):
        zone = service_views.zone_of(service)
        zones.setdefault(zone, []).append(service)
    return dict(sorted(zones.items()))


def _available(req, services) -> bool:
    """A zone takes servers while one of its services is enabled and up."""
    return any(not service.disabled and servicegroup.is_up(req.conf, service)
               for service in services)


@validation.query_schema(schema.list_query_v2_1)
@validation.response_body_schema(schema.list_response_v2_1)
def list_availability_zones(req):
    """GET /os-availability-zone → 200: each compute zone and whether it is available."""
    authorize(req.context, policies.LIST)
    return {"availabilityZoneInfo": [
        {"zoneName": zone, "zoneState": {"available": _available(req, services)}, "hosts": None}
        for zone, services in _zones(req).items()
        if zone != service_views.INTERNAL_ZONE]}, 200


def _hosts(req, services) -> dict:
    hosts: dict = {}
    for service in services:
        heartbeat = servicegroup.last_heartbeat(service)
        hosts.setdefault(service.host, {})[service.binary] = {
            "available": servicegroup.is_up(req.conf, service),
            "active": not service.disabled,
            "updated_at": heartbeat.isoformat() if heartbeat else None}
    return hosts


@validation.query_schema(schema.list_query_v2_1)
@validation.response_body_schema(schema.detail_response_v2_1)
def list_availability_zones_detail(req):
    """GET /os-availability-zone/detail → 200 with the hosts and services of each zone (admin)."""
    authorize(req.context, policies.DETAIL)
    return {"availabilityZoneInfo": [
        {"zoneName": zone, "zoneState": {"available": _available(req, services)},
         "hosts": _hosts(req, services)}
        for zone, services in _zones(req).items()]}, 200
