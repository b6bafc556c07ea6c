"""How the compute reads a LUKS header (extending an encrypted volume).

qemu-img for an RBD image; the compute itself (or volumesvc's privsep
daemon) for a file or block device.
"""

import json
import os
import subprocess

import pytest

from volumesvc import exception
from volumesvc.virt.libvirt import config, luks_payload

VOL = "5f0a7e3c-8a4e-4d53-9d1e-0c6f3b1c2a11"
RBD_XML = f"""<domain><devices><disk type='network' device='disk'>
  <source protocol='rbd' name='volumes/volume-{VOL}'>
    <host name='192.0.2.40' port='6789'/>
    <encryption format='luks'><secret type='passphrase' uuid='x'/></encryption>
  </source><target dev='sdb' bus='scsi'/><serial>{VOL}</serial></disk>
  <disk type='file' device='disk'><source file='/v/plain'/><target dev='sdc' bus='scsi'/>
  <serial>plain</serial></disk></devices></domain>"""
RBD_INFO = {"driver_volume_type": "rbd", "data": {
    "name": f"volumes/volume-{VOL}", "hosts": ["192.0.2.40", "192.0.2.41"],
    "ports": ["6789", "3300"], "auth_username": "cinder"}}


def test_the_domain_xml_says_which_disks_qemu_decrypts():
    encrypted, plain = config.parse_disks(RBD_XML)
    assert (encrypted.encrypted, plain.encrypted) == (True, False)


def test_an_rbd_volume_is_read_with_the_hosts_key_file_as_a_private_keyring(conf, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("AQBzc2VjcmV0a2V5\n")
    conf.set_override("rbd_key_file", str(key_file), group="libvirt")
    (disk, _) = config.parse_disks(RBD_XML)
    target = luks_payload._target(conf, disk, RBD_INFO, str(tmp_path))
    keyring = tmp_path / "keyring"
    assert target == (f"rbd:volumes/volume-{VOL}:id=cinder:keyring={keyring}"
                      r":mon_host=192.0.2.40\:6789;192.0.2.41\:3300")
    assert keyring.read_text() == "[client.cinder]\n\tkey = AQBzc2VjcmV0a2V5\n"
    assert oct(os.stat(keyring).st_mode & 0o777) == "0o600"


def test_a_configured_keyring_is_used_as_it_is(conf, tmp_path):
    conf.set_override("rbd_keyring", "/etc/ceph/ceph.client.cinder.keyring", group="libvirt")
    (disk, _) = config.parse_disks(RBD_XML)
    assert ":keyring=/etc/ceph/ceph.client.cinder.keyring:" in luks_payload._target(
        conf, disk, RBD_INFO, str(tmp_path))


def test_an_rbd_volume_without_a_key_is_a_clear_error(conf, tmp_path):
    (disk, _) = config.parse_disks(RBD_XML)
    with pytest.raises(exception.VirtDriverError, match="rbd_keyring or rbd_key_file"):
        luks_payload._target(conf, disk, RBD_INFO, str(tmp_path))


def test_a_local_disk_without_a_luks_header_is_a_clear_error(conf, tmp_path):
    path = tmp_path / "plain"
    path.write_bytes(b"\0" * 4096)
    (disk,) = config.parse_disks(
        f"<domain><devices><disk type='file' device='disk'><source file='{path}'/>"
        f"<target dev='sdc'/><serial>plain</serial></disk></devices></domain>")
    with pytest.raises(exception.VirtDriverError, match="plain: no LUKS header"):
        luks_payload.layout(conf, disk, {})


def test_the_payload_is_read_from_the_container_not_worked_out_from_a_size(conf, tmp_path):
    """Whatever made the container: the header and what is left, as qemu-img sees them."""
    path = tmp_path / "volume"
    path.write_bytes(b"")
    os.truncate(path, 10 << 20)
    subprocess.run(["cryptsetup", "--batch-mode", "luksFormat", "--type", "luks1",
                    "--pbkdf-force-iterations", "1000", "--key-file=-", str(path)],
                   input="k", text=True, check=True, capture_output=True)
    (disk,) = config.parse_disks(
        f"<domain><devices><disk type='file' device='disk'><source file='{path}'>"
        f"<encryption format='luks'><secret type='passphrase' uuid='x'/></encryption>"
        f"</source><target dev='sdb'/><serial>{VOL}</serial></disk></devices></domain>")
    header, payload = luks_payload.layout(conf, disk, {})
    assert 0 < header < 10 << 20
    assert payload == luks_payload.payload_size(conf, disk, {}) == (10 << 20) - header
    # The same two numbers QEMU's own reader gives (the compute no longer runs it
    # for a file: volumesvc/privsep/files.py reads the header).
    info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", str(path)],
                                     capture_output=True, text=True, check=True,
                                     timeout=60).stdout)
    assert (header, payload) == (info["format-specific"]["data"]["payload-offset"],
                                 info["virtual-size"])
