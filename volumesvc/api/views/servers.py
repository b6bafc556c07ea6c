"""The server representation per microversion (api-contract §5).

Handlers collect the rows (instance, its BDMs, its latest fault, the host's
compute service) and call :func:`detail` or :func:`summary`; this module only
shapes them, so which key appears at which version is decided in one place.
"""

import hashlib

from volumesvc.api import microversions as mv
from volumesvc.api.request import base_url

# (vm_state → default status, {task_state: status}) as Nova's common._STATE_MAP.
_REBOOT = {"rebooting": "REBOOT", "reboot_pending": "REBOOT", "reboot_started": "REBOOT",
           "rebooting_hard": "HARD_REBOOT", "reboot_pending_hard": "HARD_REBOOT",
           "reboot_started_hard": "HARD_REBOOT"}
_REBUILD = {"rebuilding": "REBUILD", "rebuild_block_device_mapping": "REBUILD",
            "rebuild_spawning": "REBUILD"}
_RESIZE = {"resize_prep": "RESIZE", "resize_migrating": "RESIZE",
           "resize_migrated": "RESIZE", "resize_finish": "RESIZE"}
STATE_MAP = {
    "active": ("ACTIVE", {**_REBOOT, **_REBUILD, **_RESIZE, "migrating": "MIGRATING",
                          "updating_password": "PASSWORD"}),
    "building": ("BUILD", {}),
    "stopped": ("SHUTOFF", {**_RESIZE, **_REBUILD}),
    "resized": ("VERIFY_RESIZE", {"resize_reverting": "REVERT_RESIZE"}),
    "paused": ("PAUSED", {}),
    "suspended": ("SUSPENDED", {}),
    "rescued": ("RESCUE", {}),
    "error": ("ERROR", dict(_REBUILD)),
    "deleted": ("DELETED", {}),
    "soft-delete": ("SOFT_DELETED", {}),
    "shelved": ("SHELVED", {}),
    "shelved_offloaded": ("SHELVED_OFFLOADED", {}),
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


def _flavor(req, instance):
    flavor = instance.flavor or {}
    if not req.is_at_least(mv.V2_47_EMBEDDED_FLAVOR):
        _, bookmark = _prefixes(req)
        flavor_id = flavor.get("flavorid")
        return {"id": flavor_id,
                "links": [{"rel": "bookmark", "href": f"{bookmark}/flavors/{flavor_id}"}]}
    return {"vcpus": flavor.get("vcpus", 0), "ram": flavor.get("memory_mb", 0),
            "disk": flavor.get("root_gb", 0), "ephemeral": flavor.get("ephemeral_gb", 0),
            "swap": flavor.get("swap", 0), "original_name": flavor.get("name"),
            "extra_specs": dict(flavor.get("extra_specs") or {})}


def _volumes(req, bdms):
    volumes = []
    for bdm in bdms:
        if not bdm.volume_id:
            continue
        item = {"id": bdm.volume_id}
        if req.is_at_least(mv.V2_3_EXTENDED_ATTRS):
            item["delete_on_termination"] = bool(bdm.delete_on_termination)
        volumes.append(item)
    return volumes


def _fault(fault, is_admin):
    body = {"code": fault.code, "created": _isotime(fault.created_at),
            "message": fault.message}
    # NOTE: as Nova: details of a 500 are for admins only (they may hold a traceback).
    if fault.details and (is_admin or fault.code != 500):
        body["details"] = fault.details
    return body


def _admin_attrs(req, instance, bdms) -> dict:
    attrs = {"OS-EXT-SRV-ATTR:host": instance.host,
             "OS-EXT-SRV-ATTR:instance_name": instance.instance_name,
             "OS-EXT-SRV-ATTR:hypervisor_hostname": instance.node}
    if req.is_at_least(mv.V2_3_EXTENDED_ATTRS):
        attrs.update({
            "OS-EXT-SRV-ATTR:reservation_id": instance.reservation_id,
            "OS-EXT-SRV-ATTR:launch_index": instance.launch_index,
            "OS-EXT-SRV-ATTR:hostname": instance.hostname,
            "OS-EXT-SRV-ATTR:kernel_id": "",
            "OS-EXT-SRV-ATTR:ramdisk_id": "",
            "OS-EXT-SRV-ATTR:root_device_name": instance.root_device_name,
            "OS-EXT-SRV-ATTR:user_data": instance.user_data,
        })
    return attrs


def detail(req, instance, *, bdms, fault=None, show=False, extended=False,
           host_status=None) -> dict:
    """The full server dict at ``req.version``.

    ``extended``: the caller may see OS-EXT-SRV-ATTR (admin policy);
    ``host_status``: UP/DOWN/MAINTENANCE/UNKNOWN/"" when the caller may see it,
    None to leave the key out; ``show``: GET-one (2.71 server_groups).
    """
    status = status_of(instance.vm_state, instance.task_state)
    server = {
        "id": instance.uuid,
        "name": instance.display_name,
        "status": status,
        "tenant_id": instance.project_id,
        "user_id": instance.user_id,
        "metadata": dict(instance.metadata or {}),
        "hostId": host_id(instance.project_id, instance.host),
        "image": _image(req, instance),
        "flavor": _flavor(req, instance),
        "created": _isotime(instance.created_at),
        "updated": _isotime(instance.updated_at or instance.created_at),
        "addresses": {},
        "accessIPv4": instance.access_ip_v4 or "",
        "accessIPv6": instance.access_ip_v6 or "",
        "links": links(req, instance.uuid),
        "OS-DCF:diskConfig": DISK_CONFIG,
        "OS-EXT-AZ:availability_zone": instance.availability_zone or "",
        "config_drive": instance.config_drive or "",
        "key_name": instance.key_name,
        "OS-SRV-USG:launched_at": _usage_time(instance.launched_at),
        "OS-SRV-USG:terminated_at": _usage_time(instance.terminated_at),
        "OS-EXT-STS:task_state": instance.task_state,
        "OS-EXT-STS:vm_state": instance.vm_state,
        "OS-EXT-STS:power_state": instance.power_state or 0,
        "os-extended-volumes:volumes_attached": _volumes(req, bdms),
    }
    if status in _PROGRESS_STATUSES:
        server["progress"] = instance.progress or 0
    if fault is not None and status in _FAULT_STATUSES:
        server["fault"] = _fault(fault, req.context.is_admin)
    if extended:
        server.update(_admin_attrs(req, instance, bdms))
    if req.is_at_least(mv.V2_9_LOCKED):
        server["locked"] = bool(instance.locked)
    if req.is_at_least(mv.V2_16_HOST_STATUS) and host_status is not None:
        server["host_status"] = host_status
    if req.is_at_least(mv.V2_19_DESCRIPTION):
        server["description"] = instance.display_description
    if req.is_at_least(mv.V2_26_TAGS):
        server["tags"] = list(instance.tags or [])
    if req.is_at_least(mv.V2_63_TRUSTED_CERTS):
        server["trusted_image_certificates"] = None
    if show and req.is_at_least(mv.V2_71_SERVER_GROUPS):
        server["server_groups"] = []
    if req.is_at_least(mv.V2_73_LOCK_REASON):
        server["locked_reason"] = instance.locked_reason
    if req.is_at_least(mv.V2_90_HOSTNAME):
        server["OS-EXT-SRV-ATTR:hostname"] = instance.hostname
    if req.is_at_least(mv.V2_96_PINNED_AZ):
        # NOTE: the AZ the user asked for at boot (stored until a host is chosen).
        server["pinned_availability_zone"] = instance.availability_zone or None
    if req.is_at_least(mv.V2_100_SCHEDULER_HINTS):
        # Scheduler hints are not accepted at boot, so there are never any.
        server["scheduler_hints"] = {}
    return server
