"""The payloads of Nova's ``instance.*`` notifications, from volumesvc's instance and BDM dicts.

Object names, versions and fields are Nova 34's (``InstancePayload`` 1.9 and
the action payloads built on it). A field volumesvc has no data for gets
what Nova itself sends for a server without it: no IP addresses (no
networking here), no shares, ``MANUAL`` disk config, empty kernel and
ramdisk ids.
"""

from volumesvc.notifications import base
from volumesvc.states import power_state

_VOLUME_ACTIONS = {"volume_attach", "volume_detach"}
_SWAP = "volume_swap"
_CREATE = "create"
_REBUILD = "rebuild"


def block_device_payload(bdm):
    """BlockDevicePayload 1.0 of one volume BDM."""
    return base.versioned("BlockDevicePayload", "1.0", {
        "device_name": bdm.get("device_name"),
        "boot_index": bdm.get("boot_index"),
        "delete_on_termination": bool(bdm.get("delete_on_termination")),
        "volume_id": bdm.get("volume_id"),
        "tag": bdm.get("tag"),
    })


def flavor_payload(flavor):
    """FlavorPayload 1.4 of the instance's copy of its flavor.

    NOTE: the copy keeps the sizes, name and extra specs only (the flavor
    itself may be gone); ``disabled``/``is_public``, which Nova's payload
    cannot leave out, are a new flavor's values, and the nullable fields the
    copy lacks are None, as Nova sends them for an instance's flavor whose
    projects are not loaded.
    """
    flavor = flavor or {}
    return base.versioned("FlavorPayload", "1.4", {
        "flavorid": flavor.get("flavorid"),
        "memory_mb": flavor.get("memory_mb"),
        "vcpus": flavor.get("vcpus"),
        "root_gb": flavor.get("root_gb"),
        "ephemeral_gb": flavor.get("ephemeral_gb"),
        "name": flavor.get("name") or "",
        "swap": int(flavor.get("swap") or 0),
        "rxtx_factor": flavor.get("rxtx_factor"),
        "vcpu_weight": flavor.get("vcpu_weight"),
        "disabled": bool(flavor.get("disabled", False)),
        "is_public": bool(flavor.get("is_public", True)),
        "extra_specs": {k: str(v) for k, v in (flavor.get("extra_specs") or {}).items()},
        "projects": None,
        "description": flavor.get("description"),
    })


def keypair_payloads(instance):
    """KeypairPayload 1.0 of the key the server was booted with (none: [])."""
    key = instance.get("key_data")
    if not instance.get("key_name") or not key:
        return []
    key_type = "x509" if key.lstrip().startswith("-----BEGIN") else "ssh"
    return [base.versioned("KeypairPayload", "1.0", {
        "user_id": instance.get("user_id"), "name": instance["key_name"],
        "fingerprint": _fingerprint(key_type, key), "public_key": key, "type": key_type})]


def _fingerprint(key_type, key):
    # Lazy: the fingerprint code is the API's (os-keypairs), the compute
    # needs it only for a create notification of a server with a key.
    from volumesvc.api.logic import keypairs

    try:
        return keypairs.fingerprint(key_type, key)
    except Exception:  # noqa: BLE001 - a key Nova could not read either: no fingerprint
        return None


def _instance_data(context, instance, bdms):
    """InstancePayload's fields (1.9) for ``instance`` as the compute holds it."""
    props = instance.get("image_properties") or {}
    state = instance.get("power_state")
    # As Nova: a periodic task's context has no user or project, and no request id then.
    has_request = bool(context.project_id and context.user_id)
    return {
        "uuid": instance["uuid"],
        "user_id": instance.get("user_id"),
        "tenant_id": instance.get("project_id"),
        "reservation_id": instance.get("reservation_id"),
        "display_name": instance.get("display_name"),
        "display_description": instance.get("display_description"),
        "host_name": instance.get("hostname"),
        "host": instance.get("host"),
        "node": instance.get("node"),
        "os_type": props.get("os_type"),
        "architecture": props.get("hw_architecture") or props.get("architecture"),
        "availability_zone": instance.get("availability_zone"),
        "flavor": flavor_payload(instance.get("flavor")),
        "image_uuid": instance.get("image_ref") or "",
        "key_name": instance.get("key_name"),
        "kernel_id": props.get("kernel_id") or "",
        "ramdisk_id": props.get("ramdisk_id") or "",
        "created_at": base.isotime(instance.get("created_at")),
        "launched_at": base.isotime(instance.get("launched_at")),
        "terminated_at": base.isotime(instance.get("terminated_at")),
        "deleted_at": base.isotime(instance.get("deleted_at")),
        "updated_at": base.isotime(instance.get("updated_at")),
        "state": instance.get("vm_state"),
        "power_state": None if state is None else power_state.STATE_MAP.get(state),
        "task_state": instance.get("task_state"),
        "progress": instance.get("progress"),
        "ip_addresses": [],
        "block_devices": [block_device_payload(b) for b in bdms or () if b.get("volume_id")],
        "metadata": {k: str(v) for k, v in (instance.get("metadata") or {}).items()},
        "locked": bool(instance.get("locked")),
        "auto_disk_config": "MANUAL",
        "request_id": context.request_id if has_request else None,
        "action_initiator_user": context.user_id,
        "action_initiator_project": context.project_id,
        "locked_reason": instance.get("locked_reason"),
        "shares": [],
    }


def action_payload(context, instance, action, *, bdms=None, exc=None, volume_id=None,
                   new_volume_id=None):
    """The payload of ``instance.<action>.*``: Nova's payload class for that action.

    ``volume_id``: the volume of an attach or detach, the old volume of a
    swap (whose new one is ``new_volume_id``).
    """
    data = _instance_data(context, instance, bdms)
    data["fault"] = None if exc is None else base.exception_payload(exc)
    if action in _VOLUME_ACTIONS:
        return base.versioned("InstanceActionVolumePayload", "1.7",
                              dict(data, volume_id=volume_id))
    if action == _SWAP:
        return base.versioned("InstanceActionVolumeSwapPayload", "1.9",
                              dict(data, old_volume_id=volume_id, new_volume_id=new_volume_id))
    if action == _CREATE:
        return base.versioned("InstanceCreatePayload", "1.13", dict(
            data, keypairs=keypair_payloads(instance), tags=list(instance.get("tags") or []),
            # volumesvc keeps no trusted image certificates (the API shows null).
            trusted_image_certificates=None, instance_name=instance.get("instance_name")))
    if action == _REBUILD:
        return base.versioned("InstanceActionRebuildPayload", "1.10",
                              dict(data, trusted_image_certificates=None))
    return base.versioned("InstanceActionPayload", "1.9", data)
