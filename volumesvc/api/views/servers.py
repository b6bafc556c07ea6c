"""The server representation per microversion (doc/source/contributor/contract.rst §5).

Handlers collect the rows (instance, its BDMs, its latest fault, the host's
compute service) and call :func:`detail` or :func:`summary`; this module only
shapes them. Which key appears at which version, and its response schema,
is decided in one place: the :data:`SERVER` table (``api/representation.py``).
"""

import hashlib

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr
from volumesvc.api.request import base_url
from volumesvc.api.schemas.servers import LINKS
from volumesvc.api.validation import object_
from volumesvc.states import task_states as ts
from volumesvc.states import vm_states as vm

# (vm_state → default status, {task_state: status}) as Nova's common._STATE_MAP.
_REBOOT = {ts.REBOOTING: "REBOOT", ts.REBOOT_PENDING: "REBOOT", ts.REBOOT_STARTED: "REBOOT",
           ts.REBOOTING_HARD: "HARD_REBOOT", ts.REBOOT_PENDING_HARD: "HARD_REBOOT",
           ts.REBOOT_STARTED_HARD: "HARD_REBOOT"}
_REBUILD = {ts.REBUILDING: "REBUILD", ts.REBUILD_BLOCK_DEVICE_MAPPING: "REBUILD",
            ts.REBUILD_SPAWNING: "REBUILD"}
_RESIZE = {ts.RESIZE_PREP: "RESIZE", ts.RESIZE_MIGRATING: "RESIZE",
           ts.RESIZE_MIGRATED: "RESIZE", ts.RESIZE_FINISH: "RESIZE"}
STATE_MAP = {
    vm.ACTIVE: ("ACTIVE", {**_REBOOT, **_REBUILD, **_RESIZE, ts.MIGRATING: "MIGRATING",
                           ts.UPDATING_PASSWORD: "PASSWORD"}),
    vm.BUILDING: ("BUILD", {}),
    vm.STOPPED: ("SHUTOFF", {**_RESIZE, **_REBUILD}),
    vm.RESIZED: ("VERIFY_RESIZE", {ts.RESIZE_REVERTING: "REVERT_RESIZE"}),
    vm.PAUSED: ("PAUSED", {}),
    vm.SUSPENDED: ("SUSPENDED", {}),
    vm.RESCUED: ("RESCUE", {}),
    vm.ERROR: ("ERROR", dict(_REBUILD)),
    vm.DELETED: ("DELETED", {}),
    vm.SOFT_DELETED: ("SOFT_DELETED", {}),
    vm.SHELVED: ("SHELVED", {}),
    vm.SHELVED_OFFLOADED: ("SHELVED_OFFLOADED", {}),
}
_PROGRESS_STATUSES = ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING")
_FAULT_STATUSES = ("ERROR", "DELETED")
DISK_CONFIG = "MANUAL"


def status_of(vm_state, task_state) -> str:
    default, by_task = STATE_MAP.get(vm_state, ("UNKNOWN", {}))
    return by_task.get(task_state, default)


def vm_states_for(status: str):
    """vm_states that can show ``status`` (for the list filter), or None if unknown."""
    states = [vm for vm, (default, by_task) in STATE_MAP.items()
              if status == default or status in by_task.values()]
    return states or None


def _isotime(value):
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def _usage_time(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def host_id(project_id, host) -> str:
    if not host:
        return ""
    return hashlib.sha224(f"{project_id}{host}".encode()).hexdigest()


def _prefixes(req):
    base = base_url(req.conf)
    project = f"/{req.project_id}" if req.project_id else ""
    return f"{base}/v2.1{project}", f"{base}{project}"


def links(req, uuid) -> list:
    versioned, bookmark = _prefixes(req)
    return [{"rel": "self", "href": f"{versioned}/servers/{uuid}"},
            {"rel": "bookmark", "href": f"{bookmark}/servers/{uuid}"}]


def collection_link(req, path, params) -> str:
    versioned, _ = _prefixes(req)
    from urllib.parse import urlencode

    return f"{versioned}/{path}?{urlencode(params, doseq=True)}"


def summary(req, instance) -> dict:
    return {"id": instance.uuid, "name": instance.display_name,
            "links": links(req, instance.uuid)}


def _image(req, instance):
    if not instance.image_ref:
        return ""
    _, bookmark = _prefixes(req)
    return {"id": instance.image_ref,
            "links": [{"rel": "bookmark", "href": f"{bookmark}/images/{instance.image_ref}"}]}


def _image_with_properties(instance, ctx):
    """2.98: an image-backed server's image with the properties it was booted with."""
    image = _image(ctx.req, instance)
    if image:
        image["properties"] = dict(instance.image_properties or {})
    return image


def _flavor_link(instance, ctx):
    _, bookmark = _prefixes(ctx.req)
    flavor_id = (instance.flavor or {}).get("flavorid")
    return {"id": flavor_id,
            "links": [{"rel": "bookmark", "href": f"{bookmark}/flavors/{flavor_id}"}]}


def _embedded_flavor(instance, ctx):
    flavor = instance.flavor or {}
    return {"vcpus": flavor.get("vcpus", 0), "ram": flavor.get("memory_mb", 0),
            "disk": flavor.get("root_gb", 0), "ephemeral": flavor.get("ephemeral_gb", 0),
            "swap": flavor.get("swap", 0), "original_name": flavor.get("name"),
            "extra_specs": dict(flavor.get("extra_specs") or {})}


def _fault(instance, ctx):
    fault = ctx.fault
    body = {"code": fault.code, "created": _isotime(fault.created_at),
            "message": fault.message}
    # NOTE: as Nova: details of a 500 are for admins only (they may hold a traceback).
    if fault.details and (ctx.req.context.is_admin or fault.code != 500):
        body["details"] = fault.details
    return body


# --- the table ---------------------------------------------------------------------------
_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}
_ANY: dict = {}
_STRING_MAP = {"type": "object", "additionalProperties": False,
               "patternProperties": {".*": {"type": "string"}}}
_IMAGE_PROPERTIES = {"type": "object", "additionalProperties": False,
                     "patternProperties": {"^[a-zA-Z0-9_:. ]{1,255}$": {
                         "type": "string", "maxLength": 255}}}
_EMBEDDED_FLAVOR_KEYS = {"vcpus": {"type": "integer"}, "ram": {"type": "integer"},
                         "disk": {"type": "integer"}, "ephemeral": {"type": "integer"},
                         "swap": {"type": "integer"}, "original_name": _STR,
                         "extra_specs": _STRING_MAP}


def _extended(instance, ctx) -> bool:
    """OS-EXT-SRV-ATTR keys: only when the caller passes the admin policy."""
    return ctx.extended


def _admin(name, value, first=mv.MIN_VERSION, last=None, schema=_ANY):
    return Field(name, schema, value, first=first, last=last, when=_extended)


VOLUME = Representation("volume_attached", (
    Field("id", _STR, attr("volume_id")),
    Field("delete_on_termination", {"type": "boolean"},
          lambda bdm, ctx: bool(bdm.delete_on_termination), first=mv.V2_3_EXTENDED_ATTRS),
))

SERVER = Representation("server", (
    Field("id", {"type": "string", "format": "uuid"}, attr("uuid")),
    Field("name", _STR, attr("display_name")),
    Field("status", _STR, lambda i, ctx: ctx.status),
    Field("tenant_id", _STR, attr("project_id")),
    Field("user_id", _STR, attr("user_id")),
    Field("metadata", _STRING_MAP, lambda i, ctx: dict(i.metadata or {})),
    Field("hostId", _STR, lambda i, ctx: host_id(i.project_id, i.host)),
    Field("image", {"oneOf": [{"type": "string", "maxLength": 0}, object_(
        {"id": _STR, "links": LINKS}, required=["id", "links"])]},
        lambda i, ctx: _image(ctx.req, i), last=mv.before(mv.V2_98_IMAGE_PROPERTIES)),
    Field("image", {"oneOf": [{"type": "string", "maxLength": 0}, object_(
        {"id": _STR, "links": LINKS, "properties": _IMAGE_PROPERTIES},
        required=["id", "links", "properties"])]},
        _image_with_properties, first=mv.V2_98_IMAGE_PROPERTIES),
    Field("flavor", object_({"id": _STR, "links": LINKS}, required=["id", "links"]),
          _flavor_link, last=mv.before(mv.V2_47_EMBEDDED_FLAVOR)),
    Field("flavor", object_(_EMBEDDED_FLAVOR_KEYS, required=[
        k for k in _EMBEDDED_FLAVOR_KEYS if k != "extra_specs"]), _embedded_flavor,
        first=mv.V2_47_EMBEDDED_FLAVOR),
    Field("created", _STR, lambda i, ctx: _isotime(i.created_at)),
    Field("updated", _STR, lambda i, ctx: _isotime(i.updated_at or i.created_at)),
    Field("addresses", object_({}), lambda i, ctx: {}),
    Field("accessIPv4", _STR, lambda i, ctx: i.access_ip_v4 or ""),
    Field("accessIPv6", _STR, lambda i, ctx: i.access_ip_v6 or ""),
    Field("links", LINKS, lambda i, ctx: links(ctx.req, i.uuid)),
    Field("OS-DCF:diskConfig", _STR, lambda i, ctx: DISK_CONFIG),
    # The zone of the server's host; without a host, the zone it asked for.
    Field("OS-EXT-AZ:availability_zone", _STR,
          lambda i, ctx: (ctx.zone if i.host and ctx.zone else i.availability_zone) or ""),
    Field("config_drive", _STR, lambda i, ctx: i.config_drive or ""),
    Field("key_name", _NULLABLE_STR, attr("key_name")),
    Field("OS-SRV-USG:launched_at", _NULLABLE_STR, lambda i, ctx: _usage_time(i.launched_at)),
    Field("OS-SRV-USG:terminated_at", _NULLABLE_STR,
          lambda i, ctx: _usage_time(i.terminated_at)),
    Field("OS-EXT-STS:task_state", _NULLABLE_STR, attr("task_state")),
    Field("OS-EXT-STS:vm_state", _STR, attr("vm_state")),
    Field("OS-EXT-STS:power_state", {"type": "integer"}, lambda i, ctx: i.power_state or 0),
    Field("os-extended-volumes:volumes_attached", None,
          lambda i, ctx: [bdm for bdm in ctx.bdms if bdm.volume_id], items=VOLUME),
    Field("progress", {"type": "integer"}, lambda i, ctx: i.progress or 0,
          when=lambda i, ctx: ctx.status in _PROGRESS_STATUSES),
    Field("fault", object_({"code": {"type": "integer"}, "created": _STR,
                            "message": _NULLABLE_STR, "details": _NULLABLE_STR},
                           required=["code", "created", "message"]), _fault,
          when=lambda i, ctx: ctx.fault is not None and ctx.status in _FAULT_STATUSES),
    _admin("OS-EXT-SRV-ATTR:host", attr("host")),
    _admin("OS-EXT-SRV-ATTR:instance_name", attr("instance_name")),
    _admin("OS-EXT-SRV-ATTR:hypervisor_hostname", attr("node")),
    _admin("OS-EXT-SRV-ATTR:reservation_id", attr("reservation_id"), mv.V2_3_EXTENDED_ATTRS),
    _admin("OS-EXT-SRV-ATTR:launch_index", attr("launch_index"), mv.V2_3_EXTENDED_ATTRS),
    # Admin-only until 2.89; from 2.90 everyone sees it (the row further down),
    # admins still at this position.
    _admin("OS-EXT-SRV-ATTR:hostname", attr("hostname"), mv.V2_3_EXTENDED_ATTRS,
           mv.before(mv.V2_90_HOSTNAME)),
    _admin("OS-EXT-SRV-ATTR:hostname", attr("hostname"), mv.V2_90_HOSTNAME, schema=_NULLABLE_STR),
    _admin("OS-EXT-SRV-ATTR:kernel_id", lambda i, ctx: "", mv.V2_3_EXTENDED_ATTRS),
    _admin("OS-EXT-SRV-ATTR:ramdisk_id", lambda i, ctx: "", mv.V2_3_EXTENDED_ATTRS),
    _admin("OS-EXT-SRV-ATTR:root_device_name", attr("root_device_name"), mv.V2_3_EXTENDED_ATTRS),
    _admin("OS-EXT-SRV-ATTR:user_data", attr("user_data"), mv.V2_3_EXTENDED_ATTRS),
    Field("locked", {"type": "boolean"}, lambda i, ctx: bool(i.locked),
          first=mv.V2_9_LOCKED),
    Field("host_status", {"type": "string", "enum": ["UP", "DOWN", "MAINTENANCE", "UNKNOWN", ""]},
          lambda i, ctx: ctx.host_status, first=mv.V2_16_HOST_STATUS,
          when=lambda i, ctx: ctx.host_status is not None),
    Field("description", _NULLABLE_STR, attr("display_description"),
          first=mv.V2_19_DESCRIPTION),
    Field("tags", {"type": "array", "items": _STR}, lambda i, ctx: list(i.tags or []),
          first=mv.V2_26_TAGS),
    Field("trusted_image_certificates", {"type": ["array", "null"]}, lambda i, ctx: None,
          first=mv.V2_63_TRUSTED_CERTS),
    Field("server_groups", {"type": "array", "items": _STR}, lambda i, ctx: [],
          first=mv.V2_71_SERVER_GROUPS, views=("show",)),
    Field("locked_reason", _NULLABLE_STR, attr("locked_reason"),
          first=mv.V2_73_LOCK_REASON),
    Field("OS-EXT-SRV-ATTR:hostname", _NULLABLE_STR, attr("hostname"), first=mv.V2_90_HOSTNAME),
    # NOTE: the AZ the user asked for at boot (stored until a host is chosen).
    Field("pinned_availability_zone", _NULLABLE_STR,
          lambda i, ctx: i.availability_zone or None,
          first=mv.V2_96_PINNED_AZ),
    # Scheduler hints are not accepted at boot, so there are never any.
    Field("scheduler_hints", {"type": "object", "additionalProperties": False,
                              "patternProperties": {".*": {}}}, lambda i, ctx: {},
          first=mv.V2_100_SCHEDULER_HINTS),
))


def detail(req, instance, *, bdms, fault=None, show=False, extended=False,
           host_status=None, zone=None) -> dict:
    """The full server dict at ``req.version`` (rows: :data:`SERVER`).

    ``extended``: the caller may see OS-EXT-SRV-ATTR (admin policy);
    ``host_status``: UP/DOWN/MAINTENANCE/UNKNOWN/"" when the caller may see it,
    None to leave the key out; ``show``: GET-one (2.71 server_groups);
    ``zone``: the availability zone of the server's host.
    """
    return SERVER.render(req.version, instance, view="show" if show else "list", req=req,
                         bdms=bdms, fault=fault, extended=extended, host_status=host_status,
                         zone=zone,
                         status=status_of(instance.vm_state, instance.task_state))


# Keys Nova's PUT /servers/{id} answer leaves out below 2.75, where it
# started to answer with the whole server, as GET does ("response
# consistency"); the other keys are those of the show view.
_UPDATE_HIDDEN_BEFORE_2_75 = frozenset({
    "OS-EXT-AZ:availability_zone", "config_drive", "key_name", "OS-SRV-USG:launched_at",
    "OS-SRV-USG:terminated_at", "OS-EXT-STS:task_state", "OS-EXT-STS:vm_state",
    "OS-EXT-STS:power_state", "os-extended-volumes:volumes_attached", "host_status",
    "server_groups"})


def _hidden_in_update(name, version) -> bool:
    return version < mv.V2_75_STRICT_QUERY and (
        name in _UPDATE_HIDDEN_BEFORE_2_75 or name.startswith("OS-EXT-SRV-ATTR:"))


def update_body(req, body: dict) -> dict:
    """The show body of a server cut to what PUT /servers/{id} answers at ``req.version``."""
    return {key: value for key, value in body.items()
            if not _hidden_in_update(key, req.version)}


def _cut_show(hidden, extra_versions):
    """``[(version, properties, required)]`` of the show rows without ``hidden`` keys."""
    versions = sorted(set(SERVER.boundaries("show")) | set(extra_versions))
    cut = []
    for version in versions:
        item = SERVER.schema(version, "show")
        properties = {k: v for k, v in item["properties"].items() if not hidden(k, version)}
        required = [k for k in item.get("required", []) if k in properties]
        cut.append((version, properties, required))
    return cut


def update_windows(envelope) -> list:
    """``[(version, response schema)]`` of PUT /servers/{id} (the show rows, cut below 2.75)."""
    return [(version, envelope(object_(properties, required=required), version))
            for version, properties, required in _cut_show(_hidden_in_update,
                                                           {mv.V2_75_STRICT_QUERY})]


# The rebuild action answers the show body cut as PUT's below 2.75, except
# that ``key_name`` is there from 2.54; from 2.57 it adds ``user_data``, and
# ``adminPass`` when [api] enable_instance_password is on (as Nova).
def _hidden_in_rebuild(name, version) -> bool:
    if name == "key_name":
        return version < mv.V2_54_REBUILD_KEY_NAME
    return _hidden_in_update(name, version)


def rebuild_body(req, body: dict, *, user_data, admin_password) -> dict:
    """The show body of a rebuilt server as the rebuild action answers at ``req.version``."""
    out = {key: value for key, value in body.items()
           if not _hidden_in_rebuild(key, req.version)}
    if admin_password is not None:
        out["adminPass"] = admin_password
    if req.version >= mv.V2_57_REBUILD_USER_DATA:
        out["user_data"] = user_data
    return out


def rebuild_windows() -> list:
    """``[(version, server object schema)]`` of the rebuild answer, from 2.1."""
    windows = []
    for version, properties, required in _cut_show(_hidden_in_rebuild, {
            mv.V2_54_REBUILD_KEY_NAME, mv.V2_57_REBUILD_USER_DATA, mv.V2_75_STRICT_QUERY}):
        properties["adminPass"] = {"type": "string"}
        if version >= mv.V2_57_REBUILD_USER_DATA:
            properties["user_data"] = {"type": ["string", "null"]}
            required.append("user_data")
        windows.append((version, object_(properties, required=required)))
    return windows
