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


def _cinder_attachment(stack, server_id, volume_id):
    """The one Cinder attachment of the volume on the server (FakeCinder's record)."""
    (attachment,) = [a for a in stack.cinder.attachments.values()
                     if a["volume_id"] == volume_id and a["instance"] == server_id]
    return attachment


def _shown(stack, server_id, volume_id, version="2.108"):
    return stack.api("GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
                     version=version, token=TOKEN, status=200)[1]["volumeAttachment"]


def test_a_read_only_attach_at_2_108_is_a_read_only_disk_through_shelve(stack, server):
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, volume_id, version="2.108", status=202, read_only=True)
    _in_use(stack, volume_id)
    attachment = _cinder_attachment(stack, server, volume_id)
    # As Cinder 29: the attachment is ro, its connection info still says rw.
    assert attachment["attach_mode"] == "ro"
    assert attachment["connection_info"]["data"]["access_mode"] == "rw"
    assert _disks(stack, server)[volume_id].readonly
    assert _shown(stack, server, volume_id)["read_only"] is True
    assert "read_only" not in _shown(stack, server, volume_id, version="2.107")
    # Shelve offload makes a new Cinder attachment; it must be ro again.
    _action(stack, server, {"shelve": None})
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED")
    assert _cinder_attachment(stack, server, volume_id)["attach_mode"] == "ro"
    _action(stack, server, {"unshelve": None})
    stack.wait_for_server_status(server, "ACTIVE")
    assert _disks(stack, server)[volume_id].readonly
    assert _shown(stack, server, volume_id)["read_only"] is True


def test_a_multiattach_volume_read_only_on_one_server_and_read_write_on_another(stack):
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                    volume_type="multi")["id"]
    reader, writer = stack.boot_active(2)
    stack.attach_volume(reader, volume_id, version="2.108", status=202, read_only=True)
    _in_use(stack, volume_id)
    stack.attach_volume(writer, volume_id, version="2.108", status=202)
    stack.wait(lambda: len(stack.cinder.get(None, volume_id)["attachments"]) == 2,
               what="both attachments complete")
    assert _cinder_attachment(stack, reader, volume_id)["attach_mode"] == "ro"
    assert _cinder_attachment(stack, writer, volume_id)["attach_mode"] == "rw"
    read_disk, write_disk = _disks(stack, reader)[volume_id], _disks(stack, writer)[volume_id]
    assert (read_disk.readonly, read_disk.shareable) == (True, True)
    assert (write_disk.readonly, write_disk.shareable) == (False, True)
    assert _shown(stack, reader, volume_id)["read_only"] is True
    assert _shown(stack, writer, volume_id)["read_only"] is False


def test_cinder_read_only_flag_is_shown_read_only_without_asking(stack, server):
    volume_id = stack.cinder.create(stack.context(), 1, "ro", "")["id"]
    stack.cinder.update_readonly_flag(stack.context(), volume_id, True)
    stack.attach_volume(server, volume_id, version="2.108", status=202)
    _in_use(stack, volume_id)
    assert _shown(stack, server, volume_id)["read_only"] is True
    assert _disks(stack, server)[volume_id].readonly


def test_a_swap_keeps_a_read_only_attachment_read_only(stack, server):
    """Cinder's retype/migration of a read-only attachment: the new one is ``ro`` too."""
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, volume_id, version="2.108", status=202, read_only=True)
    _in_use(stack, volume_id)
    before = _cinder_attachment(stack, server, volume_id)["id"]
    target = stack.cinder.start_migration(volume_id)
    stack.api("PUT", f"/servers/{server}/os-volume_attachments/{volume_id}",
              {"volumeAttachment": {"volumeId": target["id"]}}, token="admin:admin",
              status=202)
    stack.wait(lambda: stack.cinder.get(None, volume_id)["migration_status"] == "success",
               what="migration completed")
    attachment = _cinder_attachment(stack, server, volume_id)
    assert attachment["id"] != before and attachment["attach_mode"] == "ro"
    assert _disks(stack, server)[volume_id].readonly
    assert _shown(stack, server, volume_id)["read_only"] is True


def test_read_only_attach_while_offloaded_and_unshelve_keeps_it(stack, server):
    """The offloaded attach (conductor only) asks Cinder for ``ro``; after the unshelve
    the guest has the disk read-only."""
    _action(stack, server, {"shelve": None})
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED")
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, volume_id, version="2.108", status=202, read_only=True)
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use",
               what="attached while offloaded")
    assert _cinder_attachment(stack, server, volume_id)["attach_mode"] == "ro"
    assert _shown(stack, server, volume_id)["read_only"] is True

    _action(stack, server, {"unshelve": None})
    stack.wait_for_server_status(server, "ACTIVE")
    assert _disks(stack, server)[volume_id].readonly
