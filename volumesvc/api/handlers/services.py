"""/os-services: list, enable/disable/force down, delete (admin only).

Services are identified by their integer id below 2.53 and by uuid from
2.53 (``V2_53_SERVICE_UUIDS``). The update API changed as a whole at 2.53
(``PUT /os-services/{action}`` with host and binary → ``PUT
/os-services/{uuid}``), so it has two version windows.
"""

from oslo_utils import strutils, uuidutils

from volumesvc.api import errors, validation, versioned
from volumesvc.api import microversions as mv
from volumesvc.api.policies import services as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import services as schema
from volumesvc.api.views import services as views
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import service as service_obj


@validation.query_schema(schema.list_services_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@validation.windows(validation.response_body_schema,
                    views.SERVICE.windows(schema.list_services_response))
def list_services(req):
    """GET /os-services → 200.

    2.1: integer ids; 2.11: + ``forced_down``; 2.53: ids are uuids;
    2.75: unknown query parameters give 400 (ignored before).
    """
    authorize(req.context, policies.LIST)
    deps = req.deps
    services = service_obj.list_services(
        deps.db, req.context, host=req.last("host"), binary=req.last("binary"))
    return {"services": [views.service(req, s) for s in services]}, 200


# --- update: 2.1 - 2.52, PUT /os-services/{action} ---------------------------------

_LEGACY_ACTIONS = ("enable", "disable", "disable-log-reason", "force-down")


def _legacy_values(req, action):
    """Validate the legacy action and return the values to store."""
    body = req.body
    if action not in _LEGACY_ACTIONS or (
            action == "force-down" and not req.is_at_least(mv.V2_11_FORCED_DOWN)):
        raise errors.APIError(404, "Unknown action", errors.ROUTE_NOT_FOUND)
    if action == "force-down":
        if "forced_down" not in body:
            raise errors.APIError(400, "Missing forced_down field", errors.SCHEMA_INVALID)
        return {"forced_down": body["forced_down"]}
    if "forced_down" in body:
        raise errors.APIError(400, "forced_down is only valid with force-down",
                              errors.SCHEMA_INVALID)
    if action == "enable":
        return {"disabled": False, "disabled_reason": None}
    if action == "disable-log-reason" and "disabled_reason" not in body:
        raise errors.APIError(400, "Missing disabled reason field", errors.SCHEMA_INVALID)
    return {"disabled": True, "disabled_reason": body.get("disabled_reason")}


@versioned.version_handler(mv.V2_1_BASE, mv.before(mv.V2_53_SERVICE_UUIDS),
                           name="update_service")
@validation.windows(validation.schema, schema.UPDATE_BY_HOST_WINDOWS)
@validation.windows(validation.response_body_schema, schema.UPDATE_BY_HOST_RESPONSE_WINDOWS)
def _update_service_by_host(req, service_id):
    """PUT /os-services/{enable|disable|disable-log-reason|force-down} → 200.

    2.1-2.52: body names host and binary; 2.11 adds force-down.
    """
    authorize(req.context, policies.UPDATE)
    values = _legacy_values(req, service_id)
    service = service_obj.get_by_host_and_binary(
        req.deps.db, req.context, req.body["host"], req.body["binary"])
    service_obj.update(req.deps.db, req.context, service.uuid, **values)
    result = {"host": service.host, "binary": service.binary}
    if "forced_down" in values:
        result["forced_down"] = values["forced_down"]
    else:
        result["status"] = "disabled" if values["disabled"] else "enabled"
        if service_id == "disable-log-reason":
            result["disabled_reason"] = values["disabled_reason"]
    return {"service": result}, 200


# --- update: 2.53+, PUT /os-services/{uuid} -----------------------------------------

def _uuid_values(body) -> dict:
    status = body.get("status")
    if status is None and "forced_down" not in body:
        raise errors.APIError(
            400, "No updates were requested. Fields 'status' or 'forced_down' should be "
            "specified.", errors.SCHEMA_INVALID)
    if "disabled_reason" in body and status != "disabled":
        raise errors.APIError(
            400, "Specifying 'disabled_reason' with status 'enabled' is invalid.",
            errors.SCHEMA_INVALID)
    values: dict[str, object] = {}
    if status == "enabled":
        values.update(disabled=False, disabled_reason=None)
    elif status == "disabled":
        values.update(disabled=True, disabled_reason=body.get("disabled_reason"))
    if "forced_down" in body:
        values["forced_down"] = body["forced_down"]
    return values


def _get_by_uuid(req, service_id):
    if not uuidutils.is_uuid_like(service_id):
        raise errors.APIError(400, f"Invalid uuid {service_id}", errors.BAD_REQUEST)
    return service_obj.get_by_uuid(req.deps.db, req.context, service_id)


@versioned.version_handler(mv.V2_53_SERVICE_UUIDS, name="update_service")
@validation.schema(schema.update_service_v2_53, mv.V2_53_SERVICE_UUIDS)
@validation.windows(validation.response_body_schema, views.SERVICE.windows(
    schema.update_service_response, first=mv.V2_53_SERVICE_UUIDS))
def update_service(req, service_id):  # noqa: F811
    """PUT /os-services/{uuid} → 200 with the full service (2.53+).

    Only compute services can be updated (400 otherwise, as in Nova).
    """
    authorize(req.context, policies.UPDATE)
    service = _get_by_uuid(req, service_id)
    if not views.is_compute(service):
        raise errors.APIError(
            400, f"Updating a {service.binary} service is not supported. Only compute "
            "services can be updated.", errors.BAD_REQUEST)
    values = _uuid_values(req.body)
    service = service_obj.update(req.deps.db, req.context, service.uuid, **values)
    return {"service": views.service(req, service)}, 200


@validation.response_body_schema(schema.delete_service_response_v2_1)
def delete_service(req, service_id):
    """DELETE /os-services/{id} → 204; id is the integer id below 2.53, uuid from 2.53."""
    authorize(req.context, policies.DELETE)
    if req.is_at_least(mv.V2_53_SERVICE_UUIDS):
        service = _get_by_uuid(req, service_id)
    else:
        if not strutils.is_int_like(service_id):
            raise errors.APIError(400, f"Invalid service id {service_id}", errors.BAD_REQUEST)
        service = service_obj.get_by_id(req.deps.db, req.context, int(service_id))
    # NOTE: the service row is all that says where these instances run;
    # deleting it would strand them (and their volume attachments) on a host
    # nobody can reach any more. Nova refuses the same way.
    if views.is_compute(service) and instance_obj.list_instances(
            req.deps.db, req.context, host=service.host, limit=1):
        raise errors.APIError(
            409, "Unable to delete compute service that is hosting instances. "
            "Migrate or delete the instances first.", errors.SERVICE_IN_USE)
    service_obj.destroy(req.deps.db, req.context, service.uuid)
    return None, 204
