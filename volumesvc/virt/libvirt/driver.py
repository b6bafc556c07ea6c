"""LibvirtDriver: volumesvc's compute driver on libvirt/QEMU.

A domain boots from the disk of the boot index 0 BDM (``<boot order='1'/>``)
and logs its first serial port, where the firmware and the guest's kernel
write, to ``console.log`` in the instance's directory (``get_console_output``).
QEMU really opens each volume, so attach/detach/extend/multiattach run the
same code paths as on a production host. Domains are found by instance uuid,
which is also the libvirt domain uuid.
"""

import os
import stat
import time

from oslo_log import log as logging

from volumesvc import exception, privsep
from volumesvc.privsep import files as privsep_files
from volumesvc.states import power_state
from volumesvc.virt import block_device, configdrive, driver, instance_path
from volumesvc.virt.libvirt import (
    config,
    config_drive,
    console,
    encryption,
    luks,
    luks_payload,
    migration,
    snapshots,
    swap,
    volume,
)
from volumesvc.virt.libvirt import host as host_mod
from volumesvc.virt.libvirt import secrets as libvirt_secrets
from volumesvc.virt.libvirt.volume import brick

LOG = logging.getLogger(__name__)

#: What some QEMU releases say (through libvirt) to a device_del while an
#: unplug of the same device is still pending: the earlier request stands.
#: QEMU 7.2 (Debian 12) accepts the request again instead.
UNPLUG_PENDING = "already in the process of unplug"


def domain_name(instance):
    return instance.get("instance_name") or instance.get("name") or f"instance-{instance['uuid']}"


class LibvirtDriver(driver.ComputeDriver):
    capabilities = {
        "supports_multiattach": True,
        "supports_extend_volume": True,
        "supports_tagged_attach_volume": True,
    }

    def __init__(self, conf, libvirt_module=None, host=None):
        super().__init__(conf)
        self.libvirt_conf = conf.libvirt
        # Fail on a bad [libvirt] disk_cachemodes at start-up, not at attach.
        volume.parse_cache_modes(conf.libvirt.disk_cachemodes)
        #: driver_volume_type -> its libvirt volume driver (block, file, network...).
        self.volume_drivers = volume.VolumeDrivers(conf)
        # os-brick and the privsep contexts read global settings: hand them
        # ours before anything (a connector, a connect, a read) can need them.
        brick.setup(conf)
        privsep.setup(conf)
        self._connector = brick.ConnectorCache(
            lambda: brick.connector_properties(self.conf),
            conf.libvirt.volume_connector_max_age)
        self._host = host or host_mod.Host(
            conf.libvirt.connection_uri, libvirt_module=libvirt_module,
            keepalive_interval=conf.libvirt.keepalive_interval,
            keepalive_count=conf.libvirt.keepalive_count)
        self.libvirt = self._host.libvirt

    @property
    def host(self):
        return self._host

    # -- host -------------------------------------------------------------
    def init_host(self, host):
        libvirt_secrets.ensure_configured_secret(self._host.get_connection(), self.libvirt,
                                                 self.libvirt_conf)

    def cleanup_host(self):
        self._host.close()

    def host_resources(self):
        """Memory (MiB) and CPUs of the host, from libvirt's host info."""
        try:
            info = self._host.get_connection().getInfo()
        except self.libvirt.libvirtError as exc:
            LOG.warning("Could not read the host's memory and CPUs: %s", exc)
            return {}
        return {"memory_mb": int(info[1]), "vcpus": int(info[2])}

    def get_volume_connector(self):
        """os-brick's connector properties of this host, reused for a while
        (``[libvirt] volume_connector_max_age``, ``brick.ConnectorCache``)."""
        return self._connector.get()

    def forget_volume_connector(self):
        self._connector.forget()

    # -- helpers ------------------------------------------------------------
    def _libvirt_error(self, exc, what):
        return exception.VirtDriverError(reason=f"{what}: {exc}")

    def _build_domain(self, instance, block_device_info):
        memory = instance.get("memory_mb") or 64
        cap = self.libvirt_conf.guest_memory_cap_mb
        if cap:
            memory = min(memory, cap)
        disks = []
        for bdm in sorted(block_device.get_bdms(block_device_info),
                          key=lambda b: (b.get("boot_index") is None or b["boot_index"] < 0,
                                         b.get("boot_index") or 0)):
            boot_index = bdm.get("boot_index")
            disks.append(self.volume_drivers.get_config(
                bdm["connection_info"], bdm["mount_device"],
                disk_bus=bdm.get("disk_bus"), device_type=bdm.get("device_type"),
                boot_order=boot_index + 1 if boot_index is not None and boot_index >= 0
                else None))
        domain = config.DomainConfig(
            uuid=instance["uuid"], name=domain_name(instance),
            virt_type=self.libvirt_conf.virt_type, memory_mb=memory,
            vcpus=instance.get("vcpus") or 1, disks=disks,
            console=self._console(instance))
        self._add_config_drive(instance, domain, block_device_info)
        return domain

    def _console(self, instance):
        """The serial console, logged in the instance's directory (made here if missing).

        The directory must exist before QEMU starts: a volume-backed server
        has no local root disk that would have created it.
        """
        path = instance_path.console_log(self.conf, instance["uuid"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return config.SerialConsoleConfig(log_path=path)

    def _add_config_drive(self, instance, domain, block_device_info):
        """Write the server's config drive anew and attach it, when it has one.

        The server's own ``config_drive`` decides: the compute sets it at
        build when the boot, the image or ``[DEFAULT] force_config_drive``
        asks for a drive.
        """
        if not instance.get("config_drive"):
            return
        files = config_drive.content(self.conf, instance, domain, block_device_info)
        iso_path = config_drive.path(self.conf, instance["uuid"])
        os.makedirs(os.path.dirname(iso_path), exist_ok=True)
        configdrive.write_iso(files, iso_path)
        config_drive.add(domain, iso_path)
        self.made_config_drive(instance, iso_path, files)

    def made_config_drive(self, instance, iso_path, files):
        """Called with each config drive written (its path and files); nothing by default."""

    def _define_and_start(self, instance, block_device_info):
        xml = self._build_domain(instance, block_device_info).to_xml()
        try:
            guest = self._host.define_guest(xml)
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(exc, "defining the domain failed") from exc
        try:
            guest.launch()
        except self.libvirt.libvirtError as exc:
            LOG.error("Starting domain %s failed: %s", instance["uuid"], exc)
            raise self._libvirt_error(exc, "starting the domain failed") from exc
        guest.wait_for_power_state(power_state.RUNNING, self.libvirt_conf.domain_state_timeout)
        return guest

    def _stop(self, guest):
        if guest.is_active():
            guest.poweroff()
        guest.wait_for_power_state(power_state.SHUTDOWN, self.libvirt_conf.domain_state_timeout)

    # -- instances --------------------------------------------------------
    def list_instance_uuids(self):
        return [g.uuid for g in self._host.list_guests()]

    def get_info(self, instance):
        return self._host.get_guest(instance["uuid"]).get_power_state()

    def spawn(self, instance, block_device_info):
        for bdm in block_device.get_bdms(block_device_info):
            self.check_multiattach(bdm["connection_info"])
        if self._host.find_guest(instance["uuid"]) is not None:
            raise exception.InstanceExists(name=domain_name(instance))
        try:
            self._define_and_start(instance, block_device_info)
        except Exception:
            # NOTE: leave nothing defined, so a rescheduled build starts clean.
            self.destroy(instance, block_device_info)
            raise

    def define(self, instance, block_device_info):
        for bdm in block_device.get_bdms(block_device_info):
            self.check_multiattach(bdm["connection_info"])
        if self._host.find_guest(instance["uuid"]) is not None:
            raise exception.InstanceExists(name=domain_name(instance))
        xml = self._build_domain(instance, block_device_info).to_xml()
        try:
            self._host.define_guest(xml)
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(exc, "defining the domain failed") from exc

    def destroy(self, instance, block_device_info=None):
        guest = self._host.find_guest(instance["uuid"])
        if guest is None:
            return
        self._stop(guest)
        try:
            guest.undefine()
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() != self.libvirt.VIR_ERR_NO_DOMAIN:
                raise self._libvirt_error(exc, "undefining the domain failed") from exc

    def reboot(self, instance, block_device_info, reboot_type=driver.REBOOT_SOFT):
        """SOFT resets the running domain; HARD rebuilds it from block_device_info.

        NOTE: a soft reboot in Nova asks the guest OS to shut down, which our
        guest-less domains never do; a reset keeps the live devices and is what
        the guest would see. The hard reboot regenerates the XML from the BDMs
        (after the compute's dangling-BDM cleanup), so disks whose BDM is gone
        leave the domain, as in Nova.
        """
        guest = self._host.find_guest(instance["uuid"])
        if guest is None:
            if reboot_type != driver.REBOOT_HARD:
                raise exception.InstanceNotFound(instance_id=instance["uuid"])
            # A hard reboot recreates a domain lost with its host's state.
            self._define_and_start(instance, block_device_info)
            return
        timeout = self.libvirt_conf.domain_state_timeout
        if reboot_type == driver.REBOOT_SOFT and guest.is_active():
            try:
                guest.reset()
                guest.wait_for_power_state(power_state.RUNNING, timeout)
                return
            except (self.libvirt.libvirtError, exception.VirtDriverError) as exc:
                LOG.warning("Soft reboot of %s failed (%s); rebooting hard",
                            instance["uuid"], exc)
        self.power_on(instance, block_device_info)

    def power_off(self, instance):
        """Stop the domain (QEMU exits, so it lets go of every volume); keep it defined.

        A stopped server keeps a defined domain so that attach and detach
        while stopped edit its persistent config, as with Nova. No domain at
        all (lost with the host's state) is not an error: it is off.
        """
        guest = self._host.find_guest(instance["uuid"])
        if guest is not None:
            self._stop(guest)

    def power_on(self, instance, block_device_info):
        """Redefine the domain from ``block_device_info`` and start it.

        As Nova's start (a hard reboot underneath): the disk set is exactly
        the BDMs', whatever the old definition held.
        """
        guest = self._host.find_guest(instance["uuid"])
        if guest is not None:
            self._stop(guest)
            guest.undefine()
        self._define_and_start(instance, block_device_info)

    def get_domain_xml(self, instance):
        guest = self._host.find_guest(instance["uuid"])
        return guest.get_xml_desc() if guest else ""

    def get_console_output(self, instance):
        """The newest bytes of the guest's serial console log (at most 100 KiB).

        Read from the log the domain's definition names, so a domain defined
        before the log's place changed is still served. A stopped server
        keeps its last run's log; a domain without a logged serial port has
        no console (``ConsoleNotAvailable``).
        """
        guest = self._host.get_guest(instance["uuid"])
        try:
            xml = guest.get_xml_desc()
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(exc, "reading the domain failed") from exc
        path = config.console_log_path(xml)
        if path is None:
            raise exception.ConsoleNotAvailable()
        return console.read_log(path)

    def has_volume_disk(self, instance, volume_id):
        guest = self._host.find_guest(instance["uuid"])
        if guest is None:
            return False
        alias = config.volume_alias(volume_id)
        return any(guest.find_disk(alias=alias, serial=volume_id, inactive=inactive)
                   is not None for inactive in (True, False))

    def get_volume_disk_info(self, instance, volume_id, inactive=False):
        """The disk of ``volume_id`` as the (live) domain XML shows it, or None."""
        guest = self._host.get_guest(instance["uuid"])
        return guest.find_disk(alias=config.volume_alias(volume_id), serial=volume_id,
                               inactive=inactive)

    # -- assisted volume snapshots ------------------------------------------
    def _volume_disk(self, instance, volume_id):
        guest = self._host.get_guest(instance["uuid"])
        disk = guest.find_disk(alias=config.volume_alias(volume_id), serial=volume_id)
        if disk is not None and disk.source_protocol == "rbd":
            # NOTE: as Nova: Cinder's RBD driver snapshots inside Ceph and
            # never asks the compute; a qcow2 overlay on an RBD disk is not
            # something this path knows how to make or merge.
            raise exception.Invalid(
                reason=f"assisted snapshots of volume {volume_id}, an RBD disk of "
                       f"{instance['uuid']}, are not supported")
        if disk is None or disk.source_type != "file" or not disk.source:
            raise exception.Invalid(
                reason=f"volume {volume_id} is not a file-backed disk of {instance['uuid']}")
        return guest, disk

    def volume_snapshot_create(self, instance, volume_id, create_info):
        guest, disk = self._volume_disk(instance, volume_id)
        devs = [d.target_dev for d in guest.get_disks()]
        try:
            return snapshots.create(self.libvirt, guest, disk, devs, create_info)
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(exc, f"snapshot of volume {volume_id} failed") from exc

    def volume_snapshot_delete(self, instance, volume_id, delete_info):
        guest, disk = self._volume_disk(instance, volume_id)
        try:
            return snapshots.delete(guest, disk, delete_info,
                                    self.libvirt_conf.domain_state_timeout)
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(
                exc, f"merging a snapshot of volume {volume_id} failed") from exc

    # -- volumes ----------------------------------------------------------
    def attach_volume(self, connection_info, instance, mountpoint, disk_bus=None,
                      device_type=None):
        """Attach live and persistent when running, persistent only when off.

        Returns the device name used (``mountpoint``, or the next free name on
        the bus when None).
        """
        self.check_multiattach(connection_info)
        guest = self._host.get_guest(instance["uuid"])
        bus = disk_bus or block_device.DEFAULT_VOLUME_BUS
        live = guest.is_active()
        if not mountpoint:
            used = [d.target_dev for d in guest.get_disks(inactive=not live)]
            mountpoint = block_device.get_next_device_name(used, bus)
        disk = self.volume_drivers.get_config(connection_info, mountpoint,
                                              disk_bus=bus, device_type=device_type)
        try:
            guest.attach_device(disk.to_xml(), live=live, persistent=True)
        except self.libvirt.libvirtError as exc:
            # QEMU's image locking lands here when the volume is already open
            # in another domain without <shareable/>.
            raise self._libvirt_error(
                exc, f"attaching volume {disk.serial} at {mountpoint} failed") from exc
        return mountpoint

    def detach_volume(self, connection_info, instance, mountpoint):
        """Remove the volume's disk; a disk or domain already gone is not an error.

        The persistent config goes first, then the live device, whose removal
        is asynchronous: we wait for libvirt's device-removed event, or the
        disk gone from the live XML, for ``[libvirt] device_detach_timeout``.
        """
        vol_id = block_device.volume_id(connection_info)
        alias = config.volume_alias(vol_id) if vol_id else None
        target = block_device.strip_dev(mountpoint)
        guest = self._host.find_guest(instance["uuid"])
        if guest is None:
            LOG.warning("During detach_volume, instance %s disappeared", instance["uuid"])
            return
        config_disk = guest.find_disk(alias=alias, serial=vol_id, target_dev=target,
                                      inactive=True)
        live_disk = (guest.find_disk(alias=alias, serial=vol_id, target_dev=target)
                     if guest.is_active() else None)
        if config_disk is None and live_disk is None:
            LOG.warning("Volume %s not found on instance %s at %s; already detached",
                        vol_id, instance["uuid"], mountpoint)
            return
        try:
            if config_disk is not None:
                guest.detach_device(config_disk.xml, live=False, persistent=True)
            if live_disk is not None:
                self._detach_live(guest, live_disk)
        except self.libvirt.libvirtError as exc:
            raise exception.DeviceDetachFailed(device=mountpoint, reason=str(exc)) from exc

    def _detach_live(self, guest, disk):
        """Ask the guest to let go of ``disk``, again after each wait, as Nova does.

        A guest busy enough (or still booting) misses or delays the unplug,
        and another request presents it again. A QEMU that refuses a request
        while one is pending (``UNPLUG_PENDING``) leaves the first standing,
        so then only the wait goes on. Any other refusal is the answer.
        """
        key = disk.alias or disk.target_dev
        attempts = self.libvirt_conf.device_detach_attempts
        timeout = self.libvirt_conf.device_detach_timeout
        removed = self._host.expect_device_removed(guest.uuid, key)
        try:
            for attempt in range(1, attempts + 1):
                try:
                    guest.detach_device(disk.xml, live=True, persistent=False)
                except self.libvirt.libvirtError as exc:
                    if self._gone(guest, disk):
                        return
                    if attempt == 1 or UNPLUG_PENDING not in str(exc):
                        raise
                if self._removed_within(removed, guest, disk, timeout):
                    return
                if attempt < attempts:
                    LOG.warning("Disk %s of instance %s is still attached %ds after detach "
                                "request %d of %d; asking the guest again", disk.target_dev,
                                guest.uuid, timeout, attempt, attempts)
            raise exception.DeviceDetachFailed(
                device=disk.target_dev,
                reason=f"still attached after {attempts} requests of {timeout}s each"
                       " (a virtio-blk disk needs a guest OS to acknowledge)")
        finally:
            self._host.forget_device_removed(guest.uuid, key)

    @staticmethod
    def _gone(guest, disk):
        return guest.find_disk(alias=disk.alias, target_dev=disk.target_dev) is None

    def _removed_within(self, removed, guest, disk, timeout):
        """Whether the disk left the live domain within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not removed.wait(0.2):
            if self._gone(guest, disk):
                return True
            if time.monotonic() >= deadline:
                return False
        return True

    def swap_volume(self, old_connection_info, new_connection_info, instance, mountpoint,
                    resize_to_bytes=None):
        """Block copy onto the new volume, pivot, then rewrite the definition (swap.py).

        Either side may be a LUKS container QEMU decrypts (its ``<encryption>``
        in the disk XML): QEMU copies what the guest sees, through each side's key.
        """
        vol_id = block_device.volume_id(old_connection_info)
        guest = self._host.get_guest(instance["uuid"])
        if not guest.is_active():
            raise exception.Invalid(
                reason=f"instance {instance['uuid']} is not running: its disk cannot be copied")
        disk = guest.find_disk(alias=config.volume_alias(vol_id) if vol_id else None,
                               serial=vol_id, target_dev=block_device.strip_dev(mountpoint))
        if disk is None:
            raise exception.DiskNotFound(location=vol_id or mountpoint)
        new_disk = self.volume_drivers.get_config(new_connection_info, disk.target_dev,
                                                  disk_bus=disk.target_bus,
                                                  device_type=None)
        timeout = self.libvirt_conf.block_copy_timeout
        bandwidth = self.libvirt_conf.block_copy_bandwidth * 1024 * 1024
        resize_to_bytes = self._swap_target_size(guest, disk, new_disk, new_connection_info,
                                                 resize_to_bytes)
        try:
            # Before the copy: QEMU does not mirror into a larger disk.
            swap.grow_to(guest, disk.target_dev, resize_to_bytes)
            swap.copy(self.libvirt, guest, disk.target_dev, new_disk, timeout,
                      bandwidth_bytes=bandwidth)
        except self.libvirt.libvirtError as exc:
            raise self._libvirt_error(exc, f"copying volume {vol_id} failed") from exc
        try:
            swap.persist_disk(self._host, guest, new_disk)
        except self.libvirt.libvirtError as exc:
            # The guest runs on the new volume already: say so, do not undo.
            LOG.error("Volume %s of %s was copied, but updating the domain failed: %s",
                      vol_id, instance["uuid"], exc)

    def _swap_target_size(self, guest, disk, new_disk, new_connection_info, size_bytes):
        """The size the guest's disk must have to be mirrored onto ``new_disk``.

        QEMU mirrors only between equal sizes, and a destination QEMU
        decrypts shows the guest its LUKS payload, read from the volume
        (luks_payload.py): the disk is grown to that. When the payload is
        smaller than the disk the guest has now, the guest's data would not
        fit: refused here, before the copy starts (QEMU's own refusal only
        shows as a job that vanishes).
        """
        if not new_disk.encryption_secret_uuid:
            return size_bytes
        probe = config.parse_disks(
            f"<domain><devices>{new_disk.to_xml()}</devices></domain>")[0]
        payload = luks_payload.payload_size(self.conf, probe, new_connection_info)
        current = guest.block_capacity(disk.target_dev)
        if payload < current:
            raise exception.Invalid(
                reason=f"the new volume's encrypted payload ({payload} bytes: what is left "
                       f"of it under the LUKS header) is smaller than the disk "
                       f"{disk.target_dev} the guest has now ({current} bytes); the swap "
                       f"needs a larger volume")
        return payload

    def cancel_volume_swaps(self, instance):
        guest = self._host.find_guest(instance["uuid"])
        if guest is None or not guest.is_active():
            return
        for disk in guest.get_disks():
            swap.cancel(self.libvirt, guest, disk.target_dev)

    def connect_volume(self, connection_info):
        """The volume's driver connects it on this host (os-brick for block and file)."""
        self.volume_drivers.get(connection_info).connect_volume(connection_info)

    def disconnect_volume(self, connection_info):
        """Close the volume's decryption (secret, dm-crypt mapping), then disconnect it."""
        encryption.detach(self._host.get_connection(), self.libvirt, connection_info)
        self.volume_drivers.get(connection_info).disconnect_volume(connection_info)

    # -- encrypted volumes (encryption.py) ------------------------------------
    def check_volume_encryption(self, connection_info, metadata):
        return encryption.check(connection_info, metadata,
                                self.volume_drivers.get(connection_info).host_decrypts)

    def needs_key_to_extend(self, connection_info):
        return encryption.host_decrypted(connection_info)

    def attach_encryptor(self, connection_info, metadata, method, key, passphrase):
        encryption.attach(self._host.get_connection(), self.libvirt, connection_info,
                          metadata, method, key, passphrase, host=self.conf.host)

    def volume_secret_ids(self):
        try:
            return luks.volume_ids(self._host.get_connection(), self.libvirt,
                                   host=self.conf.host)
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() == self.libvirt.VIR_ERR_NO_SUPPORT:
                return []  # the embedded driver: no secrets at all
            raise

    def forget_volume_secret(self, volume_id):
        luks.undefine(self._host.get_connection(), self.libvirt, volume_id)

    # -- live migration (migration.py) ------------------------------------------
    def live_migration_target(self):
        """How a source reaches this host to migrate a guest here."""
        address = self.libvirt_conf.live_migration_inbound_addr or self.conf.my_ip
        return {"uri": self.libvirt_conf.live_migration_uri % address,
                "migrate_uri": f"tcp://{address}"}

    def pre_live_migration(self, instance, block_device_info):
        """On the destination: the files the arriving guest uses; what the source needs.

        The instance directory with the console log, and a config drive
        written here as a build would write it. A stopped leftover
        definition of the server (a move that died here) is dropped; a
        running one is refused.
        """
        leftover = self._host.find_guest(instance["uuid"])
        if leftover is not None:
            if leftover.is_active():
                raise exception.InstanceExists(name=domain_name(instance))
            leftover.undefine()
        domain = self._build_domain(instance, block_device_info)  # writes the config drive
        target = dict(self.live_migration_target(), console_log=domain.console.log_path,
                      instance_dir=instance_path.instance_dir(self.conf, instance["uuid"]))
        if instance.get("config_drive"):
            target["config_drive"] = config_drive.path(self.conf, instance["uuid"])
        return target

    def live_migration(self, instance, target, volumes, on_progress):
        """On the source: move the running guest to ``target`` (``pre_live_migration``'s).

        ``volumes``: volume id → the destination's connection info. Returns
        True when the guest was paused to complete (force-complete); raises
        ``LiveMigrationFailed``/``LiveMigrationAborted`` with the guest
        still running here.
        """
        guest = self._host.get_guest(instance["uuid"])
        if not guest.is_active():
            raise exception.InstanceInvalidState(
                instance_uuid=instance["uuid"], attr="power_state", state="shutdown",
                method="live migration")
        disks = {}
        for volume_id, info in volumes.items():
            disk = guest.find_disk(alias=config.volume_alias(volume_id), serial=volume_id)
            if disk is None:
                LOG.warning("Volume %s of %s has no disk to migrate", volume_id,
                            instance["uuid"])
                continue
            disks[volume_id] = self.volume_drivers.get_config(
                info, disk.target_dev, disk_bus=disk.target_bus).to_xml()
        xml = migration.destination_xml(guest.migratable_xml(), disks,
                                        console_log=target.get("console_log"),
                                        config_drive=target.get("config_drive"))
        params = migration.params(self.libvirt, xml, migrate_uri=target.get("migrate_uri"),
                                  bandwidth_mib=self.libvirt_conf.live_migration_bandwidth)
        return migration.run(self.libvirt, guest, target["uri"], params,
                             timeout=self.libvirt_conf.live_migration_completion_timeout,
                             on_progress=on_progress)

    def post_live_migration_at_destination(self, instance, resume):
        """The guest arrived: resume it if it was paused to complete; its power state."""
        guest = self._host.get_guest(instance["uuid"])
        if resume and guest.get_power_state() == power_state.PAUSED:
            guest.resume()
        return guest.get_power_state()

    def post_live_migration_at_source(self, instance):
        """The guest left: drop a definition libvirt kept here (it undefines it itself)."""
        guest = self._host.find_guest(instance["uuid"])
        if guest is not None and not guest.is_active():
            guest.undefine()

    def rollback_live_migration_at_destination(self, instance):
        """The move failed: no domain of the server may stay here."""
        self.destroy(instance)

    def runs_guest(self, instance):
        """Running or paused here; a domain that goes away meanwhile (a migration
        libvirtd just finished) does not."""
        guest = self._host.find_guest(instance["uuid"])
        try:
            return guest is not None and guest.is_active()
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() == self.libvirt.VIR_ERR_NO_DOMAIN:
                return False
            raise

    def wait_for_migration_job(self, instance, timeout):
        """libvirtd goes on with a peer-to-peer migration whose client died: wait for it."""
        guest = self._host.find_guest(instance["uuid"])
        deadline = None if timeout is None else time.monotonic() + timeout
        while guest is not None and guest.job_stats().get("type", 0) != 0:
            if deadline is not None and time.monotonic() >= deadline:
                LOG.warning("Aborting the migration job of %s left running", guest.uuid)
                guest.abort_job()
                deadline = None
            time.sleep(migration.POLL)

    def extend_volume(self, connection_info, instance, requested_size_bytes, key=None):
        """Make the guest see the new size; return the volume size its disk now fills.

        The volume's driver does the host's part first (os-brick's rescan for
        a block device). While QEMU holds the volume (running or paused) only
        QEMU may resize it, through blockResize, which also grows a file-backed
        volume. For a stopped domain a file-backed volume is grown here, a
        block device is left to the storage backend. For a volume QEMU decrypts
        the guest sees the volume less its LUKS header; the size returned
        counts the header, so it compares with the volume's. For a host block
        device os-brick decrypts, its dm-crypt mapping is grown after the
        rescan (``key``: the volume's, which that needs) and the guest is
        given the mapping's size.
        """
        self.check_extend()
        vol_id = block_device.volume_id(connection_info)
        guest = self._host.get_guest(instance["uuid"])
        active = guest.is_active()
        disk = guest.find_disk(alias=config.volume_alias(vol_id), serial=vol_id,
                               inactive=not active)
        if disk is None:
            raise exception.DiskNotFound(location=vol_id)
        # The host's side first (an iSCSI/FC/NVMe rescan): the size it finds
        # is what QEMU is told.
        new_size = self.volume_drivers.get(connection_info).extend_volume(
            connection_info, requested_size_bytes)
        header, size = 0, new_size
        if encryption.host_decrypted(connection_info):
            # The mapping QEMU opened is still its old size: grown to the
            # rescanned device less the LUKS header cryptsetup put inside
            # the volume, it is what the guest may now see.
            size = encryption.extend(connection_info, key)
            header = new_size - size
            if not active:
                # libvirt reads the mapping's size when the domain starts.
                return new_size
        elif disk.encrypted:
            # A disk QEMU decrypts shows the guest the LUKS payload: QEMU is
            # given the payload the grown volume now holds, read from it
            # (luks_payload.py; Cinder's layouts put the header inside the
            # size or on top of it), and the size returned counts the header.
            header, size = luks_payload.layout(self.conf, disk, connection_info)
            # A volume the compute grows itself (Cinder left it
            # ``extending``, 2.105: only QEMU may grow a file it holds) is
            # still its old size here: the guest is given the new size less
            # the header, as Nova does, and QEMU grows the volume to it.
            size = max(size, new_size - header)
        if active:
            if disk.encrypted and size <= guest.block_capacity(disk.target_dev):
                raise exception.VirtDriverError(
                    reason=f"volume {vol_id} holds {size} bytes of payload, no more than "
                           "the guest already sees: the volume has not grown")
            try:
                guest.block_resize(disk.target_dev, size)
                return guest.block_capacity(disk.target_dev) + header
            except self.libvirt.libvirtError as exc:
                raise self._libvirt_error(exc, f"resizing volume {vol_id} failed") from exc
        return _grow_offline(disk, new_size)


def _grow_offline(disk, requested_size_bytes):
    if disk.source_type == "file" and disk.source:
        # The file is the storage's (Cinder's file or NFS driver): an
        # unprivileged compute grows it through volumesvc's privsep daemon.
        return privsep_files.as_needed(privsep_files.grow_file,
                                       privsep_files.privileged_grow_file,
                                       disk.source, int(requested_size_bytes))
    if disk.source_type == "block" and disk.source and stat.S_ISBLK(
            os.stat(disk.source).st_mode):
        # A host block device is root's (root:disk 0660): an unprivileged
        # compute asks volumesvc's privsep daemon for its size.
        return privsep_files.as_needed(privsep_files.block_device_size,
                                       privsep_files.privileged_block_device_size,
                                       disk.source)
    return requested_size_bytes
