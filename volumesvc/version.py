"""Service versions: one integer per deployable behaviour change.

Every compute and conductor records ``SERVICE_VERSION`` in its service row.
The API reads the minimum across computes before using a feature that needs
new computes (see the thresholds below). Add a history entry and bump the
number whenever a compute learns something another service may rely on.
"""

SERVICE_VERSION_HISTORY = (
    # 1: initial service: heartbeats, capabilities, libvirt attach/detach.
    {"compute_rpc": "1.0", "conductor_rpc": "1.0"},
)

SERVICE_VERSION = len(SERVICE_VERSION_HISTORY)

# Minimum compute service version that understands BDM volume_type at boot
# (spec 5, microversion 2.67).
MIN_COMPUTE_VOLUME_TYPE = 1
# Minimum compute service version that completes extends with Cinder
# (spec 3, microversion 2.105).
MIN_COMPUTE_EXTEND_COMPLETION = 1

RELEASE = "0.1.0"
