"""Encrypted volumes in the libvirt driver: QEMU's native LUKS and os-brick's encryptors.

QEMU-opened disks (``local`` files here) run on the fake libvirt, which
keeps secrets as libvirtd does and, like QEMU, refuses a LUKS disk whose
secret is missing. Host block devices run at os-brick's boundary: the
connector's host calls are replaced (as in test_volume_brick.py) and so is
the one function os-brick's encryptors run commands through
(``os_brick.privileged.rootwrap.execute``), by a small cryptsetup that keeps
which devices hold a LUKS header and how big a mapping is (``blockdev``);
the encryptor os-brick's factory picks, its format-on-first-use decision,
its resize of a grown mapping and its commands are os-brick's own.
"""

import binascii
import os
import xml.etree.ElementTree as ET

import pytest
from castellan.common.objects import passphrase as castellan_passphrase
from castellan.common.objects import symmetric_key
from os_brick.initiator.connectors import iscsi
from os_brick.privileged import rootwrap
from oslo_concurrency import processutils

from tests.fixtures.cinder import FakeCinder
from tests.fixtures.keymgr import FakeKeyManager
from tests.unit.virt import brick_helpers
from volumesvc import context, exception, keymgr
from volumesvc.compute import encryption as compute_encryption
from volumesvc.virt.libvirt import encryption

VOL = brick_helpers.VOL
SYSTEM = "qemu:///system"
KEY = bytes(range(32))
HEX = binascii.hexlify(KEY).decode()
LUKS = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256,
        "control_location": "front-end", "encryption_key_id": "k-1"}


@pytest.fixture
def system_conf(conf):
    conf.set_override("connection_uri", SYSTEM, group="libvirt")
    return conf


def _key(value=KEY):
    return symmetric_key.SymmetricKey("AES", len(value) * 8, value)


def _open(driver, info, metadata=LUKS, key=None):
    key = key or _key()
    method = driver.check_volume_encryption(info, metadata)
    driver.connect_volume(info)
    driver.attach_encryptor(info, metadata, method, key, keymgr.passphrase(key))
    return method


def _volume_secrets(driver):
    conn = driver.host.get_connection()
    return {s.usageID(): s for s in conn.listAllSecrets()
            if s.usageType() == driver.libvirt.VIR_SECRET_USAGE_TYPE_VOLUME}


def _disk(driver, instance, volume_id):
    root = ET.fromstring(driver.get_domain_xml(instance))
    return {d.findtext("serial"): d for d in root.findall("./devices/disk")}[volume_id]


# -- the passphrase ---------------------------------------------------------------------

def test_passphrase_is_the_keys_bytes_in_hex_unless_the_key_is_a_passphrase():
    assert keymgr.passphrase(_key()) == HEX
    assert keymgr.passphrase(castellan_passphrase.Passphrase(b"typed words")) == "typed words"


# -- QEMU's native LUKS ---------------------------------------------------------------

def test_native_luks_secret_defined_named_by_the_disk_and_gone_with_the_connection(
        system_conf, driver, instance, make_volume):
    info = make_volume(encrypted=True)
    vol = info["serial"]
    driver.spawn(instance, None)
    assert _open(driver, info) == "qemu"
    secret = _volume_secrets(driver)[vol]
    assert secret.value == HEX.encode()  # what QEMU opens the LUKS header with
    assert ET.fromstring(secret.XMLDesc()).get("private") == "yes"
    assert info["encryption"] == {"method": "qemu", "volume_id": vol,
                                 "secret_uuid": secret.UUIDString(), **LUKS}

    driver.attach_volume(info, instance, "/dev/sdb")
    encryption = _disk(driver, instance, vol).find("source/encryption")
    assert encryption.get("format") == "luks"
    assert encryption.find("secret").attrib == {"type": "passphrase",
                                                "uuid": secret.UUIDString()}

    driver.detach_volume(info, instance, "/dev/sdb")
    assert vol in _volume_secrets(driver)  # until the host connection goes
    driver.disconnect_volume(info)
    assert vol not in _volume_secrets(driver)


def test_a_swapped_in_volume_has_its_own_secret_whatever_serial_it_keeps(
        system_conf, driver, make_volume):
    """A swap's new connection keeps the old serial; its secret is the new volume's.

    Keyed by the serial it would overwrite the old volume's secret with the
    new key, and the old volume's detach would take the new one's away.
    """
    old = make_volume(encrypted=True)
    _open(driver, old, key=_key(b"o" * 32))
    new = make_volume(encrypted=True)
    new_id = new["serial"]
    new["serial"] = old["serial"]
    key = _key()
    driver.connect_volume(new)
    driver.attach_encryptor(new, {**LUKS, "volume_id": new_id}, "qemu", key,
                            keymgr.passphrase(key))
    secrets = _volume_secrets(driver)
    assert secrets[new_id].value == HEX.encode()
    assert secrets[old["serial"]].value == binascii.hexlify(b"o" * 32)
    assert new["encryption"]["volume_id"] == new_id
    driver.disconnect_volume(old)
    assert set(_volume_secrets(driver)) == {new_id}
    driver.disconnect_volume(new)
    assert _volume_secrets(driver) == {}


def test_native_luks_disk_without_its_secret_is_refused_by_the_hypervisor(
        system_conf, driver, instance, make_volume):
    """The fake refuses like QEMU: the secret must be there before the disk."""
    info = make_volume(encrypted=True)
    driver.spawn(instance, None)
    _open(driver, info)
    driver.forget_volume_secret(info["serial"])
    with pytest.raises(exception.VirtDriverError, match="secret"):
        driver.attach_volume(info, instance, "/dev/sdb")


def test_one_secret_per_volume_on_a_host_whoever_attaches_it(system_conf, driver,
                                                             make_volume):
    info = make_volume(encrypted=True, multiattach=True)
    _open(driver, info)
    second = {**info, "data": dict(info["data"])}
    _open(driver, second)
    assert second["encryption"]["secret_uuid"] == info["encryption"]["secret_uuid"]
    assert list(_volume_secrets(driver)) == [info["serial"]]
    assert driver.volume_secret_ids() == [info["serial"]]


@pytest.mark.parametrize("provider", ["plain", "luks2", "CryptsetupEncryptor", "vendor-x",
                                      None])
def test_qemu_opened_disk_refuses_what_native_luks_cannot_open(system_conf, driver,
                                                                make_volume, provider):
    info = make_volume(encrypted=True)
    with pytest.raises(exception.VolumeEncryptionNotSupported) as caught:
        driver.check_volume_encryption(info, {**LUKS, "provider": provider})
    assert caught.value.code == 400
    assert "QEMU (native LUKS)" in str(caught.value) and info["serial"] in str(caught.value)


@pytest.mark.parametrize("provider", ["luks", "LuksEncryptor",
                                      "nova.volume.encryptors.luks.LuksEncryptor"])
def test_luks_under_every_name_cinder_has_used_is_native(system_conf, driver, make_volume,
                                                         provider):
    assert driver.check_volume_encryption(make_volume(), {**LUKS, "provider": provider}) \
        == "qemu"


def test_rbd_plain_is_refused(system_conf, driver):
    info = {"driver_volume_type": "rbd", "serial": VOL,
            "data": {"name": "volumes/volume-" + VOL, "encrypted": True}}
    with pytest.raises(exception.VolumeEncryptionNotSupported, match="rbd volume"):
        driver.check_volume_encryption(info, {**LUKS, "provider": "plain"})
    assert driver.check_volume_encryption(info, LUKS) == "qemu"


def test_native_luks_needs_the_secret_api(driver, make_volume):
    """The embedded driver (the default URI) has no secrets: a clear 400, nothing left."""
    info = make_volume(encrypted=True)
    with pytest.raises(exception.VolumeEncryptionNotSupported, match="no secret API"):
        _open(driver, info)
    assert "encryption" not in info
    assert driver.volume_secret_ids() == []


def _luks1_file(info, header, payload):
    """Make the volume's file a LUKS1 container: its header (what QEMU reads of it), then
    ``payload`` bytes, as qemu-img writes one (the header on top of the size)."""
    path = info["data"]["device_path"]
    head = bytearray(108)
    head[:6] = b"LUKS\xba\xbe"
    head[6:8] = (1).to_bytes(2, "big")
    head[104:108] = (header // 512).to_bytes(4, "big")
    with open(path, "r+b") as f:
        f.write(head)
    os.truncate(path, header + payload)


def test_an_encrypted_file_the_compute_grows_itself_gets_the_new_size_less_its_header(
        system_conf, driver, instance, make_volume):
    """A 2.105 extend: Cinder left the file its old size, only QEMU may grow it.

    The payload read from the file is still the old one; the guest is given
    the new size less the header (as Nova does), not refused as "not grown",
    and the size returned (what Cinder's size is checked against) counts
    the header.
    """
    gib, header = 1 << 30, 2 << 20
    info = make_volume(encrypted=True)
    _luks1_file(info, header, gib)
    driver.spawn(instance, None)
    _open(driver, info)
    driver.attach_volume(info, instance, "/dev/sdb")

    assert driver.extend_volume(info, instance, 2 * gib) == 2 * gib


def test_an_encrypted_volume_that_did_not_grow_is_refused(system_conf, driver, instance,
                                                          make_volume):
    """Asked for the size it already has (its header on top), the disk is left as it is."""
    gib, header = 1 << 30, 2 << 20
    info = make_volume(encrypted=True)
    _luks1_file(info, header, gib)
    driver.spawn(instance, None)
    _open(driver, info)
    driver.attach_volume(info, instance, "/dev/sdb")

    with pytest.raises(exception.VirtDriverError, match="has not grown"):
        driver.extend_volume(info, instance, gib)


# -- os-brick's encryptors on host block devices ------------------------------------------

class FakeCryptsetup:
    """os-brick's command runner for cryptsetup and ln: keeps LUKS headers per device.

    Mappings appear as files in ``mapper_dir`` (the test's /dev/mapper) and
    ``ln`` really points the device's path at them, as on a host.
    """

    #: what cryptsetup's LUKS1 format puts before the payload, inside the device
    HEADER = 2 << 20

    def __init__(self, mapper_dir, luks_devices=()):
        self.mapper_dir = mapper_dir
        self.luks = {dev: None for dev in luks_devices}  # device -> its passphrase
        self.commands = []  # (argv, process_input)
        self.mappings = {}  # dm name -> device
        #: the device under every mapping; ``cryptsetup resize`` grows a
        #: mapping to it less the header, ``blockdev`` reports the mapping's
        self.device_size = brick_helpers.GiB
        self.mapping_size = brick_helpers.GiB - self.HEADER

    def _map(self, name, device):
        self.mappings[name] = device
        (self.mapper_dir / name).write_bytes(b"")

    def __call__(self, *cmd, process_input=None, check_exit_code=True, **kwargs):
        self.commands.append((cmd, process_input))
        if cmd[0] == "ln":
            target, link = cmd[-2], cmd[-1]
            os.remove(link)
            os.symlink(str(self.mapper_dir / os.path.basename(target)), link)
            return "", ""
        if cmd[0] == "blockdev":
            assert cmd[1] == "--getsize64", cmd
            return f"{self.mapping_size}\n", ""
        verb = cmd[1] if cmd[1] != "--batch-mode" else cmd[2]
        device = cmd[-1]
        if verb == "isLuks":
            if device not in self.luks:
                raise processutils.ProcessExecutionError(exit_code=1, cmd=" ".join(cmd))
        elif verb == "luksFormat":
            self.luks[device] = process_input
        elif verb == "luksOpen":
            device, name = cmd[-2], cmd[-1]
            if device not in self.luks:
                raise processutils.ProcessExecutionError(exit_code=1, cmd=" ".join(cmd))
            if self.luks[device] not in (None, process_input):
                raise processutils.ProcessExecutionError(exit_code=2, cmd="wrong key")
            self._map(name, device)
        elif verb == "create":
            self._map(cmd[-2], device)
        elif verb in ("luksClose", "remove"):
            self.mappings.pop(cmd[2], None)
            (self.mapper_dir / cmd[2]).unlink(missing_ok=True)
        elif verb == "resize":
            self.mapping_size = self.device_size - self.HEADER
        elif verb == "status":
            raise processutils.ProcessExecutionError(exit_code=4, cmd=" ".join(cmd))
        return "", ""

    def argv(self):
        return [c for c, _input in self.commands]


@pytest.fixture
def cryptsetup(monkeypatch, tmp_path):
    mapper_dir = tmp_path / "mapper"
    mapper_dir.mkdir()
    monkeypatch.setattr(encryption, "MAPPER_DIR", str(mapper_dir))

    def install(luks_devices=()):
        fake = FakeCryptsetup(mapper_dir, luks_devices)
        monkeypatch.setattr(rootwrap, "execute", fake)
        return fake
    return install



@pytest.fixture
def iscsi_volume(host_calls):
    """(connection info of an encrypted iSCSI volume, its device, the connector's calls)."""
    install, device = host_calls
    calls = install(iscsi.ISCSIConnector)
    info = brick_helpers.connection_info("iscsi", {**brick_helpers.CONNECTIONS["iscsi"][1],
                                       "encrypted": True})
    return info, device, calls


def test_iscsi_volume_cinder_did_not_format_is_formatted_opened_and_closed(
        driver, instance, iscsi_volume, cryptsetup):
    info, device, calls = iscsi_volume
    crypt = cryptsetup()
    driver.spawn(instance, None)
    assert _open(driver, info) == "os-brick"
    assert crypt.argv() == [
        ("cryptsetup", "luksOpen", "--key-file=-", device, "crypt-sdq"),
        ("cryptsetup", "isLuks", "--verbose", device),
        ("cryptsetup", "--batch-mode", "luksFormat", "--type", "luks1", "--key-file=-",
         "--cipher", "aes-xts-plain64", "--key-size", 256, device),
        ("cryptsetup", "luksOpen", "--key-file=-", device, "crypt-sdq"),
        ("ln", "--symbolic", "--force", "/dev/mapper/crypt-sdq", device)]
    assert crypt.luks[device] == HEX  # formatted with the passphrase from the key
    assert {i for _c, i in crypt.commands if i} == {HEX}
    # No key, no passphrase.
    assert info["encryption"] == {"method": "os-brick", "volume_id": info["serial"], **LUKS}

    driver.attach_volume(info, instance, "/dev/sdb")
    disk = _disk(driver, instance, VOL)
    assert disk.find("source").get("dev") == device  # now os-brick's plaintext mapping
    assert disk.find("source/encryption") is None  # QEMU does not decrypt it again

    driver.detach_volume(info, instance, "/dev/sdb")
    driver.disconnect_volume(info)
    assert crypt.argv()[-1] == ("cryptsetup", "luksClose", "crypt-sdq")
    assert crypt.mappings == {}
    assert len(calls["disconnect"].calls) == 1  # the mapping closed before the session


def test_iscsi_volume_cinder_formatted_is_opened_not_formatted(driver, iscsi_volume,
                                                               cryptsetup):
    info, device, _calls = iscsi_volume
    crypt = cryptsetup(luks_devices=[device])
    _open(driver, info)
    assert [c[1] for c in crypt.argv()] == ["luksOpen", "--symbolic"]


def test_iscsi_wrong_key_fails_clearly(driver, iscsi_volume, cryptsetup):
    info, device, _calls = iscsi_volume
    crypt = cryptsetup(luks_devices=[device])
    crypt.luks[device] = "another passphrase"
    with pytest.raises(exception.VirtDriverError, match=f"opening encrypted volume {VOL}"):
        _open(driver, info)
    assert "encryption" not in info


def test_iscsi_plain_is_cryptsetup_create(driver, iscsi_volume, cryptsetup):
    info, device, _calls = iscsi_volume
    crypt = cryptsetup()
    plain = {**LUKS, "provider": "plain", "cipher": "aes-cbc-essiv:sha256", "key_size": 128}
    assert _open(driver, info, plain) == "os-brick"
    assert crypt.argv()[0] == ("cryptsetup", "create", "--key-file=-", "--cipher",
                               "aes-cbc-essiv:sha256", "--key-size", 128, "crypt-sdq",
                               device)
    driver.disconnect_volume(info)
    assert crypt.argv()[-1] == ("cryptsetup", "remove", "crypt-sdq")


def test_iscsi_unknown_provider_refused_before_anything_runs(driver, iscsi_volume,
                                                             cryptsetup):
    info, _device, calls = iscsi_volume
    crypt = cryptsetup()
    with pytest.raises(exception.VolumeEncryptionNotSupported, match="os-brick"):
        driver.check_volume_encryption(info, {**LUKS, "provider": "vendor-x"})
    assert crypt.commands == [] and calls["connect"].calls == []


def test_a_second_server_on_the_host_reuses_the_open_mapping(driver, iscsi_volume,
                                                             cryptsetup):
    """Multiattach: os-brick would find no LUKS header on the plaintext and format it."""
    info, device, calls = iscsi_volume
    crypt = cryptsetup()
    _open(driver, info)
    ran = len(crypt.commands)
    second = brick_helpers.connection_info("iscsi", {**brick_helpers.CONNECTIONS["iscsi"][1],
                                         "encrypted": True})
    _open(driver, second)
    assert len(calls["connect"].calls) == 2  # connected again, as every attach does
    assert len(crypt.commands) == ran  # but neither opened nor formatted again
    assert second["encryption"] == info["encryption"]
    assert os.path.realpath(device).endswith("/mapper/crypt-sdq")


def test_a_swap_from_or_onto_a_volume_os_brick_opens_is_refused_before_it_connects(
        conf, driver, iscsi_volume, cryptsetup, make_volume):
    info, _device, calls = iscsi_volume
    crypt = cryptsetup()
    cinder = FakeCinder()
    store = FakeKeyManager()
    ctx = context.RequestContext(user_id="u1", project_id="p1")
    key_id = store.create_key(ctx)
    cinder.create(ctx, 1, "new", "", volume_id=VOL)
    cinder.set_encryption(VOL, key_id, **{k: v for k, v in LUKS.items()
                                          if k != "encryption_key_id"})
    keys = keymgr.KeyManager(conf, backend=store)
    plain = make_volume()
    with pytest.raises(exception.EncryptedSwapNotSupported, match="os-brick"):
        compute_encryption.prepare_swap(ctx, cinder=cinder, keys=keys, driver=driver,
                                        old=(plain["serial"], plain), new=(VOL, info))
    # The old side is refused on what its attach recorded, before Cinder is asked.
    opened = {**plain, "encryption": {"method": "os-brick", **LUKS}}
    with pytest.raises(exception.EncryptedSwapNotSupported, match="os-brick"):
        compute_encryption.prepare_swap(ctx, cinder=None, keys=None, driver=None,
                                        old=(plain["serial"], opened), new=(VOL, info))
    assert crypt.commands == [] and calls["connect"].calls == []


# -- an extend of an attached volume os-brick decrypts ----------------------------------------

def test_an_extended_iscsi_volume_grows_its_mapping_and_the_guest_sees_the_payload(
        driver, instance, iscsi_volume, cryptsetup):
    """Rescan, then os-brick's ``cryptsetup resize`` with the key, then QEMU's resize.

    The host's rescan grows the device; the dm-crypt mapping QEMU has open
    is still its old size until os-brick resizes it (with the passphrase,
    which LUKS2 needs), and the guest is given the mapping's new size: the
    volume less the header cryptsetup wrote inside it. The size returned
    counts the header, so it compares with the size Cinder gave the volume.
    """
    info, device, calls = iscsi_volume
    crypt = cryptsetup(luks_devices=[device])
    driver.spawn(instance, None)
    _open(driver, info)
    driver.attach_volume(info, instance, "/dev/sdb")
    assert driver.needs_key_to_extend(info)
    ran = len(crypt.commands)

    crypt.device_size = 2 * brick_helpers.GiB  # what the rescan finds
    assert driver.extend_volume(info, instance, 2 * brick_helpers.GiB, key=_key()) \
        == 2 * brick_helpers.GiB
    [(_c, (extend_data,), _kw)] = calls["extend"].calls
    assert extend_data["device_path"] == device
    assert crypt.commands[ran:] == [
        (("cryptsetup", "resize", device), HEX),
        (("blockdev", "--getsize64", device), None)]
    guest = driver.host.get_guest(instance["uuid"])
    assert guest.block_capacity("sdb") == 2 * brick_helpers.GiB - FakeCryptsetup.HEADER


def test_an_extend_of_a_plain_mapping_is_refused_before_any_command(
        driver, instance, iscsi_volume, cryptsetup):
    """os-brick cannot resize a plain mapping: a clear error, the guest's disk unchanged."""
    info, _device, _calls = iscsi_volume
    crypt = cryptsetup()
    plain = {**LUKS, "provider": "plain", "cipher": "aes-cbc-essiv:sha256", "key_size": 128}
    driver.spawn(instance, None)
    _open(driver, info, plain)
    driver.attach_volume(info, instance, "/dev/sdb")
    ran = len(crypt.commands)
    with pytest.raises(exception.VirtDriverError, match="plain dm-crypt mapping"):
        driver.extend_volume(info, instance, 2 * brick_helpers.GiB, key=_key())
    assert crypt.commands[ran:] == []
    assert driver.host.get_guest(instance["uuid"]).block_capacity("sdb") == 0


def test_a_failed_resize_of_the_mapping_is_a_driver_error_naming_the_volume(
        driver, instance, iscsi_volume, cryptsetup, monkeypatch):
    info, device, _calls = iscsi_volume
    crypt = cryptsetup(luks_devices=[device])
    driver.spawn(instance, None)
    _open(driver, info)
    driver.attach_volume(info, instance, "/dev/sdb")

    def refuse(*cmd, **kwargs):
        if cmd[:2] == ("cryptsetup", "resize"):
            raise processutils.ProcessExecutionError(exit_code=1, cmd="cryptsetup resize")
        return crypt(*cmd, **kwargs)
    monkeypatch.setattr(rootwrap, "execute", refuse)
    with pytest.raises(exception.VirtDriverError,
                       match=f"resizing the dm-crypt mapping of encrypted volume {VOL}"):
        driver.extend_volume(info, instance, 2 * brick_helpers.GiB, key=_key())


def test_the_compute_reads_the_key_only_for_a_volume_the_host_decrypts(
        conf, system_conf, driver, iscsi_volume, cryptsetup, make_volume):
    """The key an extend needs, read as the user with what the attach recorded."""
    info, device, _calls = iscsi_volume
    cryptsetup(luks_devices=[device])
    store = FakeKeyManager()
    ctx = context.RequestContext(user_id="u1", project_id="p1")
    key_id = store.create_key(ctx)
    keys = keymgr.KeyManager(conf, backend=store)
    _open(driver, info, {**LUKS, "encryption_key_id": key_id})
    key = compute_encryption.key_to_extend(ctx, keys=keys, driver=driver,
                                           connection_info=info)
    assert key.get_encoded() == store.get(ctx, key_id).get_encoded()

    native = make_volume(encrypted=True)
    _open(driver, native)
    plain_volume = make_volume()
    for other in (native, plain_volume):
        assert compute_encryption.key_to_extend(ctx, keys=None, driver=driver,
                                                connection_info=other) is None


def test_a_stopped_servers_mapping_is_grown_too(driver, instance, iscsi_volume, cryptsetup):
    """The host connection stays while the server is stopped: its mapping grows now.

    QEMU reads the mapping's size when the domain starts again; the size
    returned is the grown volume's, which Cinder's size is checked against.
    """
    info, device, _calls = iscsi_volume
    crypt = cryptsetup(luks_devices=[device])
    driver.spawn(instance, None)
    _open(driver, info)
    driver.attach_volume(info, instance, "/dev/sdb")
    driver.power_off(instance)
    crypt.device_size = 2 * brick_helpers.GiB
    assert driver.extend_volume(info, instance, 2 * brick_helpers.GiB, key=_key()) \
        == 2 * brick_helpers.GiB
    assert (("cryptsetup", "resize", device), HEX) in crypt.commands
    assert crypt.mapping_size == 2 * brick_helpers.GiB - FakeCryptsetup.HEADER
