"""The compute defines the Ceph secret QEMU needs for RBD volumes at start-up.

Run through the public path, ``LibvirtDriver.init_host``, on the fake
libvirt (libvirt's ``test:///`` driver has no secret API). What is checked is
what QEMU would later be handed: the secret's UUID, usage type, and a value
that is the *decoded* key.
"""

import base64
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.fixtures import virt as virt_fixtures
from volumesvc import exception
from volumesvc.virt import fake

SYSTEM = "qemu:///system"
KEY = base64.b64encode(b"sixteen-byte-key" * 2).decode()
OTHER_KEY = base64.b64encode(b"another-key-0123" * 2).decode()


@pytest.fixture
def libvirt():
    """One fake libvirt for the test: like one host, seen by several computes."""
    return virt_fixtures.RecordingLibvirt()


@pytest.fixture
def secret_uuid():
    return str(uuid.uuid4())


@pytest.fixture
def rbd_conf(conf, tmp_path, secret_uuid):
    keyring = tmp_path / "ceph.client.cinder.keyring"
    keyring.write_text(f"[client.cinder]\n\tkey = {KEY}\n\tcaps mon = \"profile rbd\"\n")
    conf.set_override("connection_uri", SYSTEM, group="libvirt")
    conf.set_override("rbd_secret_uuid", secret_uuid, group="libvirt")
    conf.set_override("rbd_keyring", str(keyring), group="libvirt")
    return conf


def start_compute(conf, libvirt):
    drv = fake.FakeDriver(conf, libvirt_module=libvirt)
    drv.init_host(conf.host)
    return drv


def secrets_on(libvirt, uri=SYSTEM):
    return libvirt.open(uri).listAllSecrets()


def test_secret_defined_with_decoded_key_at_start(rbd_conf, libvirt, secret_uuid):
    start_compute(rbd_conf, libvirt)
    (secret,) = secrets_on(libvirt)
    assert secret.UUIDString() == secret_uuid
    root = ET.fromstring(secret.XMLDesc(0))
    assert root.get("private") == "yes" and root.get("ephemeral") == "no"
    assert root.find("usage").get("type") == "ceph"
    assert root.findtext("usage/name") == f"client.cinder {secret_uuid}"
    # The raw key bytes, not its base64 text (QEMU fails on the latter).
    assert secret.value == base64.b64decode(KEY)


def test_every_start_is_idempotent_and_takes_a_rotated_key(rbd_conf, libvirt, tmp_path):
    start_compute(rbd_conf, libvirt)
    start_compute(rbd_conf, libvirt)
    assert len(secrets_on(libvirt)) == 1
    (tmp_path / "ceph.client.cinder.keyring").write_text(
        f"[client.cinder]\nkey = {OTHER_KEY}\n")
    start_compute(rbd_conf, libvirt)
    (secret,) = secrets_on(libvirt)
    assert secret.value == base64.b64decode(OTHER_KEY)


def test_key_file_with_user(conf, libvirt, tmp_path, secret_uuid):
    key_file = tmp_path / "cinder.key"
    key_file.write_text(KEY + "\n")
    conf.set_override("connection_uri", SYSTEM, group="libvirt")
    conf.set_override("rbd_secret_uuid", secret_uuid, group="libvirt")
    conf.set_override("rbd_key_file", str(key_file), group="libvirt")
    conf.set_override("rbd_user", "volumes-user", group="libvirt")
    start_compute(conf, libvirt)
    (secret,) = secrets_on(libvirt)
    assert secret.value == base64.b64decode(KEY)
    assert ET.fromstring(secret.XMLDesc(0)).findtext("usage/name") == \
        f"client.volumes-user {secret_uuid}"


def test_rbd_user_chooses_the_keyring_entry(rbd_conf, libvirt, tmp_path):
    (tmp_path / "ceph.client.cinder.keyring").write_text(
        f"[client.glance]\nkey = {OTHER_KEY}\n[client.cinder]\nkey = {KEY}\n")
    rbd_conf.set_override("rbd_user", "cinder", group="libvirt")
    start_compute(rbd_conf, libvirt)
    (secret,) = secrets_on(libvirt)
    assert secret.value == base64.b64decode(KEY)


def test_no_key_source_defines_nothing(conf, libvirt, secret_uuid):
    conf.set_override("connection_uri", SYSTEM, group="libvirt")
    conf.set_override("rbd_secret_uuid", secret_uuid, group="libvirt")
    start_compute(conf, libvirt)
    assert secrets_on(libvirt) == []


def test_embedded_driver_is_a_clear_config_error(rbd_conf, libvirt, tmp_path):
    rbd_conf.set_override("connection_uri", f"qemu:///embed?root={tmp_path}/lv",
                          group="libvirt")
    with pytest.raises(exception.ConfigInvalid, match="qemu:///system"):
        start_compute(rbd_conf, libvirt)


@pytest.mark.parametrize("setup, message", [
    (lambda c, p: c.clear_override("rbd_secret_uuid", group="libvirt"), "rbd_secret_uuid"),
    (lambda c, p: c.set_override("rbd_secret_uuid", "not-a-uuid", group="libvirt"),
     "not a UUID"),
    (lambda c, p: c.set_override("rbd_key_file", str(p / "k"), group="libvirt"),
     "both set"),
    (lambda c, p: (p / "ceph.client.cinder.keyring").write_text(
        "[client.cinder]\nkey = not base64!\n"), "not a base64"),
    (lambda c, p: (p / "ceph.client.cinder.keyring").write_text(
        f"[client.a]\nkey = {KEY}\n[client.b]\nkey = {KEY}\n"), "2 client entries"),
    (lambda c, p: c.set_override("rbd_user", "nobody", group="libvirt"), "client.nobody"),
    (lambda c, p: c.set_override("rbd_keyring", str(p / "missing"), group="libvirt"),
     "missing"),
])
def test_bad_configuration_fails_the_start(rbd_conf, libvirt, tmp_path, setup, message):
    setup(rbd_conf, tmp_path)
    with pytest.raises(exception.ConfigInvalid, match=message):
        start_compute(rbd_conf, libvirt)
    assert secrets_on(libvirt) == []


def test_key_file_without_user_is_refused(conf, libvirt, tmp_path, secret_uuid):
    key_file = tmp_path / "k"
    key_file.write_text(KEY)
    conf.set_override("connection_uri", SYSTEM, group="libvirt")
    conf.set_override("rbd_secret_uuid", secret_uuid, group="libvirt")
    conf.set_override("rbd_key_file", str(key_file), group="libvirt")
    with pytest.raises(exception.ConfigInvalid, match="rbd_user"):
        start_compute(conf, libvirt)


def test_existing_secret_of_another_usage_is_not_overwritten(rbd_conf, libvirt,
                                                             secret_uuid):
    conn = libvirt.open(SYSTEM)
    conn.secretDefineXML(f"<secret><uuid>{secret_uuid}</uuid><usage type='volume'>"
                         f"<volume>/var/lib/x.img</volume></usage></secret>")
    with pytest.raises(exception.ConfigInvalid, match="usage type 'volume'"):
        start_compute(rbd_conf, libvirt)
    (secret,) = secrets_on(libvirt)
    assert secret.value is None


def test_usage_name_taken_by_another_uuid_is_a_config_error(rbd_conf, libvirt):
    other = str(uuid.uuid4())
    libvirt.open(SYSTEM).secretDefineXML(
        f"<secret><uuid>{other}</uuid><usage type='ceph'><name>client.cinder "
        f"{rbd_conf.libvirt.rbd_secret_uuid}</name>"
        f"</usage></secret>")
    with pytest.raises(exception.ConfigInvalid, match="cannot define"):
        start_compute(rbd_conf, libvirt)
