"""Compute API microversions: the one list, negotiation, and version dispatch.

``VERSIONS`` is the single source of truth. Every other place (the root
document, ``doc/api-version-history.rst``, schemas, handlers) derives from it
or is checked against it by a unit test. Handlers and schemas refer to the
named constants (``V2_53_SERVICE_UUIDS``), never to string literals.

Adding a version: append one entry at the end, add a section to
``doc/api-version-history.rst``, use the constant where behaviour changes,
and add a gabbi journey pinned to the new version.
"""

import collections
import re

import microversion_parse

SERVICE_TYPE = "compute"
NEW_HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"

Version = microversion_parse.Version

# (version, constant name, one-line summary); strictly increasing minor
# numbers with no holes, because Nova accepts every version in range.
VERSIONS = (
    ("2.1", "V2_1_BASE", "Initial v2.1 API."),
    ("2.2", "V2_2_KEYPAIR_TYPE", "Keypair type; 409 instead of 400 for some conflicts."),
    ("2.3", "V2_3_EXTENDED_ATTRS", "More admin server attributes; delete_on_termination "
                                   "in volumes_attached."),
    ("2.4", "V2_4_FIXED_IP_RESERVED", "Reserved status of fixed IPs."),
    ("2.5", "V2_5_IP6_FILTER", "Non-admins may filter servers by ip6."),
    ("2.6", "V2_6_REMOTE_CONSOLES", "Consolidated remote console API."),
    ("2.7", "V2_7_FLAVOR_ACCESS_PUBLIC", "Flavor access rejects public flavors with 409."),
    ("2.8", "V2_8_MKS_CONSOLE", "MKS remote console protocol."),
    ("2.9", "V2_9_LOCKED", "locked attribute in server details."),
    ("2.10", "V2_10_KEYPAIR_USER", "Admins manage keypairs of other users."),
    ("2.11", "V2_11_FORCED_DOWN", "forced_down in os-services; force-down action."),
    ("2.12", "V2_12_VIF_NET_ID", "net_id in virtual interfaces."),
    ("2.13", "V2_13_SERVER_GROUP_OWNER", "project_id and user_id in server groups."),
    ("2.14", "V2_14_EVACUATE_SHARED", "Evacuate drops onSharedStorage."),
    ("2.15", "V2_15_SOFT_AFFINITY", "soft-affinity and soft-anti-affinity server groups."),
    ("2.16", "V2_16_HOST_STATUS", "host_status in server details."),
    ("2.17", "V2_17_CRASH_DUMP", "trigger_crash_dump server action."),
    ("2.18", "V2_18_OPTIONAL_PROJECT_ID", "project_id in URLs becomes optional."),
    ("2.19", "V2_19_DESCRIPTION", "Server description."),
    ("2.20", "V2_20_SHELVED_VOLUMES", "Volume attach/detach on shelved and shelved_offloaded "
                                      "servers."),
    ("2.21", "V2_21_DELETED_ACTIONS", "Instance actions of deleted servers."),
    ("2.22", "V2_22_FORCE_COMPLETE", "Force-complete a live migration."),
    ("2.23", "V2_23_MIGRATION_TYPE", "id and migration_type in migrations."),
    ("2.24", "V2_24_ABORT_MIGRATION", "Abort a live migration."),
    ("2.25", "V2_25_BLOCK_MIGRATION_AUTO", "block_migration auto; disk_over_commit removed."),
    ("2.26", "V2_26_TAGS", "Server tags."),
    ("2.27", "V2_27_NEW_HEADER", "OpenStack-API-Version header accepted."),
    ("2.28", "V2_28_CPU_INFO_OBJECT", "Hypervisor cpu_info as a JSON object."),
    ("2.29", "V2_29_EVACUATE_FORCE", "force flag on evacuate."),
    ("2.30", "V2_30_LIVE_MIGRATE_FORCE", "force flag on live migration."),
    ("2.31", "V2_31_CONSOLE_TOKENS", "Console auth tokens for every console type."),
    ("2.32", "V2_32_BOOT_DEVICE_TAGS", "Device tags on networks and block devices at boot."),
    ("2.33", "V2_33_HYPERVISOR_PAGING", "Hypervisor list pagination."),
    ("2.34", "V2_34_ASYNC_LIVE_CHECKS", "Live-migration pre-checks run asynchronously."),
    ("2.35", "V2_35_KEYPAIR_PAGING", "Keypair list pagination."),
    ("2.36", "V2_36_NO_PROXY_APIS", "Image, network and volume proxy APIs deprecated."),
    ("2.37", "V2_37_AUTO_NETWORKS", "networks auto/none required at boot."),
    ("2.38", "V2_38_STATUS_FILTER_400", "Invalid status filter gives 400."),
    ("2.39", "V2_39_NO_IMAGE_METADATA_LIMIT", "maxImageMeta removed from limits."),
    ("2.40", "V2_40_USAGE_PAGING", "Simple tenant usage pagination."),
    ("2.41", "V2_41_AGGREGATE_UUID", "Aggregate uuid."),
    ("2.42", "V2_42_BOOT_TAGS_RESTORED", "Device tags at boot restored after 2.33-2.36."),
    ("2.43", "V2_43_NO_OS_HOSTS", "os-hosts deprecated."),
    ("2.44", "V2_44_NO_NETWORK_ACTIONS", "Network proxy actions deprecated."),
    ("2.45", "V2_45_IMAGE_ID_BODY", "createImage/createBackup return image_id in the body."),
    ("2.46", "V2_46_REQUEST_ID", "X-OpenStack-Request-ID returned (always done here)."),
    ("2.47", "V2_47_EMBEDDED_FLAVOR", "Server flavor shown as embedded details."),
    ("2.48", "V2_48_DIAGNOSTICS", "Standardised server diagnostics."),
    ("2.49", "V2_49_ATTACH_TAGS", "Device tag on volume and interface attach."),
    ("2.50", "V2_50_GROUP_QUOTAS", "Server group quotas in quota classes."),
    ("2.51", "V2_51_VOLUME_EXTENDED", "volume-extended external event; action event host."),
    ("2.52", "V2_52_BOOT_TAGS", "Server tags at boot."),
    ("2.53", "V2_53_SERVICE_UUIDS", "os-services and hypervisors identified by uuid."),
    ("2.54", "V2_54_REBUILD_KEY_NAME", "key_name on rebuild."),
    ("2.55", "V2_55_FLAVOR_DESCRIPTION", "Flavor description."),
    ("2.56", "V2_56_MIGRATE_HOST", "Target host on cold migration."),
    ("2.57", "V2_57_REBUILD_USER_DATA", "user_data on rebuild; personality removed."),
    ("2.58", "V2_58_ACTION_PAGING", "Instance action pagination and changes-since."),
    ("2.59", "V2_59_MIGRATION_PAGING", "Migration pagination and changes-since."),
    ("2.60", "V2_60_MULTIATTACH", "Multiattach volumes."),
    ("2.61", "V2_61_FLAVOR_EXTRA_SPECS", "Flavor extra_specs in flavor responses."),
    ("2.62", "V2_62_ACTION_EVENT_HOST", "host and hostId in instance action events."),
    ("2.63", "V2_63_TRUSTED_CERTS", "Trusted image certificates."),
    ("2.64", "V2_64_GROUP_POLICY", "Server group policy and rules."),
    ("2.65", "V2_65_ABORT_QUEUED", "Abort queued or preparing live migrations."),
    ("2.66", "V2_66_CHANGES_BEFORE", "changes-before filter."),
    ("2.67", "V2_67_BDM_VOLUME_TYPE", "volume_type in block_device_mapping_v2."),
    ("2.68", "V2_68_NO_FORCE", "force removed from evacuate and live migration."),
    ("2.69", "V2_69_DOWN_CELLS", "Partial results for down cells."),
    ("2.70", "V2_70_ATTACHMENT_TAGS", "tag in volume attachments and interfaces."),
    ("2.71", "V2_71_SERVER_GROUPS", "server_groups in server show."),
    ("2.72", "V2_72_PORT_RESOURCES", "Ports with resource requests at boot."),
    ("2.73", "V2_73_LOCK_REASON", "locked_reason."),
    ("2.74", "V2_74_BOOT_HOST", "host and hypervisor_hostname at boot."),
    ("2.75", "V2_75_STRICT_QUERY", "Unknown query parameters give 400; response "
                                   "consistency fixes."),
    ("2.76", "V2_76_POWER_UPDATE", "power-update external event."),
    ("2.77", "V2_77_UNSHELVE_AZ", "availability_zone on unshelve."),
    ("2.78", "V2_78_TOPOLOGY", "Server NUMA topology."),
    ("2.79", "V2_79_ATTACH_DELETE_ON_TERMINATION", "delete_on_termination on volume attach."),
    ("2.80", "V2_80_MIGRATION_OWNER_FILTER", "user_id/project_id migration filters."),
    ("2.81", "V2_81_IMAGE_PRECACHE", "Image precache on aggregates."),
    ("2.82", "V2_82_ACCELERATOR_EVENT", "accelerator-request-bound external event."),
    ("2.83", "V2_83_USER_FILTERS", "More server list filters for non-admins."),
    ("2.84", "V2_84_EVENT_DETAILS", "details in instance action events."),
    ("2.85", "V2_85_UPDATE_ATTACHMENT", "Update delete_on_termination of a volume attachment."),
    ("2.86", "V2_86_EXTRA_SPEC_VALIDATION", "Flavor extra spec validation."),
    ("2.87", "V2_87_VOLUME_RESCUE", "Rescue volume-backed servers."),
    ("2.88", "V2_88_NO_HYPERVISOR_STATS", "Hypervisor statistics removed."),
    ("2.89", "V2_89_ATTACHMENT_IDS", "attachment_id and bdm_uuid in volume attachments."),
    ("2.90", "V2_90_HOSTNAME", "Configurable hostname."),
    ("2.91", "V2_91_UNSHELVE_HOST", "Unshelve to a host; null availability zone."),
    ("2.92", "V2_92_KEYPAIR_IMPORT_ONLY", "Keypairs must be imported."),
    ("2.93", "V2_93_VOLUME_REBUILD", "Rebuild volume-backed servers; volume-reimaged event."),
    ("2.94", "V2_94_FQDN_HOSTNAME", "FQDN hostnames."),
    ("2.95", "V2_95_EVACUATE_STOPPED", "Evacuate to a stopped server."),
    ("2.96", "V2_96_PINNED_AZ", "pinned_availability_zone in server details."),
    ("2.97", "V2_97_SHARES", "Manila shares attached to servers."),
    ("2.98", "V2_98_IMAGE_PROPERTIES", "image properties in server details."),
    ("2.99", "V2_99_SPICE_DIRECT", "spice-direct console."),
    ("2.100", "V2_100_SCHEDULER_HINTS", "scheduler_hints in server details."),
    ("2.101", "V2_101_ASYNC_ATTACH", "Volume attach answers 202 with no body (conductor cast)."),
    ("2.102", "V2_102_STRICT_QUERY_ALL", "Unknown query parameters give 400 on every GET."),
    ("2.103", "V2_103_NOVA", "Nova 2.103: no change to the resources volumesvc serves."),
    ("2.104", "V2_104_NOVA", "Nova 2.104: no change to the resources volumesvc serves."),
    ("2.105", "V2_105_EXTEND_COMPLETION", "volume-extended event with completion semantics "
                                          "(volumesvc)."),
)

_VALID = re.compile(r"^[1-9]\d*\.(0|[1-9]\d*)$")


def parse(text: str) -> Version:
    """Turn ``2.60`` into a comparable Version; ValueError on a bad format."""
    if not _VALID.match(text):
        raise ValueError(text)
    return microversion_parse.parse_version_string(text)


_BY_NAME = collections.OrderedDict((name, parse(v)) for v, name, _ in VERSIONS)
globals().update(_BY_NAME)

MIN_VERSION = parse(VERSIONS[0][0])
MAX_VERSION = parse(VERSIONS[-1][0])
# Names for static checkers; the values come from the loop above.
V2_1_BASE: Version = _BY_NAME["V2_1_BASE"]
V2_11_FORCED_DOWN: Version = _BY_NAME["V2_11_FORCED_DOWN"]
V2_53_SERVICE_UUIDS: Version = _BY_NAME["V2_53_SERVICE_UUIDS"]
V2_75_STRICT_QUERY: Version = _BY_NAME["V2_75_STRICT_QUERY"]
V2_102_STRICT_QUERY_ALL: Version = _BY_NAME["V2_102_STRICT_QUERY_ALL"]


def before(version: Version) -> Version:
    """The version just below ``version``: the end of the window it closes."""
    return parse(f"{version.major}.{version.minor - 1}")


class InvalidVersion(ValueError):
    """The header is not ``X.Y`` (or ``latest``): 400, no version headers."""


class UnsupportedVersion(ValueError):
    """Well formed but outside [MIN, MAX]: 406, the requested value is echoed."""

    def __init__(self, version: Version):
        super().__init__(str(version))
        self.version = version


def negotiate(headers) -> Version:
    """Return the version a request asks for, per api-contract §1.2.

    The new header wins when it names ``compute`` (its last compute pair
    counts); otherwise the last comma value of the legacy header; otherwise
    2.1. ``latest`` (lower case only) means MAX_VERSION.
    """
    text = microversion_parse.get_version(
        headers, SERVICE_TYPE, legacy_headers=[LEGACY_HEADER])
    if text is None:
        return MIN_VERSION
    if text == "latest":
        return MAX_VERSION
    try:
        version = parse(text)
    except ValueError as exc:
        raise InvalidVersion(text) from exc
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise UnsupportedVersion(version)
    return version


def response_headers(version: Version):
    """The headers echoed on every response below /v2.1 (§1.3)."""
    return [
        (NEW_HEADER, f"{SERVICE_TYPE} {version}"),
        (LEGACY_HEADER, str(version)),
        ("Vary", NEW_HEADER),
        ("Vary", LEGACY_HEADER),
    ]


# --- whole-behaviour dispatch (placement's version_handler) -----------------

# qualified name -> list of (min, max, func); a test checks windows never overlap.
VERSIONED_METHODS: dict = collections.defaultdict(list)
# qualified name -> schemas merged over all windows (see validation.merge).
_MERGED_SCHEMAS: dict = collections.defaultdict(dict)


class VersionNotAvailable(Exception):
    """No window of a versioned handler matches: 404 (route) or 405 (method)."""

    def __init__(self, status_code: int):
        super().__init__(status_code)
        self.status_code = status_code


def version_handler(min_ver: Version, max_ver: Version = None, status_code: int = 404):
    """Register one version window of a handler that changes as a whole.

    Several functions of the same qualified name form one handler; the one
    whose window holds the request's version runs. Outside every window the
    request fails with ``status_code``: 404 for a route that does not exist
    yet, 405 for a method that does not.
    """
    max_ver = max_ver or MAX_VERSION

    def decorator(func):
        from volumesvc.api import validation

        key = f"{func.__module__}.{func.__qualname__}"
        VERSIONED_METHODS[key].append((min_ver, max_ver, func))
        validation.merge(_MERGED_SCHEMAS[key], func, min_ver, max_ver)
        VERSIONED_METHODS[key].sort(key=lambda entry: entry[0])

        def dispatch(*args, **kwargs):
            from flask import g

            for low, high, candidate in VERSIONED_METHODS[key]:
                if low <= g.microversion <= high:
                    return candidate(*args, **kwargs)
            raise VersionNotAvailable(status_code)

        dispatch.__name__ = func.__name__
        dispatch.__qualname__ = func.__qualname__
        dispatch.__module__ = func.__module__
        dispatch.__doc__ = func.__doc__
        dispatch.versioned_key = key
        # The dispatcher validates with the schemas of every window.
        dispatch._schemas = _MERGED_SCHEMAS[key]
        if getattr(func, "_policy_exempt", False):
            dispatch._policy_exempt = True
        return dispatch

    return decorator


def overlapping_windows():
    """Names of versioned handlers whose windows overlap (should be empty)."""
    bad = []
    for key, windows in VERSIONED_METHODS.items():
        for (_, high, _f), (low, _h, _g) in zip(windows, windows[1:], strict=False):
            if low <= high:
                bad.append(key)
    return bad
