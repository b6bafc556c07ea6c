"""/servers/{id}/ips: a server's addresses by network.

volumesvc has no networking (servers boot with ``networks: none``), so a
server is on no network: the list is empty and every label is a 404. The
resource exists because clients read it after a boot (tempest does before
every attach test) and Nova always serves it.
"""

from volumesvc import exception
from volumesvc.api import validation
from volumesvc.api.policies import ips as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import ips as schema


@validation.query_schema(schema.list_ips_query_v2_1)
@validation.response_body_schema(schema.list_ips_response_v2_1)
def list_ips(req, server_id):
    """GET /servers/{id}/ips → 200 ``{"addresses": {}}``; 404 unknown server."""
    instance = get_instance(req, server_id)
    authorize(req.context, policies.INDEX, {"project_id": instance.project_id})
    return {"addresses": {}}, 200


@validation.query_schema(schema.show_ips_query_v2_1)
@validation.response_body_schema(schema.show_ips_response_v2_1)
def show_ips(req, server_id, network_label):
    """GET /servers/{id}/ips/{label} → 404: the server is on no network."""
    instance = get_instance(req, server_id)
    authorize(req.context, policies.SHOW, {"project_id": instance.project_id})
    raise exception.NotFound("Instance is not a member of specified network")
