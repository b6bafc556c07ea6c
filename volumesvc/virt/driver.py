"""The compute driver interface the compute manager programs against.

The manager builds exactly one driver per process with
:func:`volumesvc.virt.load_driver`
and calls only the methods of :class:`ComputeDriver`. Drivers never touch the
database: everything they need arrives as plain dicts (``instance``,
``block_device_info``, ``connection_info``).

Shapes::

    instance = {"uuid": ..., "instance_name": "instance-00000001"  # or "name"
                "memory_mb": 64, "vcpus": 1}
    connection_info = {"driver_volume_type": "local",          # iscsi, rbd, ...
                       "data": {"device_path": "/path/file", "access_mode": "rw",
                                "discard": False},
                       "serial": "<volume id>", "multiattach": False}
    block_device_info = {"root_device_name": "/dev/sda",
                         "block_device_mapping": [
                             {"connection_info": {...}, "mount_device": "/dev/sda",
                              "boot_index": 0, "disk_bus": "scsi",
                              "device_type": "disk"}]}
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.virt import block_device

LOG = logging.getLogger(__name__)

REBOOT_SOFT = "SOFT"
REBOOT_HARD = "HARD"


class ComputeDriver:
    """Base class; subclasses set ``capabilities`` and implement the methods."""

    #: Nova's capability names, also traits (doc/source/contributor/contract.rst §3.5).
    capabilities = {
        "supports_multiattach": False,
        "supports_extend_volume": False,
        "supports_tagged_attach_volume": False,
    }

    def __init__(self, conf):
        self.conf = conf
        # NOTE: copy per instance so [virt] disabled_capabilities on one
        # driver never leaks into another in the same test process.
        caps = dict(type(self).capabilities)
        for name in conf.virt.disabled_capabilities:
            caps[name] = False
        self.capabilities = caps

    # -- host -------------------------------------------------------------
    def init_host(self, host):
        """Prepare the hypervisor connection; called once at agent start."""

    def cleanup_host(self):
        """Release the hypervisor connection at agent stop."""

    def host_resources(self) -> dict:
        """``{"memory_mb": N, "vcpus": N}`` of this host, or {} when unknown.

        Published with the capabilities in the service record, so the
        scheduler can leave out a host without room for a flavor.
        """
        return {}

    def get_volume_connector(self):
        """The connector dict (os-brick's shape) sent to Cinder with attachment_update."""
        raise NotImplementedError()

    def forget_volume_connector(self):
        """Build the connector afresh next time (an attach with it failed).

        A driver that reuses its connector drops it here, since stale
        host properties may be why the attach failed; others have nothing
        to do.
        """

    # -- instances --------------------------------------------------------
    def list_instance_uuids(self):
        raise NotImplementedError()

    def get_info(self, instance):
        """Return the instance's power state (volumesvc.states.power_state)."""
        raise NotImplementedError()

    def spawn(self, instance, block_device_info):
        raise NotImplementedError()

    def define(self, instance, block_device_info):
        """Define the guest with the disks of ``block_device_info`` without starting it
        (a stopped server that moved: it stays off, and ``start`` starts it)."""
        raise NotImplementedError()

    def destroy(self, instance, block_device_info=None):
        raise NotImplementedError()

    def reboot(self, instance, block_device_info, reboot_type=REBOOT_SOFT):
        raise NotImplementedError()

    def power_off(self, instance):
        """Stop the guest; its definition (and so its disks) stays for attach/start."""
        raise NotImplementedError()

    def power_on(self, instance, block_device_info):
        """Start the guest with exactly the disks of ``block_device_info``."""
        raise NotImplementedError()

    # -- volumes ----------------------------------------------------------
    def attach_volume(self, connection_info, instance, mountpoint, disk_bus=None,
                      device_type=None):
        raise NotImplementedError()

    def detach_volume(self, connection_info, instance, mountpoint):
        raise NotImplementedError()

    def extend_volume(self, connection_info, instance, requested_size_bytes, key=None):
        """Grow an attached volume as the guest sees it; return the new size.

        ``key``: the volume's key (castellan's object), given only for a
        volume the host decrypts (:meth:`needs_key_to_extend`).
        """
        raise NotImplementedError()

    def needs_key_to_extend(self, connection_info):
        """True when :meth:`extend_volume` of this volume needs the volume's key."""
        return False

    def swap_volume(self, old_connection_info, new_connection_info, instance, mountpoint,
                    resize_to_bytes=None):
        """Move the running guest's disk at ``mountpoint`` onto the new, connected volume.

        The guest keeps running and keeps the device. ``resize_to_bytes`` is
        the new volume's size: a smaller disk is grown to it first. Raises
        when the disk could not be moved; the guest is then still on the old
        volume.
        """
        raise exception.SwapVolumeNotSupportedByVirtDriver()

    def cancel_volume_swaps(self, instance):
        """Cancel any disk copy left running on the guest (a compute that died mid-swap)."""

    def get_domain_xml(self, instance):
        """The live guest definition, for diagnostics and tests ('' if none)."""
        return ""

    def get_console_output(self, instance):
        """The newest bytes the guest wrote to its console (bytes, oldest first).

        Raises ``InstanceNotFound`` when the host has no such guest and
        ``ConsoleNotAvailable`` when the guest has no console.
        """
        raise exception.ConsoleNotAvailable()

    def has_volume_disk(self, instance, volume_id):
        """Whether the domain (live or persistent) has the volume's disk."""
        return False

    def volume_snapshot_create(self, instance, volume_id, create_info):
        """Switch the volume's disk to Cinder's new overlay; return the new file path."""
        raise exception.AssistedSnapshotNotSupported()

    def volume_snapshot_delete(self, instance, volume_id, delete_info):
        """Merge a snapshot file out of the disk's chain; return the active file path."""
        raise exception.AssistedSnapshotNotSupported()

    # -- host side of a volume connection -------------------------------------
    def connect_volume(self, connection_info):
        """Make the volume reachable on this host before a domain uses it.

        May add ``data.device_path`` to ``connection_info``, which the
        caller then saves in the BDM. Connecting again for a second server
        is harmless (os-brick's connectors are idempotent), so every attach
        connects. Nothing to do by default.
        """

    def disconnect_volume(self, connection_info):
        """Drop the host-side connection; the caller decides it is the last user.

        Whatever :meth:`attach_encryptor` opened for the volume goes with it.
        """

    # -- encrypted volumes (volumesvc/compute/encryption.py) -----------------
    def check_volume_encryption(self, connection_info, metadata):
        """How this driver would decrypt the volume; refuse what it cannot.

        ``metadata``: Cinder's encryption metadata of a volume this host
        must decrypt. Refused by default: a driver that cannot decrypt must
        never hand the ciphertext (or, for a volume to format, the
        plaintext) to a guest.
        """
        raise exception.VolumeEncryptionNotSupported(
            volume_id=block_device.volume_id(connection_info),
            provider=metadata.get("provider"),
            control_location=metadata.get("control_location"),
            driver_volume_type=connection_info.get("driver_volume_type"),
            reason=f"the {type(self).__name__} compute driver decrypts no volume")

    def attach_encryptor(self, connection_info, metadata, method, key, passphrase):
        """Open the connected volume with its key (``method`` from the check)."""
        raise NotImplementedError()

    def volume_secret_ids(self):
        """Volume ids whose decryption secret this host keeps (for the reconciliation)."""
        return []

    def forget_volume_secret(self, volume_id):
        """Remove a volume's decryption secret the reconciliation found orphaned."""

    # -- live migration --------------------------------------------------------
    def live_migration_target(self):
        """How a source reaches this host to migrate a guest here (``uri``...)."""
        raise exception.MigrationPreCheckError(
            reason=f"the {type(self).__name__} compute driver cannot live-migrate")

    def pre_live_migration(self, instance, block_device_info):
        """Destination: prepare the arriving guest's files; returns the target dict."""
        raise NotImplementedError()

    def live_migration(self, instance, target, volumes, on_progress):
        """Source: move the running guest; True when it was paused to complete."""
        raise NotImplementedError()

    def post_live_migration_at_destination(self, instance, resume):
        """Destination: the guest arrived; returns its power state."""
        raise NotImplementedError()

    def post_live_migration_at_source(self, instance):
        """Source: forget what is left of the guest that left."""

    def rollback_live_migration_at_destination(self, instance):
        """Destination: no domain of the server may stay after a failed move."""

    def runs_guest(self, instance):
        """Whether the server's guest runs (or is paused) on this host."""
        return False

    def wait_for_migration_job(self, instance, timeout):
        """Wait (at most ``timeout`` s, None: no bound) for a migration job of the guest to end."""

    # -- shared checks ------------------------------------------------------
    def check_multiattach(self, connection_info):
        """Refuse a multiattach volume when this driver lacks the capability."""
        if (block_device.is_multiattach(connection_info)
                and not self.capabilities["supports_multiattach"]):
            raise exception.MultiattachNotSupportedByVirtDriver(
                volume_id=block_device.volume_id(connection_info))

    def check_extend(self):
        if not self.capabilities["supports_extend_volume"]:
            raise exception.ExtendVolumeNotSupported()
