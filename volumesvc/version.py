"""Service versions: one integer per deployable behaviour change.

Every compute and conductor records ``SERVICE_VERSION`` in its service row.
The API reads the minimum across computes before using a feature that needs
new computes (see the thresholds below). Add a history entry and bump the
number whenever a compute learns something another service may rely on.
"""

SERVICE_VERSION_HISTORY = (
    # 1: initial service: heartbeats, capabilities, server build/delete/reboot.
    {"compute_rpc": "1.0", "conductor_rpc": "1.0"},
    # 2: computes create boot volumes with the BDM's volume_type (spec 5);
    #    reserve_block_device_name / attach_volume / detach_volume.
    {"compute_rpc": "1.1", "conductor_rpc": "1.1"},
    # 3: conductors serve persistence on their own topic; attach passes
    #    the volume's multiattach flag down.
    {"compute_rpc": "1.2", "conductor_rpc": "1.2"},
    # 4: computes take external events (external_instance_event) and complete
    #    in-use extends with Cinder (spec 3, API 2.105); conductors forward
    #    the events to the instance's host.
    {"compute_rpc": "1.3", "conductor_rpc": "1.3"},
    # 5: dangling volume attachments: computes reconcile BDMs with Cinder on
    #    reboot, on request (compute RPC 1.4) and when they start; conductors
    #    serve reconcile_volume_attachments, instance_list_by_host and
    #    action_start (conductor RPC 1.4).
    {"compute_rpc": "1.4", "conductor_rpc": "1.4"},
    # 6: stop/start, shelve/offload/unshelve (compute and conductor RPC 1.5).
    {"compute_rpc": "1.5", "conductor_rpc": "1.5"},
    # 7: os-assisted-volume-snapshots: conductor and compute
    #    volume_snapshot_create / volume_snapshot_delete.
    {"compute_rpc": "1.6", "conductor_rpc": "1.6"},
    # 8: computes report attach progress (API 2.106): the BDM is reserved
    #    ``attaching``, becomes ``attached`` once Cinder has completed the
    #    attachment and the disk is in the guest, a failed attach is kept as
    #    ``error`` and a failed detach goes back to ``attached`` with a fault.
    #    Conductors persist the BDM status and fault fields (RPC 1.7).
    {"compute_rpc": "1.7", "conductor_rpc": "1.7"},
    # 9: fewer round trips per attach: conductors finish an action event in
    #    the same bdm_update call (conductor RPC 1.8), so a compute reports
    #    ``attached`` and its event's Success at once; computes take an attach
    #    whose compute_attach_volume event the conductor started with the
    #    action (compute RPC 1.8).
    {"compute_rpc": "1.8", "conductor_rpc": "1.8"},
    # 10: swap volume (os-volume_attachments PUT, Cinder's retype/migrate of an
    #     in-use volume): conductors run swap_volume (conductor RPC 1.9),
    #     computes copy the disk with a libvirt block copy (compute RPC 1.9).
    {"compute_rpc": "1.9", "conductor_rpc": "1.9"},
    # 11: rebuild of a volume-backed server (API 2.93): conductors run
    #     rebuild_instance (conductor RPC 1.10), computes recreate the domain
    #     from the root volume, after Cinder's os-reimage and its
    #     volume-reimaged event for a new image (compute RPC 1.10).
    {"compute_rpc": "1.10", "conductor_rpc": "1.10"},
    # 12: accepted attach and detach requests survive a dead conductor: the
    #     API records them (``volume_requests``), conductors claim, settle and
    #     recover them (conductor RPC 1.11); computes skip an attach or detach
    #     they already started for the same BDM and re-check the BDM of a
    #     recovered one (compute RPC 1.11).
    {"compute_rpc": "1.11", "conductor_rpc": "1.11"},
    # 13: computes serve their guests' serial console log (get_console_output,
    #     compute RPC 1.12), which the API calls for os-getConsoleOutput.
    {"compute_rpc": "1.12", "conductor_rpc": "1.11"},
    # 14: read-only attachments (API 2.108): conductors create the Cinder
    #     attachment with mode ``ro`` and keep ``read_only`` on the BDM
    #     (conductor RPC 1.12); computes give the guest a read-only disk for
    #     a read-only BDM or attachment whatever Cinder's access_mode says,
    #     and ask for ``ro`` again for every new attachment of such a BDM.
    {"compute_rpc": "1.12", "conductor_rpc": "1.12"},
)

SERVICE_VERSION = len(SERVICE_VERSION_HISTORY)

# Minimum compute service version that understands BDM volume_type at boot
# (spec 5, microversion 2.67).
MIN_COMPUTE_VOLUME_TYPE = 2
# Minimum compute service version that completes extends with Cinder
# (spec 3, microversion 2.105, served by os-server-external-events). It is
# also the first compute version that takes external events at all.
MIN_COMPUTE_EXTEND_COMPLETION = 4
# Minimum compute service version that can stop/start/shelve/unshelve; the
# conductor places an unshelved server on such a compute only.
MIN_COMPUTE_LIFECYCLE = 6
# Minimum compute service version that reports attach/detach progress (API
# 2.106); the API marks a detach ``detaching`` only on such a compute.
MIN_COMPUTE_ATTACH_STATUS = 8
# Minimum compute service version that swaps the volume of an attachment; the
# API refuses a swap on an older compute with 409.
MIN_COMPUTE_SWAP = 10
# Minimum compute service version that rebuilds a volume-backed server; the
# API refuses a rebuild on an older compute with 409.
MIN_COMPUTE_REBUILD = 11
# Minimum compute service version that takes a recovered attach or detach
# (compute RPC 1.11); a conductor re-casts a half-done attach only to such a
# compute and otherwise leaves it to the compute's reservation watch.
MIN_COMPUTE_RECOVERED_REQUESTS = 12
# Minimum compute service version that serves a guest's console output; the
# API answers os-getConsoleOutput for a server on an older compute with 409.
MIN_COMPUTE_CONSOLE_OUTPUT = 13
# Minimum compute service version that makes a read-only attachment a
# read-only disk (API 2.108); the API refuses ``read_only`` on an older
# compute with 409.
MIN_COMPUTE_READ_ONLY_ATTACH = 14

RELEASE = "0.1.0"
