"""A user's view of user_data on a real guest: boot through the API, read os-getConsoleOutput.

The whole service runs in this process (tests/functional/stack.py) except
the hypervisor: the compute drives the session's embedded QEMU. A server
boots from a volume holding the project's starter guest with
``config_drive: true`` and a ``#!`` user_data script; what the script
printed comes back through ``os-getConsoleOutput``, as a user would read
it. A 2.57 rebuild with new user_data then runs the new script. Fails,
never skips, without QEMU.
"""

import base64
import os
import time
import uuid
from pathlib import Path

import pytest

from tests.functional.stack import Stack
from volumesvc_aio import guest_image

pytestmark = pytest.mark.integration

TOKEN = "u1:p1"
HOST = "it-qemu"
BOOT_TIMEOUT = 240  # TCG on two shared cores; a quiet machine needs seconds


class _SharedDriver:
    """The session's driver, lent to one compute: stopping it must not close libvirt."""

    def __init__(self, driver):
        self._driver = driver

    def __getattr__(self, name):
        return getattr(self._driver, name)

    def cleanup_host(self):
        """The session fixture closes the connection, not this compute."""


@pytest.fixture
def stack(qemu_host):
    # Under the QEMU host's directory: volumes QEMU opens with cache=none
    # need a filesystem with O_DIRECT (not tmpfs).
    root = os.path.join(qemu_host.workdir, f"stack-{uuid.uuid4().hex[:8]}")
    os.makedirs(root)
    stack = Stack(Path(root), hosts=())
    stack.add_compute(HOST, driver=_SharedDriver(qemu_host.driver))
    yield stack
    for server in stack.api("GET", "/servers?all_tenants=1")[1]["servers"]:
        stack.api("DELETE", f"/servers/{server['id']}")
        stack.wait_for_server_gone(server["id"], timeout=60)
    stack.stop()


def _script(marker):
    return base64.b64encode(
        f"#!/bin/sh\necho \"{marker} as uid $(id -u)\"\n".encode()).decode()


def _console(stack, server):
    return stack.api("POST", f"/servers/{server}/action",
                     {"os-getConsoleOutput": {"length": 50}}, token=TOKEN,
                     status=200)[1]["output"]


def _wait_for_line(stack, server, line):
    deadline = time.monotonic() + BOOT_TIMEOUT
    while True:
        output = _console(stack, server)
        if line in output.split("\n"):
            return output
        assert time.monotonic() < deadline, output
        time.sleep(1)


def test_user_data_runs_in_the_guest_and_its_output_is_in_the_console(stack):
    ctx = stack.context()
    with open(guest_image.ensure_image(), "rb") as f:
        data = f.read()
    # Glance holds the guest; the root volume was made from it (its image
    # metadata names it), so rebuilding with it keeps the volume as it is.
    image = stack.glance.create(ctx, name="guest", owner="p1", data=data)["id"]
    volume = stack.cinder.create(ctx, 1, "root", "", image_id=image)["id"]
    with open(stack.cinder._path(volume), "r+b") as target:
        target.write(data)
    server = stack.api("POST", "/servers", {"server": {
        "name": "guest", "flavorRef": "1", "networks": "none", "config_drive": True,
        "user_data": _script("MARKER first script"),
        "block_device_mapping_v2": [{"source_type": "volume", "uuid": volume,
                                     "destination_type": "volume", "boot_index": 0}]}},
        version="2.67", token=TOKEN, status=202)[1]["server"]["id"]
    stack.wait_for_server_status(server, "ACTIVE", timeout=60)
    output = _wait_for_line(stack, server, "VSGUEST user-data rc=0")
    assert "MARKER first script as uid 0" in output.split("\n")
    assert "VSGUEST config-drive found=1" in output.split("\n")

    # A 2.57 rebuild with new user_data: the rebuilt guest runs the new script.
    stack.api("POST", f"/servers/{server}/action", {"rebuild": {
        "imageRef": image, "user_data": _script("MARKER second script")}},
        version="2.57", token=TOKEN, status=202)
    stack.wait_for_server_status(server, "ACTIVE", timeout=120)
    output = _wait_for_line(stack, server, "MARKER second script as uid 0")
    assert "MARKER first script as uid 0" not in output.split("\n")
