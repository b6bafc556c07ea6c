"""Attach and detach of encrypted volumes end to end on fake:// (API, conductor, compute).

The computes run the libvirt driver on the fake libvirt at
``qemu:///system`` (secrets need a libvirtd; each compute its own host),
Cinder is FakeCinder with an encrypted volume type whose keys it creates in
the stack's in-memory key manager, which the computes read through the
product's key manager adapter. What is checked is what a user and an
operator would see: the disk's ``<encryption>``, the host's libvirt
secrets, Cinder's attachments and volume status, and the 2.106 fault of a
refused attach.
"""

import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.functional.stack import Stack
from volumesvc import keymgr
from volumesvc.compute import reconcile_runner
from volumesvc.objects import instance as instance_obj
from volumesvc.virt.libvirt import luks

SYSTEM = {("libvirt", "connection_uri"): "qemu:///system"}
LUKS = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256,
        "control_location": "front-end"}
TOKEN = "u1:p1"


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path, hosts=(), conf_overrides=SYSTEM)
    s.add_compute("host-a")
    s.cinder.create_volume_type("luks", encryption=LUKS)
    s.cinder.create_volume_type("luks-multi", {"multiattach": "<is> True"}, encryption=LUKS)
    yield s
    s.stop()


def _driver(stack, host="host-a"):
    return stack.computes[host].manager.driver


def _secrets(stack, host="host-a"):
    """{volume id: secret} of the volume secrets on ``host``'s libvirt."""
    drv = _driver(stack, host)
    return {s.usageID(): s for s in drv.host.get_connection().listAllSecrets()
            if s.usageType() == drv.libvirt.VIR_SECRET_USAGE_TYPE_VOLUME}


def _disk(stack, server, volume_id, host="host-a"):
    xml = _driver(stack, host).get_domain_xml({"uuid": server})
    if not xml:
        return None  # no domain at all
    root = ET.fromstring(xml)
    disks = {d.findtext("serial"): d for d in root.findall("./devices/disk")}
    return disks.get(volume_id)


def _volume(stack, vtype="luks", project="p1"):
    return stack.cinder.create(stack.context(project), 1, "secret data", "",
                               volume_type=vtype)["id"]


def _attachments(stack, volume_id):
    return [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume_id]


def _wait_in_use(stack, volume_id, count=1):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use"
               and len(stack.cinder.get(None, volume_id)["attachments"]) == count,
               what=f"{volume_id} in-use x{count}")


def _wait_available(stack, volume_id):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "available"
               and not _attachments(stack, volume_id), what=f"{volume_id} available")


def _fault(stack, server, volume_id):
    """The 2.106 entry of a failed attach, once the compute reported it."""
    def entry():
        _, body, _headers = stack.api("GET", f"/servers/{server}/os-volume_attachments",
                            version="2.106", token=TOKEN)
        for att in body["volumeAttachments"]:
            if att["volumeId"] == volume_id and att.get("status") == "error":
                return att
        return None
    return stack.wait(entry, what=f"error entry of {volume_id}")["fault"]


def _detach(stack, server, volume_id):
    stack.api("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}",
              token=TOKEN, status=202)


def test_encrypted_attach_defines_the_secret_and_detach_removes_it(stack):
    (server,) = stack.boot_active()
    volume_id = _volume(stack)
    key_id = stack.cinder.get(None, volume_id)["encryption_key_id"]
    stack.attach_volume(server, volume_id)
    _wait_in_use(stack, volume_id)

    # Read once per attach, with the user's project.
    assert [c for c in stack.cinder.calls if c[0] == "get_volume_encryption"] == [
        ("get_volume_encryption", (volume_id,))]
    assert stack.key_store.reads == [("p1", key_id)]
    secret = _secrets(stack)[volume_id]
    assert secret.value.decode() == keymgr.passphrase(
        stack.key_store.get(stack.context(), key_id))
    encryption = _disk(stack, server, volume_id).find("source/encryption")
    assert encryption.get("format") == "luks"
    assert encryption.find("secret").get("uuid") == secret.UUIDString()

    _detach(stack, server, volume_id)
    _wait_available(stack, volume_id)
    assert _secrets(stack) == {}
    assert _disk(stack, server, volume_id) is None


def test_a_plain_volume_has_no_secret_and_no_key_read(stack):
    (server,) = stack.boot_active()
    volume_id = stack.cinder.create(stack.context(), 1, "plain", "")["id"]
    stack.attach_volume(server, volume_id)
    _wait_in_use(stack, volume_id)
    assert _secrets(stack) == {} and stack.key_store.reads == []
    assert _disk(stack, server, volume_id).find("source/encryption") is None
    assert not [c for c in stack.cinder.calls if c[0] == "get_volume_encryption"]


def test_back_end_encryption_is_the_storages(stack):
    (server,) = stack.boot_active()
    volume_id = _volume(stack)
    stack.cinder.set_encryption(volume_id, stack.cinder.get(None, volume_id)[
        "encryption_key_id"], **{**LUKS, "control_location": "back-end"})
    stack.attach_volume(server, volume_id)
    _wait_in_use(stack, volume_id)
    assert _secrets(stack) == {} and stack.key_store.reads == []


@pytest.mark.parametrize("provider", ["plain", "vendor-x"])
def test_a_provider_the_compute_cannot_honour_is_refused_and_nothing_attached(
        stack, provider):
    (server,) = stack.boot_active()
    volume_id = _volume(stack)
    stack.cinder.set_encryption(volume_id, stack.cinder.get(None, volume_id)[
        "encryption_key_id"], **{**LUKS, "provider": provider})
    stack.attach_volume(server, volume_id)
    fault = _fault(stack, server, volume_id)
    assert fault["code"] == 400
    assert f"provider {provider}" in fault["message"] and "cannot open" in fault["message"]
    _wait_available(stack, volume_id)
    assert _disk(stack, server, volume_id) is None
    assert _secrets(stack) == {} and stack.key_store.reads == []


def _key_of_another_project(stack, volume_id):
    stack.cinder.set_encryption(volume_id, stack.key_store.create_key(stack.context("p2")),
                                **LUKS)


def _key_manager_down(stack, volume_id):
    stack.key_store.down = True


@pytest.mark.parametrize("trouble, code", [(_key_of_another_project, 403),
                                           (_key_manager_down, 503)],
                         ids=["another-projects-key", "key-manager-down"])
def test_a_key_that_cannot_be_read_is_a_fault_naming_the_key_manager(stack, trouble, code):
    """A volume whose key this user may not (or cannot now) read never reaches the server."""
    (server,) = stack.boot_active()
    volume_id = _volume(stack)
    trouble(stack, volume_id)
    stack.attach_volume(server, volume_id)
    fault = _fault(stack, server, volume_id)
    assert fault["code"] == code and "key manager (barbican)" in fault["message"]
    _wait_available(stack, volume_id)
    assert _disk(stack, server, volume_id) is None and _secrets(stack) == {}


def test_embedded_libvirt_refuses_native_luks_with_400(tmp_path):
    stack = Stack(tmp_path)  # the default URI: qemu:///embed, no secret API
    try:
        stack.cinder.create_volume_type("luks", encryption=LUKS)
        (server,) = stack.boot_active()
        volume_id = _volume(stack)
        stack.attach_volume(server, volume_id)
        fault = _fault(stack, server, volume_id)
        assert fault["code"] == 400 and "no secret API" in fault["message"]
        _wait_available(stack, volume_id)
    finally:
        stack.stop()


def test_multiattach_shares_one_secret_per_host_until_the_last_detach(stack):
    first, second = stack.boot_active(2)
    stack.add_compute("host-b")
    (on_b,) = stack.boot_active()
    volume_id = _volume(stack, "luks-multi")
    for server in (first, second, on_b):
        stack.attach_volume(server, volume_id, version="2.79")
    _wait_in_use(stack, volume_id, 3)
    secret = _secrets(stack)[volume_id]
    assert len(_secrets(stack)) == 1 and volume_id in _secrets(stack, "host-b")
    for server in (first, second):
        uuid = _disk(stack, server, volume_id).find("source/encryption/secret").get("uuid")
        assert uuid == secret.UUIDString()

    _detach(stack, first, volume_id)
    _wait_in_use(stack, volume_id, 2)
    assert volume_id in _secrets(stack)  # the second server here still reads it
    _detach(stack, on_b, volume_id)
    _wait_in_use(stack, volume_id, 1)
    assert _secrets(stack, "host-b") == {} and volume_id in _secrets(stack)
    _detach(stack, second, volume_id)
    _wait_available(stack, volume_id)
    assert _secrets(stack) == {}


def _attached(stack):
    """(server, volume id): an encrypted volume attached, its secret on the host."""
    (server,) = stack.boot_active()
    volume_id = _volume(stack)
    stack.attach_volume(server, volume_id)
    _wait_in_use(stack, volume_id)
    assert volume_id in _secrets(stack)
    return server, volume_id


def test_server_delete_removes_the_secret(stack):
    server, volume_id = _attached(stack)
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait_for_server_gone(server)
    _wait_available(stack, volume_id)
    assert _secrets(stack) == {}


def test_the_reconciliation_removes_secrets_no_server_here_uses(stack):
    """A secret left behind (e.g. a compute killed between defining it and the
    attachment's record) goes at the next periodic pass or compute start; the
    secret of a volume a server here has stays, and so does one another compute
    sharing this libvirt daemon defined (the all-in-one's computes share
    ``qemu:///system``: a compute starting there took the secret of a server
    another one was building, whose domain then failed to start)."""
    (server,) = stack.boot_active()
    kept = _volume(stack)
    stack.attach_volume(server, kept)
    _wait_in_use(stack, kept)
    orphan, theirs = _volume(stack), _volume(stack)
    drv = _driver(stack)
    luks.ensure(drv.host.get_connection(), drv.libvirt, theirs, "their passphrase",
                host="host-b")
    info = {"driver_volume_type": "local", "serial": orphan,
            "data": {"device_path": stack.cinder._path(orphan), "encrypted": True}}
    key = stack.key_store.get(stack.context(), stack.cinder.get(None, orphan)[
        "encryption_key_id"])
    drv.attach_encryptor(info, LUKS, "qemu", key, keymgr.passphrase(key))
    assert set(_secrets(stack)) == {kept, orphan, theirs}

    runner = stack.computes["host-a"].manager.reconciler
    runner.run(reconcile_runner.Occasion.PERIODIC, stack.admin_context())
    assert set(_secrets(stack)) == {kept, theirs}

    drv.attach_encryptor(info, LUKS, "qemu", key, keymgr.passphrase(key))
    runner.run(reconcile_runner.Occasion.START, stack.admin_context(), timeout=5)
    assert set(_secrets(stack)) == {kept, theirs}


def test_a_shelve_offload_removes_the_secret_and_the_unshelve_defines_it_again(stack):
    server, volume_id = _attached(stack)
    stack.api("POST", f"/servers/{server}/action", {"shelve": None}, token=TOKEN, status=202)
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED")
    assert _secrets(stack) == {}
    assert [a["instance"] for a in _attachments(stack, volume_id)] == [server]
    stack.api("POST", f"/servers/{server}/action", {"unshelve": None}, token=TOKEN,
              status=202)
    stack.wait_for_server_status(server, "ACTIVE")
    assert list(_secrets(stack)) == [volume_id]
    assert _disk(stack, server, volume_id).find("source/encryption") is not None


def _delete_in_cinder_and_clean_up(stack, server, volume_id):
    """The operator's ``cinder attachment-delete``, then ``volumesvc-manage volume_attachment
    cleanup`` of the server (the conductor's reconcile of it); returns the removed volumes."""
    (attachment_id,) = [a["id"] for a in _attachments(stack, volume_id)
                        if a["instance"] == server]
    stack.cinder.attachment_delete(stack.admin_context(), attachment_id)
    (report,) = stack.conductor_api().reconcile_volume_attachments(
        stack.admin_context(), instance_uuids=[server])
    return [b["volume_id"] for b in report["removed_bdms"]]


def test_the_cleanup_of_an_attachment_deleted_in_cinder_removes_the_secret_at_once(stack):
    """Not left for a later periodic pass: the disk and the secret go together."""
    server, volume_id = _attached(stack)
    assert _delete_in_cinder_and_clean_up(stack, server, volume_id) == [volume_id]
    assert _disk(stack, server, volume_id) is None
    assert _secrets(stack) == {}


def test_the_cleanup_keeps_the_secret_another_server_here_still_uses(stack):
    first, second = stack.boot_active(2)
    volume_id = _volume(stack, "luks-multi")
    for server in (first, second):
        stack.attach_volume(server, volume_id, version="2.79")
    _wait_in_use(stack, volume_id, 2)
    assert _delete_in_cinder_and_clean_up(stack, first, volume_id) == [volume_id]
    assert _disk(stack, first, volume_id) is None
    assert _disk(stack, second, volume_id) is not None and volume_id in _secrets(stack)


def test_the_reconciliation_leaves_secrets_alone_while_a_server_swaps_a_volume(stack):
    """A swap's new volume has its secret for the whole copy before it has a BDM."""
    (server,) = stack.boot_active()
    copying = _volume(stack)
    info = {"driver_volume_type": "local", "serial": copying,
            "data": {"device_path": stack.cinder._path(copying), "encrypted": True}}
    key = stack.key_store.get(stack.context(), stack.cinder.get(None, copying)[
        "encryption_key_id"])
    _driver(stack).attach_encryptor(info, LUKS, "qemu", key, keymgr.passphrase(key))
    instance_obj.save(stack.db, stack.admin_context(), server,
                      {"task_state": "swapping_volume"})
    runner = stack.computes["host-a"].manager.reconciler
    runner.run(reconcile_runner.Occasion.PERIODIC, stack.admin_context())
    assert set(_secrets(stack)) == {copying}
    instance_obj.save(stack.db, stack.admin_context(), server, {"task_state": None})
    runner.run(reconcile_runner.Occasion.PERIODIC, stack.admin_context())
    assert _secrets(stack) == {}


def _root_volume(volume_id):
    return [{"source_type": "volume", "destination_type": "volume", "boot_index": 0,
             "volume_id": volume_id, "delete_on_termination": False}]


def test_boot_from_an_encrypted_volume_and_hard_reboot(stack):
    """The build opens an encrypted root as an attach does; a hard reboot opens it again."""
    volume_id = _volume(stack)
    server = stack.boot(stack.context(), _root_volume(volume_id))
    stack.wait_instance(server, "active")
    secret = _secrets(stack)[volume_id]
    root = _disk(stack, server, volume_id)
    assert root.find("source/encryption/secret").get("uuid") == secret.UUIDString()

    _driver(stack).forget_volume_secret(volume_id)  # as lost with the host's state
    stack.api("POST", f"/servers/{server}/action", {"reboot": {"type": "HARD"}},
              token=TOKEN, status=202)
    stack.wait(lambda: volume_id in _secrets(stack), what="the secret defined again")
    stack.wait_instance(server, "active")
    again = _secrets(stack)[volume_id]
    assert _disk(stack, server, volume_id).find("source/encryption/secret").get(
        "uuid") == again.UUIDString()


def test_boot_from_a_volume_the_compute_cannot_open_fails_and_releases_it(stack):
    volume_id = _volume(stack)
    stack.cinder.set_encryption(volume_id, stack.cinder.get(None, volume_id)[
        "encryption_key_id"], **{**LUKS, "provider": "plain"})
    server = stack.boot(stack.context(), _root_volume(volume_id))
    stack.wait_instance(server, "error")
    _wait_available(stack, volume_id)
    assert _secrets(stack) == {} and _disk(stack, server, volume_id) is None
    fault = stack.api("GET", f"/servers/{server}", token=TOKEN)[1]["server"]["fault"]
    assert "provider plain" in fault["message"] and "cannot open" in fault["message"]


def _swap(stack, server, old_id, new_id, token="admin:admin"):
    stack.api("PUT", f"/servers/{server}/os-volume_attachments/{old_id}",
              {"volumeAttachment": {"volumeId": new_id}}, token=token, status=202)
    stack.wait(lambda: stack.api("GET", f"/servers/{server}", token=TOKEN)[1]["server"][
        "OS-EXT-STS:task_state"] is None, what="swap over")


def test_a_swap_from_an_encrypted_volume_to_a_plain_one_drops_the_old_secret(stack):
    """Cinder's retype to a plain type: QEMU copies the plaintext, the old secret goes."""
    (server,) = stack.boot_active()
    old = _volume(stack)
    stack.attach_volume(server, old)
    _wait_in_use(stack, old)
    assert set(_secrets(stack)) == {old}
    target = stack.cinder.start_migration(old, volume_type=None)
    _swap(stack, server, old, target["id"])
    volume = stack.cinder.get(None, old)
    assert (volume["status"], volume["migration_status"]) == ("in-use", "success")
    disk = _disk(stack, server, old)
    assert disk.find("source/encryption") is None
    assert _secrets(stack) == {}


def _swap_plain_onto_luks(stack, size):
    """Swap a 1 GiB plain volume of a server onto a LUKS volume of ``size`` GiB.

    The target is formatted in place with cryptsetup (the header inside
    its size), its key in the user's project (as Cinder's retype leaves it);
    the swap is asked by an admin of that project. Returns (server, old id,
    target id, key id).
    """
    (server,) = stack.boot_active()
    old = stack.cinder.create(stack.context(), 1, "old", "")["id"]
    stack.attach_volume(server, old)
    _wait_in_use(stack, old)
    target = stack.cinder.start_migration(old, size=size, volume_type="luks")["id"]
    key_id = stack.key_store.create_key(stack.context())
    stack.cinder.set_encryption(target, key_id, **LUKS)
    passphrase = keymgr.passphrase(stack.key_store.get(stack.context(), key_id))
    subprocess.run(["cryptsetup", "--batch-mode", "luksFormat", "--type", "luks1",
                    "--pbkdf-force-iterations", "1000", "--key-file=-",
                    stack.cinder._path(target)], input=passphrase, text=True,
                   check=True, capture_output=True)
    _swap(stack, server, old, target, token="admin:p1")
    return server, old, target, key_id


def test_a_swap_onto_an_encrypted_volume_too_small_for_the_disk_is_undone(stack):
    """The new volume's LUKS payload (its size less the header) must hold the guest's disk.

    A 1 GiB plain disk does not fit in a 1 GiB LUKS volume formatted in place
    (its header inside the 1 GiB, as cryptsetup makes it): the compute has
    read the key as the user and defined the new volume's secret, the copy
    never starts, and the undo takes the secret away with the connection.
    """
    server, old, target, key_id = _swap_plain_onto_luks(stack, size=1)
    volume = stack.cinder.get(None, old)
    assert (volume["status"], volume["migration_status"]) == ("in-use", "error")
    assert ("p1", key_id) in stack.key_store.reads
    disk = _disk(stack, server, old)
    assert disk.find("source").get("file") == stack.cinder._path(old)
    assert disk.find("source/encryption") is None
    assert _secrets(stack) == {}
    assert target not in stack.cinder.volumes


def test_a_swap_onto_a_larger_encrypted_volume_opens_it_with_its_own_secret(stack):
    """Cinder's migration onto an encrypted volume: its key read as the user, its secret.

    After Cinder's completion the BDM names the old volume id while the
    secret is the new volume's: the reconciliation keeps it, the detach
    removes it.
    """
    server, old, target, key_id = _swap_plain_onto_luks(stack, size=2)
    volume = stack.cinder.get(None, old)
    assert (volume["status"], volume["migration_status"]) == ("in-use", "success")
    assert ("p1", key_id) in stack.key_store.reads
    secret = _secrets(stack)[target]
    assert set(_secrets(stack)) == {target}
    assert secret.value.decode() == keymgr.passphrase(
        stack.key_store.get(stack.context(), key_id))
    assert _disk(stack, server, old).find("source/encryption/secret").get(
        "uuid") == secret.UUIDString()

    stack.computes["host-a"].manager.reconciler.run(
        reconcile_runner.Occasion.PERIODIC, stack.admin_context())
    assert set(_secrets(stack)) == {target}
    _detach(stack, server, old)
    _wait_available(stack, old)
    assert _secrets(stack) == {}


def test_rebuild_of_an_encrypted_root_opens_it_again(stack):
    """2.93: the root's connection is released for Cinder's reimage and made again, opened."""
    volume_id = _volume(stack)
    server = stack.boot(stack.context(), _root_volume(volume_id))
    stack.wait_instance(server, "active")
    first = _secrets(stack)[volume_id].UUIDString()
    image = stack.glance.create(stack.context(), name="new", owner="p1",
                                data=b"IMAGE" * 100)["id"]
    stack.api("POST", f"/servers/{server}/action", {"rebuild": {"imageRef": image}},
              version="2.93", token=TOKEN, status=202)
    stack.wait_for_server_status(server, "ACTIVE", version="2.93")
    secret = _secrets(stack)[volume_id]
    assert secret.UUIDString() != first  # undefined with the old connection, defined anew
    assert _disk(stack, server, volume_id).find("source/encryption/secret").get(
        "uuid") == secret.UUIDString()
    assert len(stack.key_store.reads) == 2  # the build's and the rebuild's
