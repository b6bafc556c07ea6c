"""Compute API microversions: the one list, its constants, and negotiation.

``VERSIONS`` is the single source of truth. Every other place (the root
document, ``doc/source/reference/api-version-history.rst``, schemas,
handlers) derives from it or is checked against it by a unit test. Handlers
and schemas refer to the named module constants (``V2_53_SERVICE_UUIDS``),
never to string literals; the constants are written out so that readers and
mypy see them, and ``tests/unit/api/test_microversions.py`` checks they
match ``VERSIONS`` one to one.

This module imports neither Flask nor the validation code: dispatch of
handlers that change as a whole lives in ``volumesvc.api.versioned``.

Adding a version: follow the checklist in doc/source/contributor/microversions.rst.
"""

import re

import microversion_parse

SERVICE_TYPE = "compute"
NEW_HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"

Version = microversion_parse.Version

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
    ("2.103", "V2_103_NO_VOLUMES_BOOT", "The /os-volumes_boot alias of /servers is gone "
                                        "(404); never served here."),
    ("2.104", "V2_104_PINNED_AZ_UPDATE", "pinned_availability_zone can be changed with "
                                         "PUT /servers/{id}."),
    ("2.105", "V2_105_EXTEND_COMPLETION", "volume-extended event with completion semantics "
                                          "(volumesvc)."),
    ("2.106", "V2_106_ATTACHMENT_STATUS", "status and fault of volume attachments; failed "
                                          "attaches listed until a TTL (volumesvc)."),
    ("2.107", "V2_107_IDEMPOTENT_ATTACH", "Attaching a volume already attached to the server "
                                          "with the same device and tag answers 202 with that "
                                          "attachment (volumesvc)."),
    ("2.108", "V2_108_READ_ONLY_ATTACH", "read_only on volume attach (Cinder's attachment mode "
                                         "ro) and in volume attachments (volumesvc)."),
)

# One constant per entry above, same name and value (a unit test checks).
V2_1_BASE = Version(2, 1)
V2_2_KEYPAIR_TYPE = Version(2, 2)
V2_3_EXTENDED_ATTRS = Version(2, 3)
V2_4_FIXED_IP_RESERVED = Version(2, 4)
V2_5_IP6_FILTER = Version(2, 5)
V2_6_REMOTE_CONSOLES = Version(2, 6)
V2_7_FLAVOR_ACCESS_PUBLIC = Version(2, 7)
V2_8_MKS_CONSOLE = Version(2, 8)
V2_9_LOCKED = Version(2, 9)
V2_10_KEYPAIR_USER = Version(2, 10)
V2_11_FORCED_DOWN = Version(2, 11)
V2_12_VIF_NET_ID = Version(2, 12)
V2_13_SERVER_GROUP_OWNER = Version(2, 13)
V2_14_EVACUATE_SHARED = Version(2, 14)
V2_15_SOFT_AFFINITY = Version(2, 15)
V2_16_HOST_STATUS = Version(2, 16)
V2_17_CRASH_DUMP = Version(2, 17)
V2_18_OPTIONAL_PROJECT_ID = Version(2, 18)
V2_19_DESCRIPTION = Version(2, 19)
V2_20_SHELVED_VOLUMES = Version(2, 20)
V2_21_DELETED_ACTIONS = Version(2, 21)
V2_22_FORCE_COMPLETE = Version(2, 22)
V2_23_MIGRATION_TYPE = Version(2, 23)
V2_24_ABORT_MIGRATION = Version(2, 24)
V2_25_BLOCK_MIGRATION_AUTO = Version(2, 25)
V2_26_TAGS = Version(2, 26)
V2_27_NEW_HEADER = Version(2, 27)
V2_28_CPU_INFO_OBJECT = Version(2, 28)
V2_29_EVACUATE_FORCE = Version(2, 29)
V2_30_LIVE_MIGRATE_FORCE = Version(2, 30)
V2_31_CONSOLE_TOKENS = Version(2, 31)
V2_32_BOOT_DEVICE_TAGS = Version(2, 32)
V2_33_HYPERVISOR_PAGING = Version(2, 33)
V2_34_ASYNC_LIVE_CHECKS = Version(2, 34)
V2_35_KEYPAIR_PAGING = Version(2, 35)
V2_36_NO_PROXY_APIS = Version(2, 36)
V2_37_AUTO_NETWORKS = Version(2, 37)
V2_38_STATUS_FILTER_400 = Version(2, 38)
V2_39_NO_IMAGE_METADATA_LIMIT = Version(2, 39)
V2_40_USAGE_PAGING = Version(2, 40)
V2_41_AGGREGATE_UUID = Version(2, 41)
V2_42_BOOT_TAGS_RESTORED = Version(2, 42)
V2_43_NO_OS_HOSTS = Version(2, 43)
V2_44_NO_NETWORK_ACTIONS = Version(2, 44)
V2_45_IMAGE_ID_BODY = Version(2, 45)
V2_46_REQUEST_ID = Version(2, 46)
V2_47_EMBEDDED_FLAVOR = Version(2, 47)
V2_48_DIAGNOSTICS = Version(2, 48)
V2_49_ATTACH_TAGS = Version(2, 49)
V2_50_GROUP_QUOTAS = Version(2, 50)
V2_51_VOLUME_EXTENDED = Version(2, 51)
V2_52_BOOT_TAGS = Version(2, 52)
V2_53_SERVICE_UUIDS = Version(2, 53)
V2_54_REBUILD_KEY_NAME = Version(2, 54)
V2_55_FLAVOR_DESCRIPTION = Version(2, 55)
V2_56_MIGRATE_HOST = Version(2, 56)
V2_57_REBUILD_USER_DATA = Version(2, 57)
V2_58_ACTION_PAGING = Version(2, 58)
V2_59_MIGRATION_PAGING = Version(2, 59)
V2_60_MULTIATTACH = Version(2, 60)
V2_61_FLAVOR_EXTRA_SPECS = Version(2, 61)
V2_62_ACTION_EVENT_HOST = Version(2, 62)
V2_63_TRUSTED_CERTS = Version(2, 63)
V2_64_GROUP_POLICY = Version(2, 64)
V2_65_ABORT_QUEUED = Version(2, 65)
V2_66_CHANGES_BEFORE = Version(2, 66)
V2_67_BDM_VOLUME_TYPE = Version(2, 67)
V2_68_NO_FORCE = Version(2, 68)
V2_69_DOWN_CELLS = Version(2, 69)
V2_70_ATTACHMENT_TAGS = Version(2, 70)
V2_71_SERVER_GROUPS = Version(2, 71)
V2_72_PORT_RESOURCES = Version(2, 72)
V2_73_LOCK_REASON = Version(2, 73)
V2_74_BOOT_HOST = Version(2, 74)
V2_75_STRICT_QUERY = Version(2, 75)
V2_76_POWER_UPDATE = Version(2, 76)
V2_77_UNSHELVE_AZ = Version(2, 77)
V2_78_TOPOLOGY = Version(2, 78)
V2_79_ATTACH_DELETE_ON_TERMINATION = Version(2, 79)
V2_80_MIGRATION_OWNER_FILTER = Version(2, 80)
V2_81_IMAGE_PRECACHE = Version(2, 81)
V2_82_ACCELERATOR_EVENT = Version(2, 82)
V2_83_USER_FILTERS = Version(2, 83)
V2_84_EVENT_DETAILS = Version(2, 84)
V2_85_UPDATE_ATTACHMENT = Version(2, 85)
V2_86_EXTRA_SPEC_VALIDATION = Version(2, 86)
V2_87_VOLUME_RESCUE = Version(2, 87)
V2_88_NO_HYPERVISOR_STATS = Version(2, 88)
V2_89_ATTACHMENT_IDS = Version(2, 89)
V2_90_HOSTNAME = Version(2, 90)
V2_91_UNSHELVE_HOST = Version(2, 91)
V2_92_KEYPAIR_IMPORT_ONLY = Version(2, 92)
V2_93_VOLUME_REBUILD = Version(2, 93)
V2_94_FQDN_HOSTNAME = Version(2, 94)
V2_95_EVACUATE_STOPPED = Version(2, 95)
V2_96_PINNED_AZ = Version(2, 96)
V2_97_SHARES = Version(2, 97)
V2_98_IMAGE_PROPERTIES = Version(2, 98)
V2_99_SPICE_DIRECT = Version(2, 99)
V2_100_SCHEDULER_HINTS = Version(2, 100)
V2_101_ASYNC_ATTACH = Version(2, 101)
V2_102_STRICT_QUERY_ALL = Version(2, 102)
V2_103_NO_VOLUMES_BOOT = Version(2, 103)
V2_104_PINNED_AZ_UPDATE = Version(2, 104)
V2_105_EXTEND_COMPLETION = Version(2, 105)
V2_106_ATTACHMENT_STATUS = Version(2, 106)
V2_107_IDEMPOTENT_ATTACH = Version(2, 107)
V2_108_READ_ONLY_ATTACH = Version(2, 108)

# Versions that are volumesvc's own rather than Nova's. Each must be served:
# the unit test maps every one to a route versioned at it or to a named test
# exercising it. 2.105: POST /os-server-external-events completes extends.
# 2.106: status/fault in GET /servers/{id}/os-volume_attachments[/{volume_id}].
# 2.107: POST /servers/{id}/os-volume_attachments answers a retried attach.
# 2.108: read_only in that POST's body and in the attachments it shows.
OWN_VERSIONS: tuple[Version, ...] = (V2_105_EXTEND_COMPLETION, V2_106_ATTACHMENT_STATUS,
                                     V2_107_IDEMPOTENT_ATTACH, V2_108_READ_ONLY_ATTACH)

# ASCII digits only: ``\d`` would take other scripts' digits, and ``$``
# a trailing newline (fullmatch below).
_VALID = re.compile(r"[1-9][0-9]*\.(0|[1-9][0-9]*)")
# What a version header may hold: printable ASCII, spaces and tabs.
# microversion_parse splits and strips with str.split()/strip(), which also
# take Unicode whitespace (a no-break space after "2.1" would vanish), so
# anything else makes the header malformed before it is parsed.
_HEADER_CHARS = re.compile(r"[\t\x20-\x7e]*")


def parse(text: str) -> Version:
    """Turn ``2.60`` into a comparable Version; ValueError on a bad format."""
    if not _VALID.fullmatch(text):
        raise ValueError(text)
    return microversion_parse.parse_version_string(text)


MIN_VERSION = parse(VERSIONS[0][0])
MAX_VERSION = parse(VERSIONS[-1][0])


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
    """Return the version a request asks for, per doc/source/contributor/contract.rst §1.2.

    The new header wins when it names ``compute`` (its last compute pair
    counts); otherwise the last comma value of the legacy header; otherwise
    2.1. ``latest`` (lower case only) means MAX_VERSION.
    """
    for name in (NEW_HEADER, LEGACY_HEADER):
        value = headers.get(name)
        if value is not None and not _HEADER_CHARS.fullmatch(value):
            raise InvalidVersion(value.strip(" \t"))
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
    """The headers echoed on every response below /v2.1 (contract §1.3)."""
    return [
        (NEW_HEADER, f"{SERVICE_TYPE} {version}"),
        (LEGACY_HEADER, str(version)),
        ("Vary", NEW_HEADER),
        ("Vary", LEGACY_HEADER),
    ]
