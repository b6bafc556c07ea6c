"""Configuration holding credentials is 0600 and the Cinder file backend's volumes 0750.

They were written with the umask's 0644 (and 0755 directories): any local
user could read the RabbitMQ, database and Keystone credentials and the
guests' disks.
"""

import os
import stat

from volumesvc_aio import cinder, cluster_config, files, glance, keystone, libvirtd
from volumesvc_aio import config as aio_config


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_private_closes_a_file_that_was_world_readable(tmp_path):
    path = tmp_path / "service.conf"
    path.write_text("old")
    os.chmod(path, 0o644)
    files.write_private(str(path), "[database]\nconnection = secret\n")
    assert _mode(path) == 0o600
    assert path.read_text() == "[database]\nconnection = secret\n"


def test_private_dir_keeps_its_owner_and_the_group_given(tmp_path):
    path = tmp_path / "volumes"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    files.private_dir(str(path), group=f"+{os.getgid()}")
    assert _mode(path) == 0o750 and os.stat(path).st_gid == os.getgid()
    # A group that does not exist changes nothing but the mode.
    files.private_dir(str(path), group="no-such-group-here")
    assert _mode(path) == 0o750 and os.stat(path).st_gid == os.getgid()


def test_the_qemu_group_is_read_from_the_operators_qemu_conf(tmp_path):
    conf = tmp_path / "qemu.conf"
    conf.write_text('# group = "wrong"\nuser = "libvirt-qemu"\ngroup = "kvm"\n')
    assert libvirtd.configured_qemu_group(str(conf)) == "kvm"
    conf.write_text('# group = "wrong"\n')
    assert libvirtd.configured_qemu_group(str(conf)) is None
    assert libvirtd.configured_qemu_group(str(tmp_path / "missing.conf")) is None


def test_cinder_writes_its_config_0600_and_keeps_volumes_from_other_users(tmp_path,
                                                                          monkeypatch):
    qemu_conf = tmp_path / "qemu.conf"
    qemu_conf.write_text(f'group = "+{os.getgid()}"\n')
    monkeypatch.setattr(libvirtd, "QEMU_CONF", str(qemu_conf))
    harness = cinder.CinderHarness(str(tmp_path / "cinder"), transport_url="rabbit://u:p@x/",
                                   deps_dir=str(tmp_path / "deps"))
    etc = tmp_path / "venv" / "etc" / "cinder"
    etc.mkdir(parents=True)
    (etc / "api-paste.ini").write_text("[composite:osapi_volume]\n/v3: keystone apiv3\n")
    (etc / "resource_filters.json").write_text("{}")
    harness.venv = str(tmp_path / "venv")
    # A state dir from an earlier run, made before the files were closed.
    os.makedirs(harness.volumes_dir, mode=0o755)
    with open(harness.config_file, "w") as f:
        f.write("old")
    os.chmod(harness.config_file, 0o644)
    harness.configure()
    assert _mode(harness.config_file) == 0o600
    assert "rabbit://u:p@x/" in open(harness.config_file).read()
    assert _mode(harness.volumes_dir) == 0o750
    assert os.stat(harness.volumes_dir).st_gid == os.getgid()


def test_the_volumesvc_configs_with_credentials_are_0600(tmp_path):
    main = aio_config.write_config(str(tmp_path), transport_url="rabbit://g:g@127.0.0.1:5672/v",
                                   api_port=8774, api_workers=1, host="aio-compute",
                                   cinder_url="http://c", glance_url="http://g")
    shared = cluster_config.write_cluster_config(
        str(tmp_path / "cluster.conf"), state_dir=str(tmp_path),
        transport_url="rabbit://u:p@10.251.7.1:5701/v",
        database_url="postgresql+psycopg2://volumesvc:pw@10.251.7.1:5442/volumesvc",
        cinder_url="http://c", glance_url="http://g", subnet="10.251.7.0/24")
    assert _mode(main) == 0o600 and _mode(shared) == 0o600


def test_keystone_and_glance_write_their_database_urls_0600(tmp_path):
    ks = keystone.KeystoneHarness(str(tmp_path / "keystone"), port=5999,
                                  database_connection="postgresql://ks:pw@127.0.0.1/ks")
    ks.configure()
    assert _mode(ks.config_file) == 0o600
    image = glance.GlanceHarness(str(tmp_path / "glance"), port=1,
                                 database_connection="postgresql://g:pw@127.0.0.1/g")
    paste = tmp_path / "venv" / "etc" / "glance"
    paste.mkdir(parents=True)
    (paste / "glance-api-paste.ini").write_text("[pipeline:x]\n")
    image.venv = str(tmp_path / "venv")
    image.configure()
    assert _mode(image.config_file) == 0o600
