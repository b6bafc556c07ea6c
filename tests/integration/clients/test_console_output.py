"""os-getConsoleOutput through unmodified clients against the all-in-one's real QEMU.

Guest-independent: the firmware writes to the serial console too
(``<bios useserial='yes'/>``), so a server booted from a blank volume has a
console that says what SeaBIOS tried; what a Linux guest prints arrives the
same way (tests/integration/virt/test_libvirt_qemu.py boots the project's
guest on real QEMU).
"""

from tests.integration.clients.helpers import (
    compute_http,
    volume_backed_server,
    wait_until,
)


def test_novaclient_and_osc_read_the_firmware_on_the_serial_console(aio, nova, osc):
    with volume_backed_server(aio, nova, "console") as server:
        whole = wait_until(
            lambda: (lambda out: out if "Boot failed" in out else None)(
                nova.servers.get_console_output(server.id)),
            "the firmware's boot attempt on the console", timeout=120)
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
