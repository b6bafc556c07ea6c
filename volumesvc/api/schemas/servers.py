"""Schemas of /servers: create (per version window), list/show queries and bodies.

Request windows follow Nova's ``base_create_*``: 2.19 description, 2.32 BDM
tag, 2.33-2.41 no BDM tag (bug 1658571), 2.37 networks required, 2.42 tag
back, 2.52 server tags, 2.67 BDM volume_type, 2.74 host and
hypervisor_hostname, 2.90 hostname. The server
object itself comes from the ``SERVER`` table in ``views/servers.py`` (one
row per key); this module only wraps it into the response envelopes.
"""

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.schemas.parameter_types import (
    BOOL_LIKE,
    FQDN_HOSTNAME,
    HOSTNAME,
    POSITIVE_INT,
    TAG,
    UUID,
)
from volumesvc.api.validation import multi_params, object_

# --- block_device_mapping_v2 items -------------------------------------------------
_bdm_v2_item_v2_1 = {
    # New-format keys.
    "source_type": {"type": "string", "enum": ["volume", "image", "snapshot", "blank"]},
    "uuid": {"type": "string", "minLength": 1, "maxLength": 255,
             "pattern": "^[a-zA-Z0-9._-]*$"},
    "image_id": UUID,
    "destination_type": {"type": "string", "enum": ["local", "volume"]},
    "guest_format": {"type": "string", "maxLength": 255},
    "device_type": {"type": "string", "maxLength": 255},
    "disk_bus": {"type": "string", "maxLength": 255},
    "boot_index": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$"},
    # Legacy keys Nova still accepts inside v2 items.
    "virtual_name": {"type": "string", "maxLength": 255},
    "volume_id": UUID,
    "snapshot_id": UUID,
    "volume_size": POSITIVE_INT,
    "device_name": {"type": "string", "minLength": 1, "maxLength": 255,
                    "pattern": "^[a-zA-Z0-9._/-]*$"},
    "delete_on_termination": BOOL_LIKE,
    "no_device": {},
    "connection_info": {"type": "string", "maxLength": 16777215},
}
# 2.32 (and again from 2.42): device tag.
_bdm_v2_item_v2_32 = dict(_bdm_v2_item_v2_1, tag=TAG)
# 2.67: volume_type for volumes volumesvc creates.
_bdm_v2_item_v2_67 = dict(_bdm_v2_item_v2_32, volume_type={
    "type": ["string", "null"], "minLength": 0, "maxLength": 255})

# The legacy format is refused by the handler with its own message, so its
# items are only shaped here.
_legacy_bdm_item = object_({
    "virtual_name": {"type": "string", "maxLength": 255},
    "volume_id": UUID,
    "snapshot_id": UUID,
    "volume_size": POSITIVE_INT,
    "device_name": {"type": "string", "minLength": 1, "maxLength": 255},
    "delete_on_termination": BOOL_LIKE,
    "no_device": {},
    "connection_info": {"type": "string", "maxLength": 16777215},
})


def _networks(required, tag):
    item = {"uuid": {"type": "string"}, "port": {"type": ["string", "null"]},
            "fixed_ip": {"type": "string"}}
    if tag:
        item["tag"] = TAG
    as_list = {"type": "array", "items": object_(item)}
    if not required:
        return as_list
    return {"oneOf": [dict(as_list, minItems=1),
                      {"type": "string", "enum": ["none", "auto"]}]}


def _create(*, description=False, bdm_item=None, networks_required=False,
            network_tag=False, tags=False, hostname=None, destination=False):
    server = {
        "name": parameter_types.SERVER_NAME,
        "imageRef": {"oneOf": [UUID, {"type": "string", "maxLength": 0}]},
        "flavorRef": {"type": ["string", "integer"], "minLength": 1},
        "adminPass": {"type": "string"},
        "metadata": parameter_types.METADATA,
        "networks": _networks(networks_required, network_tag),
        "availability_zone": parameter_types.NAME_255,
        "key_name": parameter_types.NAME_255,
        "user_data": {"type": "string", "format": "base64", "maxLength": 65535},
        "config_drive": BOOL_LIKE,
        "accessIPv4": {"type": "string", "format": "ipv4"},
        "accessIPv6": {"type": "string", "format": "ipv6"},
        # Accepted as Nova does; volumesvc never repartitions a disk, so
        # servers always show MANUAL.
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        "min_count": POSITIVE_INT,
        "max_count": POSITIVE_INT,
        "return_reservation_id": BOOL_LIKE,
        "security_groups": {"type": "array", "items": object_(
            {"name": {"type": "string", "minLength": 1, "maxLength": 255}})},
        "block_device_mapping": {"type": "array", "items": _legacy_bdm_item},
        "block_device_mapping_v2": {"type": "array",
                                    "items": object_(bdm_item or _bdm_v2_item_v2_1)},
    }
    if description:
        server["description"] = {"type": ["string", "null"], "maxLength": 255}
    if tags:
        server["tags"] = {"type": "array", "items": TAG, "maxItems": 50}
    if hostname:
        server["hostname"] = hostname
    if destination:
        server["host"] = parameter_types.HOST_NAME
        server["hypervisor_hostname"] = parameter_types.HOST_NAME
    required = ["name", "flavorRef"] + (["networks"] if networks_required else [])
    return object_({"server": object_(server, required=required)}, required=["server"])


create_server_v2_1 = _create()
create_server_v2_19 = _create(description=True)
create_server_v2_32 = _create(description=True, bdm_item=_bdm_v2_item_v2_32,
                              network_tag=True)
# 2.33-2.36: the tag got lost again (Nova bug 1658571).
create_server_v2_33 = _create(description=True)
create_server_v2_37 = _create(description=True, networks_required=True)
create_server_v2_42 = _create(description=True, bdm_item=_bdm_v2_item_v2_32,
                              networks_required=True, network_tag=True)
create_server_v2_52 = _create(description=True, bdm_item=_bdm_v2_item_v2_32,
                              networks_required=True, network_tag=True, tags=True)
create_server_v2_67 = _create(description=True, bdm_item=_bdm_v2_item_v2_67,
                              networks_required=True, network_tag=True, tags=True)
create_server_v2_74 = _create(description=True, bdm_item=_bdm_v2_item_v2_67,
                              networks_required=True, network_tag=True, tags=True,
                              destination=True)
create_server_v2_90 = _create(description=True, bdm_item=_bdm_v2_item_v2_67,
                              networks_required=True, network_tag=True, tags=True,
                              hostname=HOSTNAME, destination=True)
create_server_v2_94 = _create(description=True, bdm_item=_bdm_v2_item_v2_67,
                              networks_required=True, network_tag=True, tags=True,
                              hostname=FQDN_HOSTNAME, destination=True)

# (first version, schema) in order; the handler declares the windows from this.
CREATE_WINDOWS = (
    (mv.V2_1_BASE, create_server_v2_1),
    (mv.V2_19_DESCRIPTION, create_server_v2_19),
    (mv.V2_32_BOOT_DEVICE_TAGS, create_server_v2_32),
    (mv.V2_33_HYPERVISOR_PAGING, create_server_v2_33),
    (mv.V2_37_AUTO_NETWORKS, create_server_v2_37),
    (mv.V2_42_BOOT_TAGS_RESTORED, create_server_v2_42),
    (mv.V2_52_BOOT_TAGS, create_server_v2_52),
    (mv.V2_67_BDM_VOLUME_TYPE, create_server_v2_67),
    (mv.V2_74_BOOT_HOST, create_server_v2_74),
    (mv.V2_90_HOSTNAME, create_server_v2_90),
    (mv.V2_94_FQDN_HOSTNAME, create_server_v2_94),
)


# --- PUT /servers/{id} --------------------------------------------------------------
def _update(*, description=False, hostname=None, pinned_az=False):
    server = {
        "name": parameter_types.SERVER_NAME,
        "accessIPv4": {"type": "string", "format": "ipv4"},
        "accessIPv6": {"type": "string", "format": "ipv6"},
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
    }
    if description:
        server["description"] = {"type": ["string", "null"], "maxLength": 255}
    if hostname:
        server["hostname"] = hostname
    if pinned_az:
        # null unpins; a name re-pins (the handler accepts only the current zone).
        server["pinned_availability_zone"] = {"type": ["string", "null"], "minLength": 1,
                                              "maxLength": 255}
    return object_({"server": object_(server)}, required=["server"])


# (first version, schema): 2.19 description, 2.90 hostname, 2.94 FQDN
# hostname, 2.104 pinned_availability_zone.
UPDATE_WINDOWS = (
    (mv.V2_1_BASE, _update()),
    (mv.V2_19_DESCRIPTION, _update(description=True)),
    (mv.V2_90_HOSTNAME, _update(description=True, hostname=HOSTNAME)),
    (mv.V2_94_FQDN_HOSTNAME, _update(description=True, hostname=FQDN_HOSTNAME)),
    (mv.V2_104_PINNED_AZ_UPDATE, _update(description=True, hostname=FQDN_HOSTNAME,
                                         pinned_az=True)),
)

LINKS = {"type": "array", "items": object_({
    "rel": {"type": "string"}, "href": {"type": "string"},
    "type": {"type": "string"}}, required=["rel", "href"])}

create_server_response_v2_1 = {"oneOf": [
    object_({"server": object_({
        "id": UUID, "links": LINKS, "OS-DCF:diskConfig": {"type": "string"},
        "security_groups": {"type": "array", "items": object_(
            {"name": {"type": "string"}}, required=["name"])},
        "adminPass": {"type": "string"},
    }, required=["id", "links", "OS-DCF:diskConfig", "security_groups"])},
        required=["server"]),
    object_({"reservation_id": {"type": "string", "pattern": "^r-[a-z0-9]{8}$"}},
            required=["reservation_id"]),
]}

# --- GET /servers, /servers/detail query ------------------------------------------
list_servers_query_v2_1 = object_({
    "limit": multi_params(parameter_types.QUERY_NON_NEGATIVE_INT),
    "marker": multi_params({"type": "string"}),
    "name": multi_params({"type": "string"}),
    "status": multi_params({"type": "string"}),
    "host": multi_params({"type": "string"}),
    "all_tenants": multi_params({"type": "string"}),
    "deleted": multi_params({"type": "string"}),
    "project_id": multi_params({"type": "string"}),
    "tenant_id": multi_params({"type": "string"}),
    # Fixed-address filters (ip6 for non-admins from 2.5): no server has one.
    "ip": multi_params({"type": "string"}),
    "ip6": multi_params({"type": "string"}),
    # 2.26 tag filters: comma-separated tags (read from 2.26 on only).
    "tags": multi_params({"type": "string"}),
    "tags-any": multi_params({"type": "string"}),
    "not-tags": multi_params({"type": "string"}),
    "not-tags-any": multi_params({"type": "string"}),
    # Read per version and role in api/logic/server_filters.py (ignored where
    # the caller may not use them, as in Nova); listed so that the strict
    # schema of 2.75 does not refuse them.
    **{key: multi_params({"type": "string"}) for key in (
        "changes-since", "changes-before", "image", "flavor", "reservation_id", "locked",
        "availability_zone", "config_drive", "key_name", "created_at", "launched_at",
        "terminated_at", "power_state", "task_state", "vm_state", "progress", "user_id",
        "node", "hostname", "uuid")},
})
show_server_query_v2_1 = object_({})


# --- the server representation: rows in views/servers.py, envelopes here ----------------
def show_server_response(server, version=None):
    return object_({"server": server}, required=["server"])


def list_servers_detail_response(server, version=None):
    return object_({"servers": {"type": "array", "items": server},
                    "servers_links": parameter_types.LINKS}, required=["servers"])


list_servers_response_v2_1 = object_({
    "servers": {"type": "array", "items": object_(
        {"id": UUID, "name": {"type": "string"}, "links": LINKS},
        required=["id", "name", "links"])},
    "servers_links": parameter_types.LINKS}, required=["servers"])

delete_server_response_v2_1 = None
