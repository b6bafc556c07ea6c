"""The routing table: every URL the API serves, path → {method: handler}.

Paths use plain ``<name>`` placeholders, never regex converters: a handler
validates its ids so each 404/400 names what was wrong. Every path below
``/v2.1/`` is also served with a ``/{project_id}`` prefix
(``api/app.py`` adds the second rule; the project id is checked in code).
Unknown paths give a 404 fault (300 choices above /v2), a known path with
another method a 405 fault with ``Allow``.

Adding a resource: a handler module in ``handlers/``, its schemas in
``schemas/``, its policies in ``policies/`` (listed in
``policies/__init__.py``), and its lines here.
"""

import re

from volumesvc.api.handlers import (
    assisted_volume_snapshots,
    availability_zones,
    flavors,
    instance_actions,
    ips,
    keypairs,
    migrations,
    quota_sets,
    server_actions,
    server_external_events,
    server_metadata,
    server_migrations,
    server_tags,
    servers,
    services,
    versions,
    volume_attachments,
)

API_PREFIX = "/v2.1"
# The paths of the versioned API: these, and the paths below them.
VERSION_ROOTS = ("/v2", API_PREFIX)

ROUTES = {
    # Version discovery (no auth, no microversion on "/").
    "/": {"GET": versions.list_versions},
    "/v2": {"GET": versions.show_version_v2},
    "/v2/": {"GET": versions.show_version_v2},
    "/v2.1": {"GET": versions.show_version_v2_1},
    "/v2.1/": {"GET": versions.show_version_v2_1},
    # Compute services.
    "/v2.1/os-services": {"GET": services.list_services},
    "/v2.1/os-services/<service_id>": {
        "PUT": services.update_service,
        "DELETE": services.delete_service,
    },
    # Servers (boot with block_device_mapping_v2, list, show, delete).
    "/v2.1/servers": {"GET": servers.list_servers, "POST": servers.create_server},
    "/v2.1/servers/detail": {"GET": servers.list_servers_detail},
    "/v2.1/servers/<server_id>": {
        "GET": servers.show_server,
        "PUT": servers.update_server,
        "DELETE": servers.delete_server,
    },
    # Server metadata and tags (2.26).
    "/v2.1/servers/<server_id>/metadata": {
        "GET": server_metadata.list_metadata,
        "POST": server_metadata.create_metadata,
        "PUT": server_metadata.update_all_metadata,
    },
    "/v2.1/servers/<server_id>/metadata/<key>": {
        "GET": server_metadata.show_metadata_item,
        "PUT": server_metadata.update_metadata_item,
        "DELETE": server_metadata.delete_metadata_item,
    },
    "/v2.1/servers/<server_id>/tags": {
        "GET": server_tags.list_tags,
        "PUT": server_tags.replace_tags,
        "DELETE": server_tags.delete_all_tags,
    },
    "/v2.1/servers/<server_id>/tags/<tag>": {
        "GET": server_tags.check_tag,
        "PUT": server_tags.add_tag,
        "DELETE": server_tags.delete_tag,
    },
    # Server actions (reboot, createImage) and their history.
    "/v2.1/servers/<server_id>/action": {"POST": server_actions.run_server_action},
    "/v2.1/servers/<server_id>/os-instance-actions": {
        "GET": instance_actions.list_instance_actions,
    },
    "/v2.1/servers/<server_id>/os-instance-actions/<request_id>": {
        "GET": instance_actions.show_instance_action,
    },
    # In-progress live migrations of a server: list and show (2.23), abort
    # (2.24), force-complete (2.22); 404 below those versions.
    "/v2.1/servers/<server_id>/migrations": {
        "GET": server_migrations.list_server_migrations,
    },
    "/v2.1/servers/<server_id>/migrations/<migration_id>": {
        "GET": server_migrations.show_server_migration,
        "DELETE": server_migrations.delete_server_migration,
    },
    "/v2.1/servers/<server_id>/migrations/<migration_id>/action": {
        "POST": server_migrations.run_server_migration_action,
    },
    # Addresses by network (always none: volumesvc does no networking).
    "/v2.1/servers/<server_id>/ips": {"GET": ips.list_ips},
    "/v2.1/servers/<server_id>/ips/<network_label>": {"GET": ips.show_ips},
    # Volume attachments (attach, detach, update/swap; doc/source/contributor/contract.rst §3).
    "/v2.1/servers/<server_id>/os-volume_attachments": {
        "GET": volume_attachments.list_volume_attachments,
        "POST": volume_attachments.create_volume_attachment,
    },
    "/v2.1/servers/<server_id>/os-volume_attachments/<volume_id>": {
        "GET": volume_attachments.show_volume_attachment,
        "PUT": volume_attachments.update_volume_attachment,
        "DELETE": volume_attachments.delete_volume_attachment,
    },
    # External events from Cinder, Neutron, Ironic (doc/source/contributor/contract.rst §7).
    "/v2.1/os-server-external-events": {
        "POST": server_external_events.create_server_external_events,
    },
    # Assisted volume snapshots (remotefs drivers; doc/source/contributor/contract.rst §8).
    "/v2.1/os-assisted-volume-snapshots": {
        "POST": assisted_volume_snapshots.create_assisted_volume_snapshot,
    },
    "/v2.1/os-assisted-volume-snapshots/<snapshot_id>": {
        "DELETE": assisted_volume_snapshots.delete_assisted_volume_snapshot,
    },
    # The moves of every server (admin).
    "/v2.1/os-migrations": {"GET": migrations.list_migrations},
    # Flavors.
    "/v2.1/flavors": {"GET": flavors.list_flavors, "POST": flavors.create_flavor},
    "/v2.1/flavors/detail": {"GET": flavors.list_flavors_detail},
    "/v2.1/flavors/<flavor_id>/os-extra_specs": {"GET": flavors.list_flavor_extra_specs},
    "/v2.1/flavors/<flavor_id>/os-extra_specs/<key>": {"GET": flavors.show_flavor_extra_spec},
    "/v2.1/flavors/<flavor_id>": {
        "GET": flavors.show_flavor,
        "DELETE": flavors.delete_flavor,
    },
    # Key pairs (os-keypairs).
    "/v2.1/os-keypairs": {"GET": keypairs.list_keypairs, "POST": keypairs.create_keypair},
    "/v2.1/os-keypairs/<keypair_name>": {
        "GET": keypairs.show_keypair,
        "DELETE": keypairs.delete_keypair,
    },
    # Quotas and limits.
    "/v2.1/limits": {"GET": quota_sets.show_limits},
    "/v2.1/os-quota-sets/<tenant_id>": {
        "GET": quota_sets.show_quota_set,
        "PUT": quota_sets.update_quota_set,
        "DELETE": quota_sets.delete_quota_set,
    },
    "/v2.1/os-quota-sets/<tenant_id>/defaults": {"GET": quota_sets.show_quota_set_defaults},
    "/v2.1/os-quota-sets/<tenant_id>/detail": {"GET": quota_sets.show_quota_set_detail},
    # Availability zones (the zones of the compute services).
    "/v2.1/os-availability-zone": {"GET": availability_zones.list_availability_zones},
    "/v2.1/os-availability-zone/detail": {
        "GET": availability_zones.list_availability_zones_detail,
    },
}


def project_scoped(path: str):
    """The /{project_id} variant of ``path``, or None for the version docs."""
    if not path.startswith(API_PREFIX + "/") or path == API_PREFIX + "/":
        return None
    return API_PREFIX + "/<project_id>" + path[len(API_PREFIX):]


def is_api_path(path: str) -> bool:
    """``/v2``, ``/v2.1`` and the paths below them, not ``/v2foo``."""
    return any(path == root or path.startswith(root + "/") for root in VERSION_ROOTS)


_PLACEHOLDER = re.compile(r"<([^<>]+)>")


def route_template(rule: str) -> str:
    """The routing table's path of a Flask rule: ``/v2.1/servers/{server_id}``.

    The ``/{project_id}`` variant of a path is the same route: one name for
    both spellings of one URL (the request log's and the metrics' label).
    """
    scoped = API_PREFIX + "/<project_id>"
    if rule == scoped or rule.startswith(scoped + "/"):
        rule = API_PREFIX + rule[len(scoped):]
    return _PLACEHOLDER.sub(r"{\1}", rule)
