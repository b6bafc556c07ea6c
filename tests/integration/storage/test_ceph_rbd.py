"""RBD volumes on a real one-node Ceph, opened by QEMU through libvirtd.

The session's Ceph (``ceph_cluster``: volumesvc_aio.ceph, ~30 s to start) and
a libvirtd serving ``qemu:///system`` (``system_libvirt``) come from
tests/integration/fixtures_storage.py. The compute's
own start-up (``init_host``) defines the libvirt secret from client.cinder's
keyring; the disks are built from connection_info shaped as Cinder's RBD
driver returns it. Proof that QEMU really opened the image: ``rbd status``
lists it as a watcher, and lists none once the disk is detached or the domain
destroyed.

Needs root (Debian's Ceph packages are installed when missing). Nothing here
skips: a Ceph that cannot be installed or started fails the module.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from volumesvc_aio import ceph as ceph_mod

pytestmark = pytest.mark.integration

MiB = 1 << 20


@pytest.fixture(scope="module")
def ceph(ceph_cluster):
    return ceph_cluster


@pytest.fixture(scope="module")
def driver(ceph, system_libvirt):
    """A LibvirtDriver on qemu:///system configured as a compute using RBD would be."""
    from volumesvc import virt
    from volumesvc.conf import get_conf

    state = tempfile.mkdtemp(prefix="vs-rbd-compute-", dir="/var/tmp")
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", state)
    conf.set_override("host", "it-rbd")
    conf.set_override("compute_driver", "libvirt")
    conf.set_override("connection_uri", system_libvirt.uri, group="libvirt")
    conf.set_override("rbd_secret_uuid", str(uuid.uuid4()), group="libvirt")
    conf.set_override("rbd_keyring", ceph.keyring("cinder"), group="libvirt")
    conf.set_override("rbd_user", "cinder", group="libvirt")
    drv = virt.load_driver(conf)
    drv.init_host(conf.host)
    yield drv
    conn = drv.host.get_connection()
    # From this process (a client of libvirtd) undefining is safe once QEMU is gone.
    conn.secretLookupByUUIDString(conf.libvirt.rbd_secret_uuid).undefine()
    drv.cleanup_host()
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def make_instance(driver):
    """Domains of this test only: libvirtd's other domains are not ours to touch."""
    spawned = []

    def _make(block_device_info=None):
        instance = {"uuid": str(uuid.uuid4()), "memory_mb": 64, "vcpus": 1}
        spawned.append(instance)
        driver.spawn(instance, block_device_info)
        return instance

    yield _make
    for instance in spawned:
        driver.destroy(instance)


@pytest.fixture
def rbd_volume(ceph, driver):
    """An RBD image made as client.cinder, and connection_info as Cinder's RBD driver gives it."""
    images = []

    def _make(size=64 * MiB):
        vol_id = str(uuid.uuid4())
        name = f"volumes/volume-{vol_id}"
        ceph.cmd("rbd", "create", "--size", f"{size // MiB}M", "--image-feature", "layering",
                 name, client="cinder")
        images.append(name)
        hosts, ports = ceph.mon_hosts
        conf = driver.conf.libvirt
        return {"driver_volume_type": "rbd", "serial": vol_id,
                "data": {"name": name, "hosts": hosts, "ports": ports,
                         "cluster_name": "ceph", "auth_enabled": True,
                         "auth_username": conf.rbd_user, "secret_type": "ceph",
                         "secret_uuid": conf.rbd_secret_uuid, "discard": True,
                         "access_mode": "rw", "volume_id": vol_id}}

    yield _make
    for name in images:
        ceph.cmd("rbd", "rm", name, client="cinder", check=False)


def watchers(ceph, name):
    status = json.loads(ceph.cmd("rbd", "status", "--format", "json", name, client="cinder"))
    return status.get("watchers", [])


def wait_watchers(ceph, name, count, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        found = watchers(ceph, name)
        if len(found) == count or time.monotonic() >= deadline:
            return found
        time.sleep(0.3)


def live_disk(driver, instance, serial):
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    for disk in ET.fromstring(dom.XMLDesc(0)).findall("./devices/disk"):
        if disk.findtext("serial") == serial:
            return disk
    return None


def test_compute_start_defines_the_ceph_secret(driver, ceph):
    lv = driver.libvirt
    secret = driver.host.get_connection().secretLookupByUUIDString(
        driver.conf.libvirt.rbd_secret_uuid)
    assert secret.usageType() == lv.VIR_SECRET_USAGE_TYPE_CEPH
    # A second compute start on the same host changes nothing and does not fail.
    driver.init_host(driver.conf.host)
    assert [s.UUIDString() for s in driver.host.get_connection().listAllSecrets()
            if s.UUIDString() == secret.UUIDString()] == [secret.UUIDString()]


def test_hotplug_rbd_volume_opened_by_qemu(driver, ceph, make_instance, rbd_volume):
    instance = make_instance()
    vol = rbd_volume()
    name = vol["data"]["name"]
    assert watchers(ceph, name) == []

    device = driver.attach_volume(vol, instance, None, disk_bus="scsi")
    disk = live_disk(driver, instance, vol["serial"])
    assert disk is not None and disk.get("type") == "network"
    assert disk.find("source").get("protocol") == "rbd"
    assert disk.find("source").get("name") == name
    assert disk.find("auth/secret").get("uuid") == vol["data"]["secret_uuid"]
    assert len(wait_watchers(ceph, name, 1)) == 1

    # Extend as after a Cinder extend of an in-use RBD volume: image first, then the guest.
    ceph.cmd("rbd", "resize", "--size", "128M", name, client="cinder")
    assert driver.extend_volume(vol, instance, 128 * MiB) == 128 * MiB

    driver.detach_volume(vol, instance, device)
    assert live_disk(driver, instance, vol["serial"]) is None
    assert wait_watchers(ceph, name, 0) == []


def test_boot_from_rbd_volume_and_destroy(driver, ceph, make_instance, rbd_volume):
    root = rbd_volume()
    name = root["data"]["name"]
    instance = make_instance({
        "root_device_name": "/dev/sda",
        "block_device_mapping": [{"connection_info": root, "mount_device": "/dev/sda",
                                  "boot_index": 0, "disk_bus": "scsi",
                                  "device_type": "disk"}]})
    assert len(wait_watchers(ceph, name, 1)) == 1
    driver.destroy(instance)
    assert wait_watchers(ceph, name, 0) == []


def test_debian_rados_modules_in_a_service_venv(ceph, tmp_path):
    """What Cinder's RBD driver needs in its own venv: rados/rbd, and our cluster as cinder."""
    venv = str(tmp_path / "venv")
    base = os.path.join(sys.base_prefix, "bin", "python3")
    subprocess.run([base, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    ceph_mod.expose_ceph_modules(venv)
    ceph_mod.expose_ceph_modules(venv)  # idempotent
    script = (
        "import rados, rbd, sys\n"
        "c = rados.Rados(conffile=sys.argv[1], rados_id='cinder')\n"
        "c.connect(timeout=10)\n"
        "with c.open_ioctx('volumes') as io:\n"
        "    rbd.RBD().create(io, sys.argv[2], 1 << 20, old_format=False, features=1)\n"
        "    print(sorted(rbd.RBD().list(io)))\n"
        "    rbd.RBD().remove(io, sys.argv[2])\n"
        "c.shutdown()\n")
    name = f"probe-{uuid.uuid4().hex[:8]}"
    result = subprocess.run([os.path.join(venv, "bin", "python"), "-c", script,
                             ceph.conf_path, name], capture_output=True, text=True,
                            timeout=60, env=ceph_mod.clean_env())
    assert result.returncode == 0, result.stderr
    assert name in result.stdout
    # Only the two modules come from Debian, not its other packages.
    probe = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import yaml"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0
