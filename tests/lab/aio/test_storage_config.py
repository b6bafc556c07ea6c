"""The all-in-one's storage choice reaches Cinder, Glance and the computes as configuration."""

import configparser
import os
import types

from volumesvc_aio import cinder, glance
from volumesvc_aio import cmd as aio
from volumesvc_aio import config as aio_config

SECRET = "0b7c7e53-4e8e-4a52-a2a5-8f4a1a7d1f10"


def _ceph(tmp_path):
    """What the harnesses read of a started CephHarness: its conf path."""
    return types.SimpleNamespace(conf_path=str(tmp_path / "ceph" / "ceph.conf"))


def _parse(text):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return parser


def test_ceph_is_the_default_storage_and_file_stays_available():
    assert aio._parse_args([]).storage == "ceph"
    assert aio._parse_args(["--storage", "file"]).storage == "file"


def test_cinder_gets_an_rbd_backend_beside_file_and_rbd_is_the_default_type(tmp_path):
    harness = cinder.CinderHarness(str(tmp_path), transport_url="rabbit://x/",
                                   deps_dir=str(tmp_path / "deps"), ceph=_ceph(tmp_path),
                                   rbd_secret_uuid=SECRET)
    conf = _parse(harness.config_text())
    assert conf["DEFAULT"]["enabled_backends"] == "rbd,file"
    assert conf["DEFAULT"]["default_volume_type"] == "rbd"
    rbd = conf["rbd"]
    assert rbd["volume_driver"] == "cinder.volume.drivers.rbd.RBDDriver"
    assert (rbd["volume_backend_name"], rbd["rbd_pool"], rbd["rbd_user"]) == (
        "rbd", "volumes", "cinder")
    assert rbd["rbd_ceph_conf"] == str(tmp_path / "ceph" / "ceph.conf")
    assert rbd["rbd_secret_uuid"] == SECRET
    assert rbd["rbd_exclusive_cinder_pool"] == "true"
    assert conf["file"]["volume_backend_name"] == "file"
    assert harness.backends == ("rbd", "file")


def test_cinder_without_ceph_keeps_the_file_backend_alone(tmp_path):
    harness = cinder.CinderHarness(str(tmp_path), transport_url="rabbit://x/",
                                   deps_dir=str(tmp_path / "deps"))
    conf = _parse(harness.config_text())
    assert conf["DEFAULT"]["enabled_backends"] == "file"
    assert "default_volume_type" not in conf["DEFAULT"]
    assert not conf.has_section("rbd")


def test_a_second_file_backend_has_its_own_directory_and_type(tmp_path):
    harness = cinder.CinderHarness(str(tmp_path), transport_url="rabbit://x/",
                                   deps_dir=str(tmp_path / "deps"), second_file_backend=True)
    conf = _parse(harness.config_text())
    assert conf["DEFAULT"]["enabled_backends"] == "file,file-b"
    assert conf["file-b"]["volume_backend_name"] == "file-b"
    assert conf["file-b"]["volume_driver"] == conf["file"]["volume_driver"]
    assert conf["file-b"]["file_volume_dir"] != conf["file"]["file_volume_dir"]
    assert harness.backends == ("file", "file-b")


def test_cinder_volume_finds_debian_tools_on_its_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/opt/bin")
    harness = cinder.CinderHarness(str(tmp_path), transport_url="rabbit://x/",
                                   deps_dir=str(tmp_path / "deps"))
    assert harness._env()["PATH"].split(os.pathsep)[-1] == "/usr/bin"


def test_glance_stores_images_on_rbd_and_shows_their_location(tmp_path):
    harness = glance.GlanceHarness(str(tmp_path), deps_dir=str(tmp_path / "deps"),
                                   ceph=_ceph(tmp_path))
    conf = _parse(harness.config_text())
    assert conf["DEFAULT"]["enabled_backends"] == "ceph:rbd"
    assert conf["DEFAULT"]["show_image_direct_url"] == "true"
    assert conf["glance_store"]["default_backend"] == "ceph"
    assert (conf["ceph"]["rbd_store_pool"], conf["ceph"]["rbd_store_user"]) == (
        "images", "glance")
    assert conf["ceph"]["rbd_store_ceph_conf"] == str(tmp_path / "ceph" / "ceph.conf")
    plain = _parse(glance.GlanceHarness(str(tmp_path), deps_dir=str(tmp_path / "d")).config_text())
    assert plain["glance_store"]["default_store"] == "file"
    assert "enabled_backends" not in plain["DEFAULT"]


def test_computes_share_the_libvirt_daemon_and_define_the_ceph_secret(tmp_path):
    rbd = {"uri": "qemu:///system", "user": "cinder", "secret_uuid": SECRET,
           "keyring": "/s/ceph/ceph.client.cinder.keyring"}
    path = aio_config.write_config(
        str(tmp_path), transport_url="rabbit://x/", api_port=8774, api_workers=1,
        host="h", cinder_url="http://c/v3", glance_url="http://g", rbd=rbd)
    libvirt = _parse(open(path).read())["libvirt"]
    assert libvirt["connection_uri"] == "qemu:///system"
    assert (libvirt["rbd_user"], libvirt["rbd_secret_uuid"], libvirt["rbd_keyring"]) == (
        "cinder", SECRET, "/s/ceph/ceph.client.cinder.keyring")
    for first, host in ((True, "h"), (False, "h-2")):
        compute = aio_config.write_compute_config(str(tmp_path), host=host, first=first,
                                                  connection_uri="qemu:///system")
        assert _parse(open(compute).read())["libvirt"]["connection_uri"] == "qemu:///system"
    assert not os.path.exists(tmp_path / "libvirt-h-2")


def test_the_secret_uuid_is_kept_for_the_state_dir(tmp_path):
    first = aio._secret_uuid(str(tmp_path))
    assert aio._secret_uuid(str(tmp_path)) == first
    other = tmp_path / "other"
    other.mkdir()
    assert aio._secret_uuid(str(other)) != first
