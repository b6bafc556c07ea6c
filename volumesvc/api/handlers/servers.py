"""/servers: boot (with block_device_mapping_v2), list, show, update and delete.

Boot validation lives in ``logic/bdm.py`` and row creation in
``logic/build.py``; the representation per microversion in
``views/servers.py``. This module reads the request, applies policy and
project scoping, and ties those together.
"""

import ipaddress
import secrets

import flask
from oslo_db import exception as db_exc
from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_metadata
from volumesvc.api.logic import bdm as bdm_logic
from volumesvc.api.logic import build, server_filters, states
from volumesvc.api.logic import keypairs as keypair_logic
from volumesvc.api.policies import servers as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import servers as schema
from volumesvc.api.views import servers as views
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host, instance_action, instance_fault
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import task_states, vm_states

_PASSWORD_CHARS = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_PASSWORD_LENGTH = 12
NO_NETWORKS = ("volumesvc manages no networks: 'networks' must be 'none' or 'auto' "
               "(a list of networks, ports or fixed IPs cannot be honoured).")
LEGACY_BDM = ("The legacy block_device_mapping format is not supported; use "
              "block_device_mapping_v2.")


def _response_windows(envelope, view):
    return validation.windows(validation.response_body_schema,
                              views.SERVER.windows(envelope, view=view))


def _allowed(req, rule) -> bool:
    try:
        authorize(req.context, rule)
    except exception.Forbidden:
        return False
    return True


# --- boot -------------------------------------------------------------------------------

def _count(server, key, default):
    # NOTE: compared with max_servers_per_request (403), never stored.
    return validation.bounded_int(server.get(key, default), key, 1, None)


def _check_networks(server):
    networks = server.get("networks")
    if isinstance(networks, list) and networks:
        raise errors.APIError(400, NO_NETWORKS, errors.BAD_REQUEST)


def _requested_bdms(req, server, image_ref):
    legacy = server.get("block_device_mapping") or []
    v2 = server.get("block_device_mapping_v2") or []
    if legacy and v2:
        raise errors.APIError(400, "Using different block_device_mapping syntaxes is not "
                              "allowed in the same request.", errors.BAD_REQUEST)
    if legacy:
        raise errors.APIError(400, LEGACY_BDM, errors.BAD_REQUEST)
    if v2:
        authorize(req.context, policies.CREATE_ATTACH_VOLUME)
    return bdm_logic.from_api(v2, bool(image_ref))


def _flavor(req, server):
    flavor_id = str(server["flavorRef"]).rstrip("/").rsplit("/", 1)[-1]
    try:
        flavor = flavor_obj.get_by_flavorid(req.deps.db, req.context, flavor_id)
    except exception.FlavorNotFound as exc:
        raise errors.APIError(400, exc.format_message(), errors.BAD_REQUEST) from exc
    # A private flavor is one only admins see (there is no per-project flavor
    # access): to anyone else it does not exist, at boot as at GET /flavors/{id}.
    if flavor.disabled or (not flavor.is_public and not req.context.is_admin):
        raise errors.APIError(400, f"Flavor {flavor_id} could not be found.",
                              errors.BAD_REQUEST)
    return flavor


def _image(req, image_ref):
    if not image_ref:
        return None
    try:
        image = req.deps.glance.get(req.context, image_ref)
    except exception.ImageNotFound as exc:
        raise errors.APIError(400, "Can not find requested image",
                              errors.BAD_REQUEST) from exc
    if image.get("status") != "active":
        raise errors.APIError(400, f"Image {image_ref} is not active.", errors.BAD_REQUEST)
    return image


def _check_image_min_ram(flavor, image):
    """The image's ``min_ram`` says the guest does not run with less: refuse it at the API."""
    if image and flavor.memory_mb < int(image.get("min_ram") or 0):
        raise errors.APIError(400, "Flavor's memory is too small for requested image.",
                              errors.BAD_REQUEST)


def _canonical_ipv6(address):
    """The compressed form, as Nova stores it (``0:…:babe:220.12.22.2`` → ``::babe:dc0c:1602``).

    The schema has already checked it is an IPv6 address; the long forms it
    accepts need up to 45 characters and the column holds 39.
    """
    return ipaddress.IPv6Address(address).compressed if address else address


def _check_zone(req, zone):
    """400 unless some enabled compute is in the requested availability zone (as Nova)."""
    if not zone:
        return
    computes = compute_host.list_hosts(req.conf, req.deps.db, req.context)
    if not any(host.availability_zone == zone for host in computes if not host.disabled):
        raise errors.APIError(400, "The requested availability zone is not available",
                              errors.BAD_REQUEST)


def _requested_host(req, server):
    """The compute a 2.74 boot names (``host``, ``hypervisor_hostname``), checked; or None.

    Admin-only by policy. Each compute is its own single hypervisor here, so
    a hypervisor_hostname is a compute's host name and both, when given,
    must name the same one. The host still has to pass the scheduler's
    checks (up, enabled, zone, room), as in Nova.
    """
    host, node = server.get("host"), server.get("hypervisor_hostname")
    if host is None and node is None:
        return None
    authorize(req.context, policies.CREATE_REQUESTED_DESTINATION)
    computes = {h.host for h in compute_host.list_hosts(req.conf, req.deps.db, req.context)}
    for name in (host, node):
        if name is not None and name not in computes:
            raise errors.APIError(400, f"Compute host {name} could not be found.",
                                  errors.BAD_REQUEST)
    if host is not None and node is not None and host != node:
        raise errors.APIError(400, f"Compute host {host} could not be found.",
                              errors.BAD_REQUEST)
    return host or node


def _build_request(req, server, flavor, image, validated, max_count, min_count=1,
                   requested_host=None, key_data=None):
    hostname = server.get("hostname")
    if hostname and max_count > 1:
        raise errors.APIError(400, "Cannot set hostname when booting multiple instances.",
                              errors.BAD_REQUEST)
    config_drive = server.get("config_drive")
    return build.BuildRequest(
        name=server["name"], flavor=flavor, bdms=validated.bdms, max_count=max_count,
        min_count=min_count,
        description=(server.get("description") if req.is_at_least(mv.V2_19_DESCRIPTION)
                     else server["name"]),
        image_ref=server.get("imageRef") or None, image=image,
        availability_zone=server.get("availability_zone"),
        metadata=server.get("metadata", {}), key_name=server.get("key_name"),
        key_data=key_data, user_data=server.get("user_data"),
        config_drive="True" if config_drive is not None and strutils.bool_from_string(
            config_drive) else None,
        access_ip_v4=server.get("accessIPv4"),
        access_ip_v6=_canonical_ipv6(server.get("accessIPv6")),
        tags=server.get("tags", []), hostname=hostname, multiattach=validated.multiattach,
        requested_host=requested_host)


@validation.windows(validation.schema, schema.CREATE_WINDOWS)
@validation.response_body_schema(schema.create_server_response_v2_1)
def create_server(req):
    """POST /servers → 202 with the server (or its reservation_id).

    Request keys per window: see ``schemas/servers.py``; 2.37+ networks
    required; 2.60+ multiattach volumes; 2.67+ BDM volume_type.
    """
    authorize(req.context, policies.CREATE)
    server = req.body["server"]
    min_count = _count(server, "min_count", 1)
    max_count = _count(server, "max_count", min_count)
    if min_count > max_count:
        raise errors.APIError(400, "min_count must be <= max_count", errors.BAD_REQUEST)
    limit = req.conf.api.max_servers_per_request
    if min_count > limit:
        raise errors.APIError(
            403, f"Requested {min_count} servers in one request, but at most {limit} may be "
            "created at once.", errors.OVER_LIMIT)
    max_count = min(max_count, limit)
    image_ref = server.get("imageRef") or None
    server_metadata.check_count(server.get("metadata", {}))
    _check_networks(server)
    requested = _requested_bdms(req, server, image_ref)
    bdm_logic.require_image_or_bdms(image_ref, requested)
    flavor = _flavor(req, server)
    key_data = keypair_logic.check_key_name(req.deps.db, req.context, server.get("key_name"))
    _check_zone(req, server.get("availability_zone"))
    requested_host = _requested_host(req, server)
    image = _image(req, image_ref)
    _check_image_min_ram(flavor, image)
    bdms = bdm_logic.merge(image_ref, bdm_logic.image_defined(image), requested)
    check = bdm_logic.BootCheck(
        context=req.context, deps=req.deps, version=req.version, image_ref=image_ref,
        image=image, flavor=flavor, max_count=max_count,
        availability_zone=server.get("availability_zone"))
    validated = bdm_logic.validate(check, bdms)
    instances, resv_id = build.create_instances(
        req.context, req.deps, _build_request(req, server, flavor, image, validated,
                                              max_count, min_count, requested_host, key_data))
    if strutils.bool_from_string(server.get("return_reservation_id", False)):
        return {"reservation_id": resv_id}, 202
    first = instances[0]
    body = {"id": first.uuid, "links": views.links(req, first.uuid),
            "OS-DCF:diskConfig": views.DISK_CONFIG,
            "security_groups": [{"name": g["name"]} for g in server.get("security_groups", [])]
            or [{"name": "default"}]}
    if req.conf.api.enable_instance_password:
        body["adminPass"] = server.get("adminPass") or "".join(
            secrets.choice(_PASSWORD_CHARS) for _ in range(_PASSWORD_LENGTH))
    location = body["links"][0]["href"]

    @flask.after_this_request
    def _location(response):
        response.headers["Location"] = location
        return response

    return {"server": body}, 202


# --- list -------------------------------------------------------------------------------

def _flag(req, key):
    """A query flag: present with an empty or true-ish value means True."""
    if key not in req.query:
        return False
    value = req.last(key)
    return value == "" or strutils.bool_from_string(value, default=True)


def _list_filters(req, all_tenants_rule, allow_all) -> dict:
    ctx = req.context
    filters = {"project_id": ctx.project_id, "deleted": False}
    if _flag(req, "all_tenants"):
        authorize(ctx, all_tenants_rule)
        filters["project_id"] = req.last("project_id") or req.last("tenant_id")
    if allow_all:
        if req.last("host"):
            filters["host"] = req.last("host")
        if "deleted" in req.query:
            filters["deleted"] = strutils.bool_from_string(req.last("deleted"))
    return filters


# The 2.26 tag filters: query key -> keyword of objects.tag.filter_clauses.
_TAG_FILTERS = {"tags": "tags", "tags-any": "tags_any", "not-tags": "not_tags",
                "not-tags-any": "not_tags_any"}


def _tag_filters(req) -> dict:
    """Each tag filter's comma-separated tags (its last value), from 2.26 on."""
    if not req.is_at_least(mv.V2_26_TAGS):
        return {}
    found = {}
    for key, keyword in _TAG_FILTERS.items():
        tags = [tag for tag in (req.last(key) or "").split(",") if tag]
        if tags:
            found[keyword] = tags
    return found


def _status_filter(req, filters):
    """(statuses wanted or None, empty-result flag) for the ``status`` filter."""
    statuses = [s.upper() for s in req.query.get("status", []) if s]
    if not statuses:
        return None, False
    wanted = set()
    for status in statuses:
        wanted |= set(views.vm_states_for(status) or [])
    if not wanted:
        if req.is_at_least(mv.V2_38_STATUS_FILTER_400):
            raise errors.APIError(400, "Invalid status value", errors.QUERY_INVALID)
        return None, True
    filters["vm_state"] = sorted(wanted)
    if vm_states.DELETED in wanted:
        filters["deleted"] = None
    return set(statuses), False


def _limit(req):
    max_limit = req.conf.api.max_limit
    if "limit" not in req.query:
        return max_limit
    return min(validation.bounded_int(req.last("limit"), "limit", code=errors.QUERY_INVALID),
               max_limit)


def _filters_by_address(req) -> bool:
    """Whether the list is filtered by a fixed address (``ip``; ``ip6`` from 2.5 or admin).

    volumesvc servers have no addresses, so such a filter matches none: the
    list is empty, as Nova's would be for servers without a port.
    """
    if req.last("ip") is not None:
        return True
    return req.last("ip6") is not None and (
        req.is_at_least(mv.V2_5_IP6_FILTER) or _allowed(req, policies.ALLOW_ALL_FILTERS))


def _list(req, all_tenants_rule):
    allow_all = _allowed(req, policies.ALLOW_ALL_FILTERS)
    filters = _list_filters(req, all_tenants_rule, allow_all)
    statuses, empty = _status_filter(req, filters)
    columns, window = server_filters.from_request(req, allow_all)
    if empty or columns is server_filters.NOTHING or _filters_by_address(req):
        return [], 0
    if window and not (allow_all and "deleted" in req.query):
        # As Nova: a change window lists the servers deleted within it too.
        filters["deleted"] = None
    limit = _limit(req)
    marker = req.last("marker")
    try:
        instances = instance_obj.list_instances(req.deps.db, req.context, limit=limit,
                                                marker=marker, tag_filters=_tag_filters(req),
                                                filters=columns, **filters)
    except exception.MarkerNotFound as exc:
        raise errors.APIError(400, f"marker [{marker}] not found",
                              errors.QUERY_INVALID) from exc
    except exception.FilterPatternTooComplex as exc:
        raise errors.APIError(400, exc.format_message(), errors.QUERY_INVALID) from exc
    except db_exc.DBError as exc:
        if not columns.regex and columns.zone is None:
            raise
        # A pattern Python compiles but the database's regular expressions refuse.
        raise errors.APIError(400, "A regular expression of the filters is not valid "
                              "for the database.", errors.QUERY_INVALID) from exc
    if statuses:
        instances = [i for i in instances
                     if views.status_of(i.vm_state, i.task_state) in statuses]
    return instances, limit


def _next_link(req, path, instances, limit):
    if not instances or len(instances) < limit:
        return None
    params = {key: values for key, values in req.query.items() if key != "marker"}
    params["marker"] = [instances[-1].uuid]
    return [{"rel": "next", "href": views.collection_link(req, path, params)}]


def _list_body(req, path, instances, limit, items):
    body = {"servers": items}
    links = _next_link(req, path, instances, limit)
    if links:
        body["servers_links"] = links
    return body


@validation.query_schema(schema.list_servers_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@validation.response_body_schema(schema.list_servers_response_v2_1)
def list_servers(req):
    """GET /servers → 200 ``{"servers": [{id, name, links}]}`` (+ servers_links)."""
    authorize(req.context, policies.INDEX)
    instances, limit = _list(req, policies.INDEX_ALL_TENANTS)
    return _list_body(req, "servers", instances, limit,
                      [views.summary(req, i) for i in instances]), 200


class _HostStatus:
    """host_status per host, looked up once per request (2.16, admin by policy)."""

    def __init__(self, req):
        self.req = req
        self.cache = {}

    def __call__(self, host):
        if not host:
            return ""
        if host not in self.cache:
            self.cache[host] = self._lookup(host)
        return self.cache[host]

    def _lookup(self, host):
        return compute_host.get(self.req.conf, self.req.deps.db, self.req.context,
                                host).host_status


def details(req, instances, *, show):
    deps, ctx = req.deps, req.context
    extended = _allowed(req, policies.EXTENDED_ATTRIBUTES)
    host_status = (_HostStatus(req) if req.is_at_least(mv.V2_16_HOST_STATUS)
                   and _allowed(req, policies.SHOW_HOST_STATUS) else None)
    faults = instance_fault.latest_for_instances(deps.db, ctx, [i.uuid for i in instances])
    zones = _zones_of_hosts(req) if any(i.host for i in instances) else {}
    return [views.detail(
        req, instance,
        bdms=bdm_obj.list_by_instance(deps.db, ctx, instance.uuid,
                                      read_deleted="yes" if instance.deleted else "no"),
        fault=faults.get(instance.uuid), show=show, extended=extended,
        host_status=host_status(instance.host) if host_status else None,
        zone=zones.get(instance.host))
        for instance in instances]


def _zones_of_hosts(req) -> dict:
    """host → the availability zone its compute reports (one query per request)."""
    return {host.host: host.availability_zone
            for host in compute_host.list_hosts(req.conf, req.deps.db, req.context)}


@validation.query_schema(schema.list_servers_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response_windows(schema.list_servers_detail_response, "list")
def list_servers_detail(req):
    """GET /servers/detail → 200 with full servers (fields per version, contract §5)."""
    authorize(req.context, policies.DETAIL)
    instances, limit = _list(req, policies.DETAIL_ALL_TENANTS)
    return _list_body(req, "servers/detail", instances, limit,
                      details(req, instances, show=False)), 200


# --- show / delete ------------------------------------------------------------------------

@validation.query_schema(schema.show_server_query_v2_1)
@_response_windows(schema.show_server_response, "show")
def show_server(req, server_id):
    """GET /servers/{id} → 200 (404 unknown or another project's)."""
    authorize(req.context, policies.SHOW)
    instance = get_instance(req, server_id)
    return {"server": details(req, [instance], show=True)[0]}, 200


# --- update --------------------------------------------------------------------------------

def _pinned_zone(req, instance, zone):
    """The zone a 2.104 ``pinned_availability_zone`` leaves: None unpins.

    A name re-pins the server, and only to the zone of the host it is on
    (anything else would need a move volumesvc does not do): 400 otherwise.
    """
    if zone is None:
        return None
    current = None
    if instance.host:
        host = compute_host.get(req.conf, req.deps.db, req.context, instance.host)
        current = host.availability_zone if host.registered else None
    if zone != current:
        raise errors.APIError(
            400, f"Server {instance.uuid} can only be pinned to the availability zone it is "
            f"in ({current or 'none: it has no host'}), not {zone}.", errors.BAD_REQUEST)
    return zone


def update_values(req, instance, server) -> dict:
    values = {}
    if "name" in server:
        values["display_name"] = server["name"]
    if "description" in server:
        values["display_description"] = server["description"]
    if "hostname" in server:
        values["hostname"] = server["hostname"]
    if "accessIPv4" in server:
        values["access_ip_v4"] = server["accessIPv4"]
    if "accessIPv6" in server:
        values["access_ip_v6"] = _canonical_ipv6(server["accessIPv6"])
    if "pinned_availability_zone" in server:
        values["availability_zone"] = _pinned_zone(req, instance,
                                                   server["pinned_availability_zone"])
    return values


@validation.windows(validation.schema, schema.UPDATE_WINDOWS)
@validation.windows(validation.response_body_schema,
                    views.update_windows(schema.show_server_response))
def update_server(req, server_id):
    """PUT /servers/{id} → 200 with the server (the full show body from 2.75).

    Name, access IPs; ``description`` from 2.19, ``hostname`` from 2.90
    (a fully qualified name from 2.94), ``pinned_availability_zone`` from
    2.104. No lock or state check, as in Nova.
    """
    instance = get_instance(req, server_id)
    authorize(req.context, policies.UPDATE, {"project_id": instance.project_id})
    values = update_values(req, instance, req.body["server"])
    if values:
        instance = instance_obj.save(req.deps.db, req.context, instance.uuid, values)
    body = details(req, [instance], show=True)[0]
    return {"server": views.update_body(req, body)}, 200


# A build moves scheduling -> block_device_mapping -> spawning on its own; a
# DELETE that read one of them must not lose to the next step (tempest's
# delete-while-building saw 409 "Expected: ['scheduling']. Actual:
# block_device_mapping"). Any other task in flight still wins with a 409.
_BUILD_STEPS = (None, task_states.SCHEDULING, task_states.BLOCK_DEVICE_MAPPING,
                task_states.SPAWNING)


def _mark_deleting(req, instance):
    """Compare-and-swap the task state to DELETING, following a build's own steps."""
    ctx = req.context
    for _attempt in range(len(_BUILD_STEPS)):
        try:
            instance_obj.save(req.deps.db, ctx, instance.uuid,
                              {"task_state": task_states.DELETING},
                              expected_task_state=instance.task_state)
            return
        except exception.UnexpectedTaskStateError:
            if instance.task_state not in _BUILD_STEPS:
                raise
            instance = get_instance(req, instance.uuid)
            if instance.task_state not in _BUILD_STEPS:
                raise
    raise exception.UnexpectedTaskStateError(
        instance_uuid=instance.uuid, expected=[task_states.DELETING],
        actual=instance.task_state)


@validation.response_body_schema(schema.delete_server_response_v2_1)
def delete_server(req, server_id):
    """DELETE /servers/{id} → 204; 409 when locked (non-admin) or racing another task."""
    authorize(req.context, policies.DELETE)
    ctx = req.context
    instance = get_instance(req, server_id)
    states.check_instance_lock(ctx, instance)
    _mark_deleting(req, instance)
    instance_action.action_start(req.deps.db, ctx, instance.uuid, "delete", ctx.request_id,
                                 ctx.user_id, ctx.project_id)
    req.deps.conductor.delete_instance(ctx, instance_uuid=instance.uuid)
    return None, 204
