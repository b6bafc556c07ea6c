"""os-getConsoleOutput through unmodified clients against the all-in-one's real QEMU.

Guest-independent: the firmware writes to the serial console too
(``<bios useserial='yes'/>``), so a server booted from a blank volume has a
console that says what SeaBIOS tried; what a Linux guest prints arrives the
same way (tests/integration/virt/test_libvirt_qemu.py boots the project's
guest on real QEMU).
"""

import time

from tests.integration.clients.helpers import (
    compute_http,
    volume_backed_server,
    wait_until,
)


def _settled(nova, server_id):
    """The console once SeaBIOS has given up and two reads a second apart agree.

    "Boot failed" comes a line before the firmware's last one, which arrives a
    few characters at a time: a read between the two saw a half-written line
    (a CI run compared "No bootable device" with "No bootable device.").
    """
    first = nova.servers.get_console_output(server_id)
    if "No bootable device." not in first:
        return None
    time.sleep(1)
    return first if nova.servers.get_console_output(server_id) == first else None


def test_novaclient_and_osc_read_the_firmware_on_the_serial_console(aio, nova, osc):
    with volume_backed_server(aio, nova, "console") as server:
        whole = wait_until(lambda: _settled(nova, server.id),
                           "the firmware's last word on the console", timeout=120)
        assert "SeaBIOS" in whole and "Booting from Hard Disk..." in whole
        assert "\r" not in whole
        # tempest's count: length N is N pieces of split("\n").
        last = nova.servers.get_console_output(server.id, length=3)
        assert len(last.split("\n")) == 3 and whole.endswith(last)
        assert osc("console", "log", "show", "--lines", "3", server.id,
                   json_out=False).rstrip("\n") == last.rstrip("\n")

        status, fault, _ = compute_http(aio, "POST", f"/servers/{server.id}/action",
                                        {"os-getConsoleOutput": {"length": -2}})
        assert status == 400, fault
        # Stopped: the last run's log stays readable.
        nova.servers.stop(server.id)
        wait_until(lambda: nova.servers.get(server.id).status == "SHUTOFF", "SHUTOFF")
        assert nova.servers.get_console_output(server.id) == whole
