"""The libvirt driver's live migration pieces: the destination's definition, the monitor."""

import threading
import xml.etree.ElementTree as ET

import pytest

from volumesvc import exception
from volumesvc.virt import fake
from volumesvc.virt.libvirt import migration

RUNNING = """<domain type='qemu'><name>i-1</name><uuid>u-1</uuid><devices>
<disk type='network' device='disk'><driver name='qemu' type='raw'/>
<auth username='cinder'><secret type='ceph' uuid='s-1'/></auth>
<source protocol='rbd' name='volumes/volume-v1'><host name='10.0.0.1' port='6789'/></source>
<target dev='sda' bus='scsi'/><serial>v1</serial><boot order='1'/>
<alias name='ua-v1'/><address type='drive' controller='0' bus='0' target='0' unit='0'/>
</disk>
<disk type='file' device='cdrom'><source file='/src/instances/u-1/disk.config'/>
<target dev='hda' bus='ide'/><readonly/></disk>
<serial type='pty'><log file='/src/instances/u-1/console.log' append='off'/></serial>
<console type='pty'><log file='/src/instances/u-1/console.log' append='off'/></console>
</devices></domain>"""

NEW_DISK = """<disk type='network' device='disk'><driver name='qemu' type='raw'/>
<auth username='cinder'><secret type='ceph' uuid='s-1'/></auth>
<source protocol='rbd' name='volumes/volume-v1'><host name='10.0.0.9' port='6789'/></source>
<target dev='sdz' bus='virtio'/><serial>v1</serial>
<encryption format='luks'><secret type='passphrase' uuid='dest-secret'/></encryption>
</disk>"""


def test_the_destination_definition_keeps_the_machine_and_takes_the_connection():
    xml = migration.destination_xml(RUNNING, {"v1": NEW_DISK},
                                    console_log="/dst/u-1/console.log",
                                    config_drive="/dst/u-1/disk.config")
    root = ET.fromstring(xml)
    (disk, cdrom) = root.findall("./devices/disk")
    assert disk.find("source/host").get("name") == "10.0.0.9"
    assert disk.find("encryption/secret").get("uuid") == "dest-secret"
    # The guest's side of the disk is the running one's, not the new config's.
    assert disk.find("target").attrib == {"dev": "sda", "bus": "scsi"}
    assert disk.find("alias").get("name") == "ua-v1"
    assert disk.find("address").get("unit") == "0"
    assert disk.find("boot").get("order") == "1"
    assert len(disk.findall("target")) == 1
    assert cdrom.find("source").get("file") == "/dst/u-1/disk.config"
    assert {log.get("file") for log in root.iter("log")} == {"/dst/u-1/console.log"}


def test_disks_of_other_volumes_and_unknown_parts_stay():
    xml = migration.destination_xml(RUNNING, {"other": NEW_DISK})
    assert ET.fromstring(xml).find("./devices/disk/source/host").get("name") == "10.0.0.1"
    assert "/src/instances/u-1/console.log" in xml


class _Guest:
    """A guest whose migration runs until told to stop (abort) or ends by itself."""

    uuid = "u-1"

    def __init__(self, fail=None, seconds=10.0):
        self.fail, self.seconds = fail, seconds
        self.aborted = threading.Event()
        self.paused = self.resumed = False
        self.migrated_with = None

    def migrate(self, uri, params, flags):
        self.migrated_with = (uri, params, flags)
        if self.aborted.wait(self.seconds):
            raise fake.libvirtError("operation aborted", fake.VIR_ERR_OPERATION_ABORTED)
        if self.fail:
            raise fake.libvirtError(self.fail)

    def job_stats(self):
        return {"type": 2, "memory_total": 10, "memory_processed": 4, "memory_remaining": 6,
                "downtime": 3}

    def abort_job(self):
        self.aborted.set()

    def pause(self):
        self.paused = True

    def resume(self):
        self.resumed = True


@pytest.fixture(autouse=True)
def _fast_poll(monkeypatch):
    monkeypatch.setattr(migration, "POLL", 0.01)


def test_an_abort_raises_aborted_and_the_guest_stays():
    guest = _Guest()
    seen = []

    def on_progress(fields):
        seen.append(fields)
        return migration.ABORT
    with pytest.raises(exception.LiveMigrationAborted):
        migration.run(fake, guest, "qemu+tcp://d/system", {}, timeout=0,
                      on_progress=on_progress)
    assert seen[0] == {"memory_total": 10, "memory_processed": 4, "memory_remaining": 6}
    assert guest.migrated_with[2] == (fake.VIR_MIGRATE_LIVE | fake.VIR_MIGRATE_PEER2PEER
                                      | fake.VIR_MIGRATE_PERSIST_DEST
                                      | fake.VIR_MIGRATE_UNDEFINE_SOURCE)


def test_a_move_that_takes_too_long_is_aborted():
    clock = iter(range(0, 10_000, 5))
    with pytest.raises(exception.LiveMigrationAborted, match="did not complete within 7 s"):
        migration.run(fake, _Guest(), "u", {}, timeout=7, on_progress=lambda f: None,
                      clock=lambda: next(clock))


def test_a_failed_move_after_force_complete_resumes_the_guest():
    guest = _Guest(fail="operation failed: broke", seconds=0.5)
    with pytest.raises(exception.LiveMigrationFailed, match="broke"):
        migration.run(fake, guest, "u", {}, timeout=0,
                      on_progress=lambda f: migration.FORCE_COMPLETE)
    assert guest.paused and guest.resumed


def test_params_name_the_destination_address_and_bandwidth():
    params = migration.params(fake, "<domain/>", migrate_uri="tcp://10.0.0.9",
                              bandwidth_mib=100)
    assert params == {"destination_xml": "<domain/>", "persistent_xml": "<domain/>",
                      "migrate_uri": "tcp://10.0.0.9", "bandwidth": 100}


def test_a_guest_that_left_while_it_was_looked_at_does_not_run_here(driver, instance,
                                                                   monkeypatch):
    """Regression (cluster, source compute SIGKILLed mid-move): libvirtd finished the
    migration while the restarted compute waited, the domain it had found was gone,
    and ``isActive`` raised "Domain not found" instead of saying it runs elsewhere."""
    driver.spawn(instance, {"root_device_name": None, "block_device_mapping": []})
    found = driver.host.find_guest(instance["uuid"])
    assert driver.runs_guest(instance)
    driver.destroy(instance)  # stopped and undefined: what a finished move leaves
    monkeypatch.setattr(driver.host, "find_guest", lambda uuid: found)
    assert driver.runs_guest(instance) is False
