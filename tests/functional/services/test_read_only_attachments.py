"""Read-only volumes and attachments, end to end (API, conductor, compute, fake libvirt).

FakeCinder behaves as Cinder 29 here: a volume's read-only flag
(``os-update_readonly_flag``) makes every attachment ``ro`` and its
connection info ``access_mode: ro``. What the guest gets is read from the
domain XML the libvirt driver defined in the fake libvirt.
"""

from tests.functional.stack import BLANK_ROOT as ROOT
from volumesvc.virt.libvirt import config

TOKEN = "u1:p1"
HOST = "fn-compute"


def _disks(stack, server_id, host=HOST):
    """{serial: DiskInfo} of the server's domain on ``host``."""
    xml = stack.computes[host].manager.driver.get_domain_xml({"uuid": server_id})
    return {disk.serial: disk for disk in config.parse_disks(xml)}


def _in_use(stack, volume_id):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use",
               what=f"volume {volume_id} in-use")


def _action(stack, server_id, body):
    stack.api("POST", f"/servers/{server_id}/action", body, version="2.1", token=TOKEN,
              status=202)


def test_a_read_only_volume_is_a_read_only_disk_and_stays_one(stack, server):
    read_only = stack.cinder.create(stack.context(), 1, "ro", "")["id"]
    stack.cinder.update_readonly_flag(stack.context(), read_only, True)
    writable = stack.cinder.create(stack.context(), 1, "rw", "")["id"]
    for volume_id in (read_only, writable):
        stack.attach_volume(server, volume_id, version="2.101", status=202)
        _in_use(stack, volume_id)
    disks = _disks(stack, server)
    assert disks[read_only].readonly and not disks[writable].readonly
    # The domain is defined again from the saved connection info.
    _action(stack, server, {"os-stop": None})
    stack.wait_for_server_status(server, "SHUTOFF")
    _action(stack, server, {"os-start": None})
    stack.wait_for_server_status(server, "ACTIVE")
    disks = _disks(stack, server)
    assert disks[read_only].readonly and not disks[writable].readonly


def test_a_read_only_volume_at_boot_is_a_read_only_disk(stack):
    volume_id = stack.cinder.create(stack.context(), 1, "ro", "")["id"]
    stack.cinder.update_readonly_flag(stack.context(), volume_id, True)
    server_id = stack.boot(stack.context(), ROOT + [{
        "source_type": "volume", "destination_type": "volume", "volume_id": volume_id,
        "boot_index": None}])
    stack.wait_instance(server_id, "active")
    assert _disks(stack, server_id)[volume_id].readonly
