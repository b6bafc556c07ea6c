"""A server of the starter image, seen from inside through ``os-getConsoleOutput``.

The all-in-one's starter image is the project's own guest
(doc/source/admin/guest-image.rst): booted from a volume made of it with a
``user_data`` script and a config drive, it prints ``VSGUEST ready`` and the
script's output on its serial console, and a line for every disk that comes
or goes. Everything here is read back through the compute API, as a user or
tempest reads a guest: no libvirt, no QEMU monitor.
"""

import base64
import re
import time

from tests.integration.clients.helpers import (
    compute_http,
    delete_server_quietly,
    delete_volume_quietly,
    unique,
    wait_server,
    wait_volume,
)

READY_WITHIN = 60       # the promise: ready and the script's output within a minute
DISK_WITHIN = 60        # the watcher looks once a second; the attach itself takes seconds
MARKER = "guest-console-marker"


def console(aio, server_id, length=None):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/action",
                                   {"os-getConsoleOutput": {"length": length}})
    assert status == 200, body
    return body["output"]


def wait_console(aio, server_id, pattern, timeout):
    """The first console line matching ``pattern`` (a regex on the whole line)."""
    deadline = time.monotonic() + timeout
    output = ""
    while time.monotonic() < deadline:
        output = console(aio, server_id)
        for line in output.replace("\r", "").split("\n"):
            if re.fullmatch(pattern, line):
                return line
        time.sleep(1)
    raise AssertionError(f"no console line matching {pattern!r} within {timeout} s; "
                         f"the console said:\n{output[-3000:]}\n{aio.logs(15)}")


def test_starter_guest_runs_user_data_and_sees_an_attach_and_a_detach(aio, nova, cinder):
    user_data = f"#!/bin/sh\necho {MARKER} uid=$(id -u)\n"
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique("guest"), "flavorRef": "42", "networks": "none",
        "config_drive": True,
        "user_data": base64.b64encode(user_data.encode()).decode(),
        "block_device_mapping_v2": [{
            "source_type": "image", "uuid": aio.image_id, "destination_type": "volume",
            "volume_size": 1, "boot_index": 0, "delete_on_termination": True}],
    }}, version="2.101")
    assert status == 202, body
    server_id = body["server"]["id"]
    volume = None
    try:
        server = wait_server(nova, server_id, aio=aio)
        active = time.monotonic()
        [root] = [v["id"] for v in getattr(server, "os-extended-volumes:volumes_attached")]

        wait_console(aio, server_id, "VSGUEST ready", READY_WITHIN)
        ready_after = time.monotonic() - active
        wait_console(aio, server_id, f"{MARKER} uid=0",
                     max(1.0, READY_WITHIN - ready_after))
        print(f"\nACTIVE to VSGUEST ready: {ready_after:.1f} s")
        lines = [line for line in console(aio, server_id).replace("\r", "").split("\n")
                 if line.startswith("VSGUEST ")]
        assert "VSGUEST config-drive found=1" in lines
        assert "VSGUEST user-data rc=0" in lines
        # The root volume is a virtio-scsi disk with its volume id as serial.
        assert any(re.fullmatch(rf"VSGUEST disk name=sd[a-z] serial={root} size=2097152 ro=0",
                                line) for line in lines), lines
        # A length asks for the last lines only.
        assert len(console(aio, server_id, length=2).rstrip("\n").split("\n")) <= 2

        volume = cinder.volumes.create(1, name=unique("guest-data"))
        wait_volume(cinder, volume.id, "available")
        status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                       {"volumeAttachment": {"volumeId": volume.id}},
                                       version="2.101")
        assert status == 202, body
        disk = wait_console(aio, server_id,
                            rf"VSGUEST disk name=(sd[a-z]) serial={volume.id} size=2097152 ro=0",
                            DISK_WITHIN)
        name = re.search(r"name=(\S+)", disk).group(1)
        wait_volume(cinder, volume.id, "in-use")

        status, body, _ = compute_http(
            aio, "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume.id}",
            version="2.101")
        assert status == 202, body
        wait_console(aio, server_id, rf"VSGUEST gone name={name} serial={volume.id}",
                     DISK_WITHIN)
        wait_volume(cinder, volume.id, "available")
        # The root disk never went.
        assert not [line for line in console(aio, server_id).split("\n")
                    if line.startswith("VSGUEST gone") and root in line]
    finally:
        delete_server_quietly(nova, server_id)
        if volume is not None:
            delete_volume_quietly(cinder, volume.id)
