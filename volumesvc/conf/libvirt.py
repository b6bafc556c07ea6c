"""Options in [libvirt]: how the libvirt driver connects and builds guest XML."""

import copy

from oslo_config import cfg

libvirt_group = cfg.OptGroup(
    "libvirt",
    title="Libvirt options",
    help="Options for the libvirt compute driver (``[DEFAULT] compute_driver = libvirt``).")

libvirt_opts = [
    cfg.StrOpt(
        "connection_uri",
        default="qemu:///embed?root=$state_path/libvirt",
        help="""
libvirt connection URI.

Possible values:

* ``qemu:///embed?root=DIR``: the QEMU driver runs inside the compute process,
  no daemon. Each compute agent needs its own root. ``DIR/etc/qemu.conf`` is
  written on first use (root user, file stdio handler, no security driver).
* ``qemu:///system``: a libvirtd on this host (production, KVM).

Related options:

* ``virt_type``
"""),
    cfg.StrOpt(
        "virt_type",
        default="qemu",
        choices=[("qemu", "Software emulation (TCG), no /dev/kvm needed"),
                 ("kvm", "Hardware virtualisation")],
        help="Domain type written to the guest XML."),
    cfg.ListOpt(
        "disk_cachemodes",
        default=[],
        help="""
Cache mode per disk source type, as ``source_type=mode`` items.

Possible values:

* source types: ``file``, ``block``, ``network``.
* modes: ``none``, ``writethrough``, ``writeback``, ``directsync``, ``unsafe``.
  The default for every source type is ``none``. A multiattach volume always
  gets ``none`` whatever is set here.

Related options:

* ``use_default_aio_mode_for_volumes``
"""),
    cfg.BoolOpt(
        "use_default_aio_mode_for_volumes",
        default=False,
        help="""
Leave the io mode to QEMU instead of ``io="native"`` for block-type volumes.
A cache mode other than none/directsync always gives ``io="threads"``.
"""),
    cfg.BoolOpt(
        "volume_use_multipath",
        default=False,
        help="""
Connect block volumes (iSCSI, Fibre Channel, NVMe-oF...) over every path the
storage offers, through multipathd, and tell Cinder so in the connector
(``multipath``).

Related options:

* ``volume_enforce_multipath``
"""),
    cfg.BoolOpt(
        "volume_enforce_multipath",
        default=False,
        help="""
With ``volume_use_multipath``, refuse to connect (and to build a connector)
when multipathd is not running, instead of falling back to a single path.

Related options:

* ``volume_use_multipath``
"""),
    cfg.FloatOpt(
        "volume_connector_max_age",
        default=300.0,
        min=0.0,
        help="""
Seconds the compute reuses this host's connector (what it tells Cinder about
the host when it updates an attachment: initiator name, host NQN, WWPNs,
``my_ip``...) before os-brick builds it again. Building it runs several
commands as root (through privsep) on a host with the iSCSI, NVMe-oF or
Fibre Channel tools, which in an attach storm costs more CPU than the rest of
the attach. A changed host identity (a new initiator name, an added HBA)
reaches Cinder at the latest this long after the change; an attach that
fails also makes the next one build the connector again. 0 builds it for
every attachment, as Nova does.
"""),
    cfg.IntOpt(
        "num_volume_scan_tries",
        default=5,
        min=1,
        help="""
Times os-brick rescans the host for the device of a block volume (iSCSI,
Fibre Channel...) before the connect fails.
"""),
    cfg.StrOpt(
        "nfs_mount_point_base",
        default="$state_path/mnt",
        help="""
Directory under which os-brick mounts the NFS shares of volumes, one
directory per share (named from a hash of the export).
"""),
    cfg.StrOpt(
        "nfs_mount_options",
        help="""
Options passed to ``mount -o`` for every NFS share (``-o`` options of
nfs(5)); the ``options`` Cinder sends in the connection info are added.
"""),
    cfg.StrOpt(
        "rbd_user",
        help="""
Ceph user the guest's QEMU authenticates as for RBD volumes, instead of the
``auth_username`` Cinder sends.

Related options:

* ``rbd_secret_uuid``
"""),
    cfg.StrOpt(
        "rbd_secret_uuid",
        help="""
UUID of the libvirt secret holding the cephx key for RBD volumes, instead of
the ``secret_uuid`` Cinder sends.

Related options:

* ``rbd_user``
"""),
    cfg.IntOpt(
        "guest_memory_cap_mb",
        default=0,
        min=0,
        deprecated_name="domain_memory_mb",
        help="""
Most MiB of memory a domain gets; ``0`` (the default) gives each domain its
flavor's ``ram``. For software-emulated test hosts whose guests need little
(the all-in-one sets 128, what its starter image needs), so a flavor of
several GiB does not make QEMU reserve that much. The scheduler still counts
the flavor's ``ram`` (see ``[DEFAULT] ram_allocation_ratio``).

Replaces ``domain_memory_mb``, which gave every domain that fixed size.
"""),
    cfg.IntOpt(
        "device_detach_timeout",
        default=20,
        min=1,
        help="""
Seconds to wait for a live disk to leave the domain after each detach request
(device-removed event, or the disk gone from the live XML). A disk still
there is asked for again, up to ``device_detach_attempts`` requests.

Related options:

* ``device_detach_attempts``
"""),
    cfg.IntOpt(
        "device_detach_attempts",
        default=8,
        min=1,
        help="""
Detach requests sent for one live disk before the detach fails. A guest that
is busy, or still booting, may miss or not yet answer a hot-unplug request;
asking again (QEMU keeps an unplug it has not finished, so a request while one
is pending only waits for it longer) lets a slow guest let go of the disk
instead of failing the detach and leaving the volume attached. The longest a
detach waits is ``device_detach_attempts`` times ``device_detach_timeout``.

Related options:

* ``device_detach_timeout``
"""),
    cfg.IntOpt(
        "block_copy_timeout",
        default=3600,
        min=1,
        help="""
Seconds a swap volume may take to copy the disk to the new volume (the block
copy reaching the ready state, then the pivot). Past it the copy is cancelled
and the server keeps its old volume.
"""),
    cfg.IntOpt(
        "block_copy_bandwidth",
        default=0,
        min=0,
        help="""
Most MiB per second a swap volume's block copy may move (libvirt's
``bandwidth`` of the copy job), so that moving a large volume off a backend
leaves room for the guests' own I/O on the same storage. ``0`` (the
default): no limit. Only data counts: holes of a sparse volume are not
throttled.

Related options:

* ``block_copy_timeout``: keep it above the size of the largest volume
  divided by this rate.
"""),
    cfg.IntOpt(
        "domain_state_timeout",
        default=30,
        min=1,
        help="""
Seconds to wait for a domain to reach the expected state after destroy, reset
or create. Races right after reset/destroy are handled by this wait.
"""),
    cfg.IntOpt(
        "keepalive_interval",
        default=5,
        min=0,
        help="""
Seconds between keepalive messages on remote connections (``qemu:///system``);
a dead libvirtd is detected after ``keepalive_interval * keepalive_count``
seconds. Ignored for embedded connections. 0 disables keepalive.
"""),
    cfg.IntOpt(
        "keepalive_count",
        default=5,
        min=1,
        help="Unanswered keepalive messages before a remote connection is closed."),
    cfg.StrOpt(
        "live_migration_uri",
        default="qemu+tcp://%s/system",
        help="""
The libvirt URI the source's daemon reaches the destination's daemon at to
live-migrate a guest (peer to peer), with ``%s`` standing for the
destination's ``live_migration_inbound_addr``. Each compute reports its own
(the destination's setting is the one used). The default needs libvirtd
listening on TCP on that address; use ``qemu+tls://%s/system`` where the
hosts' daemons have certificates.

Related options:

* ``live_migration_inbound_addr``
"""),
    cfg.StrOpt(
        "live_migration_inbound_addr",
        help="""
The address other hosts reach this host at for live migration: its libvirt
daemon and the incoming QEMU migration stream. Unset: ``[DEFAULT] my_ip``.
"""),
    cfg.IntOpt(
        "live_migration_bandwidth",
        default=0,
        min=0,
        help="""
Most MiB/s a live migration's memory copy may use; 0 leaves it to QEMU
(as fast as it can).
"""),
    cfg.IntOpt(
        "live_migration_completion_timeout",
        default=800,
        min=0,
        help="""
Seconds a live migration may run before it is aborted (the server keeps
running on the source and the migration ends ``error``); 0 never aborts.
As Nova's option of the same name, but an absolute time, not per GiB.
"""),
    cfg.StrOpt(
        "rbd_keyring",
        help="""
Ceph keyring file holding the cephx key of ``client.<rbd_user>``. When set
(or ``rbd_key_file``), the compute makes sure at start-up that the libvirt
secret ``rbd_secret_uuid`` exists and holds that key, so that QEMU can open
the RBD volumes Cinder's RBD driver hands out. Without ``rbd_user`` the
keyring must hold exactly one ``client.*`` entry.

The secret API needs a libvirt daemon (``connection_uri = qemu:///system``);
the embedded driver has none.

Related options:

* ``rbd_key_file``
* ``rbd_secret_uuid``
* ``rbd_user``
"""),
    cfg.StrOpt(
        "rbd_key_file",
        help="""
File holding only the base64 cephx key of the RBD user (what ``ceph auth
print-key client.<user>`` prints). An alternative to ``rbd_keyring``; setting
both is a configuration error.

Related options:

* ``rbd_keyring``
* ``rbd_secret_uuid``
"""),
]


def register_opts(conf):
    # NOTE: a fresh OptGroup per ConfigOpts: register_group only shallow-copies
    # the group, so a shared one would share set_override() between confs.
    conf.register_group(copy.deepcopy(libvirt_group))
    conf.register_opts(libvirt_opts, group=libvirt_group.name)


def list_opts():
    return [(libvirt_group, libvirt_opts)]
