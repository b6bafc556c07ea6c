"""Stop/start, shelve/unshelve and attach/detach while offloaded: real Cinder 29 and QEMU.

The journey of issue 12's "done when": boot from a volume, attach a second,
the unmodified ``openstack server stop/start/shelve/unshelve`` commands, and
attach/detach while ``SHELVED_OFFLOADED`` at 2.20 and 2.101 (raw HTTP; no
released client sends 2.101). After each step the domain (read by the
compute through libvirt), the QEMU process and Cinder's attachments are
checked against the server's volumes.
"""

import contextlib
import os
import subprocess

import pytest

from tests.integration.clients.helpers import (
    attached_volume_ids,
    compute_http,
    delete_server_quietly,
    delete_volume_quietly,
    domain_disks,
    unique,
    wait_server,
    wait_until,
    wait_volume,
)
from tests.integration.conftest import bin_path

_http, _domain_disks, _wait = compute_http, domain_disks, wait_until


def _qemu_running(server_id):
    """Is a QEMU process running the domain of ``server_id`` (``-uuid`` on its command line)?"""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
            if "qemu-system" in os.path.basename(argv[0]) and server_id in argv:
                return True
    return False


def _manage_domain_xml(aio, server_id):
    return subprocess.run(
        [bin_path("volumesvc-manage"), "--config-file",
         os.path.join(aio.state_dir, "volumesvc.conf"), "server", "domain-xml", server_id],
        capture_output=True, text=True, timeout=60)


def _cinder_attachments(cinder, server_id, volume_id):
    """The server's attachments of the volume, shown one by one (the list has no
    connection_info)."""
    return [cinder.attachments.show(a.id)
            for a in cinder.attachments.list(search_opts={"volume_id": volume_id})
            if a.instance == server_id]


def _new_volume(cinder, name):
    volume = cinder.volumes.create(1, name=unique(name))
    wait_volume(cinder, volume.id, "available")
    return volume.id


@pytest.fixture
def volumes(cinder):
    made = []
    yield made
    for volume_id in made:
        delete_volume_quietly(cinder, volume_id)


def test_stop_start_shelve_offloaded_attach_detach_unshelve(aio, nova, cinder, osc, volumes):
    bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "boot_index": 0, "delete_on_termination": True}]
    server = nova.servers.create(unique("life"), image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    try:
        server = wait_server(nova, server.id, aio=aio)
        (root,) = attached_volume_ids(server)
        second = _new_volume(cinder, "second")
        volumes.append(second)
        status, body, _ = _http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                {"volumeAttachment": {"volumeId": second}}, "2.79")
        assert status == 200, body
        wait_volume(cinder, second, "in-use")
        assert set(_domain_disks(aio, server.id)) == {root, second}

        # (1) stop / start with the unmodified OSC: both disks come back.
        osc("server", "stop", server.id, json_out=False)
        wait_server(nova, server.id, "SHUTOFF", aio=aio)
        _wait(lambda: not _qemu_running(server.id), "QEMU of the stopped server gone")
        assert {v.status for v in map(cinder.volumes.get, (root, second))} == {"in-use"}
        osc("server", "start", server.id, json_out=False)
        wait_server(nova, server.id, "ACTIVE", aio=aio)
        assert set(_domain_disks(aio, server.id)) == {root, second}
        assert _qemu_running(server.id)

        # (2) shelve: offloaded at once, no domain, attachments kept without a connector.
        osc("server", "shelve", server.id, json_out=False)
        shelved = wait_server(nova, server.id, "SHELVED_OFFLOADED", aio=aio)
        assert getattr(shelved, "OS-EXT-SRV-ATTR:host") is None
        assert _manage_domain_xml(aio, server.id).returncode == 3     # no host
        _wait(lambda: not _qemu_running(server.id), "QEMU of the offloaded server gone")
        for volume_id in (root, second):
            (att,) = _cinder_attachments(cinder, server.id, volume_id)
            assert att.status == "reserved" and not att.connection_info, att.to_dict()

        # (3) attach at 2.20 and at 2.101 while offloaded, detach the second.
        third, fourth = _new_volume(cinder, "third"), _new_volume(cinder, "fourth")
        volumes.extend([third, fourth])
        path = f"/servers/{server.id}/os-volume_attachments"
        assert _http(aio, "POST", path, {"volumeAttachment": {"volumeId": third}},
                     "2.19")[0] == 409
        status, body, _ = _http(aio, "POST", path, {"volumeAttachment": {"volumeId": third}},
                                "2.20")
        assert (status, body["volumeAttachment"]["device"]) == (200, None), body
        status, body, _ = _http(aio, "POST", path, {"volumeAttachment": {"volumeId": fourth}},
                                "2.101")
        assert (status, body) == (202, None)
        wait_volume(cinder, third, "in-use")
        wait_volume(cinder, fourth, "in-use")
        for volume_id in (third, fourth):
            (att,) = _cinder_attachments(cinder, server.id, volume_id)
            assert att.status == "attached" and not att.connection_info, att.to_dict()
        assert _http(aio, "DELETE", f"{path}/{second}", None, "2.20")[0] == 202
        wait_volume(cinder, second, "available")
        assert _cinder_attachments(cinder, server.id, second) == []

        # (4) unshelve with the unmodified OSC: the domain has exactly the BDMs' disks.
        osc("server", "unshelve", server.id, json_out=False)
        active = wait_server(nova, server.id, "ACTIVE", aio=aio)
        host = getattr(active, "OS-EXT-SRV-ATTR:host")
        assert host
        expected = {root, third, fourth}
        assert set(attached_volume_ids(active)) == expected
        assert set(_domain_disks(aio, server.id)) == expected
        assert _qemu_running(server.id)
        for volume_id in expected:
            volume = cinder.volumes.get(volume_id)
            assert volume.status == "in-use", volume_id
            (entry,) = volume.attachments
            assert entry["server_id"] == server.id and entry["host_name"] == host
            (att,) = _cinder_attachments(cinder, server.id, volume_id)
            assert att.status == "attached" and att.connection_info, att.to_dict()
        actions = [a["action"] for a in _http(
            aio, "GET", f"/servers/{server.id}/os-instance-actions")[1]["instanceActions"]]
        assert actions[:3] == ["unshelve", "detach_volume", "attach_volume"]
        assert {"stop", "start", "shelve"} <= set(actions)
    finally:
        delete_server_quietly(nova, server.id)
        for volume_id in volumes:
            with contextlib.suppress(Exception):
                wait_volume(cinder, volume_id, "available")


def test_unshelve_failing_in_cinder_keeps_every_attachment(aio, nova, cinder, osc, volumes):
    """A real Cinder refusal while unshelve connects: back to offloaded, nothing lost.

    The second volume is put in ``error`` (``os-reset_status``) while the
    server is offloaded, so Cinder refuses its attachment update after the
    boot volume was already connected to the host. The server must go back
    to ``SHELVED_OFFLOADED`` with a fault and both volumes attached to it in
    Cinder, and unshelve once the volume is usable again.
    """
    bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "boot_index": 0, "delete_on_termination": True}]
    server = nova.servers.create(unique("life-fail"), image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    try:
        server = wait_server(nova, server.id, aio=aio)
        (root,) = attached_volume_ids(server)
        second = _new_volume(cinder, "second")
        volumes.append(second)
        status, body, _ = _http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                {"volumeAttachment": {"volumeId": second}}, "2.79")
        assert status == 200, body
        wait_volume(cinder, second, "in-use")
        osc("server", "shelve", server.id, json_out=False)
        wait_server(nova, server.id, "SHELVED_OFFLOADED", aio=aio)

        cinder.volumes.reset_state(second, "error")
        osc("server", "unshelve", server.id, json_out=False)

        def failed():
            shown = nova.servers.get(server.id)
            return (shown if getattr(shown, "OS-EXT-STS:task_state") is None
                    and shown.status == "SHELVED_OFFLOADED" else None)
        _wait(failed, "unshelve to fail and roll back", timeout=180)
        actions = _http(aio, "GET", f"/servers/{server.id}/os-instance-actions/"
                        + _http(aio, "GET", f"/servers/{server.id}/os-instance-actions")[1]
                        ["instanceActions"][0]["request_id"], version="2.84")[1]
        events = actions["instanceAction"]["events"]
        assert [(e["event"], e["result"]) for e in events] == [
            ("compute_unshelve_instance", "Error")], events
        assert not _qemu_running(server.id)
        for volume_id in (root, second):
            (att,) = _cinder_attachments(cinder, server.id, volume_id)
            assert not att.connection_info, att.to_dict()

        cinder.volumes.reset_state(second, "reserved")
        osc("server", "unshelve", server.id, json_out=False)
        active = wait_server(nova, server.id, "ACTIVE", aio=aio)
        assert set(_domain_disks(aio, server.id)) == {root, second}
        assert set(attached_volume_ids(active)) == {root, second}
        for volume_id in (root, second):
            assert cinder.volumes.get(volume_id).status == "in-use"
    finally:
        delete_server_quietly(nova, server.id)
        for volume_id in volumes:
            with contextlib.suppress(Exception):
                wait_volume(cinder, volume_id, "available")
