"""Service versions: one integer per deployable behaviour change.

Every compute and conductor records ``SERVICE_VERSION`` in its service row.
Version 1 is the first release's baseline. From here on, add a history
entry (and so bump the number) whenever a compute learns something another
service may rely on; a caller that needs it checks the minimum version of
the computes first (``objects.service.get_minimum_version``, or the
``version`` of ``objects.compute_host.get`` for one server's compute, or a
scheduling requirement's ``min_version``), and names the feature and its
first version in ``GATED_FEATURES`` so that ``volumesvc-status upgrade
check`` can say what stays off until the old hosts are upgraded. When and
how: ``doc/source/contributor/versions.rst``.
"""

SERVICE_VERSION_HISTORY = (
    # 1: the first release: compute RPC 1.0 and conductor RPC 1.0.
    {"compute_rpc": "1.0", "conductor_rpc": "1.0"},
    # 2: live migration: compute RPC 1.1 and conductor RPC 1.1.
    {"compute_rpc": "1.1", "conductor_rpc": "1.1"},
    # 3: cold migration, resize and evacuation: compute RPC 1.2 and conductor RPC 1.2.
    {"compute_rpc": "1.2", "conductor_rpc": "1.2"},
    # 4: a compute that starts tells the conductors (conductor RPC 1.3).
    {"compute_rpc": "1.2", "conductor_rpc": "1.3"},
)

SERVICE_VERSION = len(SERVICE_VERSION_HISTORY)

# (first compute service version, what stays off on hosts below it) for each
# feature a caller gates on the computes' service version; the upgrade check
# names the hosts each one waits for.
LIVE_MIGRATION_VERSION = 2
RESIZE_VERSION = 3
EVACUATE_VERSION = 3
GATED_FEATURES: tuple[tuple[int, str], ...] = (
    (LIVE_MIGRATION_VERSION, "live migration (to or from the host)"),
    (RESIZE_VERSION, "resize and cold migration (to or from the host)"),
    (EVACUATE_VERSION, "evacuation (to the host)"),
)

RELEASE = "0.1.0"
