"""The systemd units in etc/systemd: what systemd accepts, and least privilege where it fits."""

import configparser
import pathlib
import subprocess

import pytest

UNITS = pathlib.Path(__file__).resolve().parents[2] / "etc" / "systemd"
UNPRIVILEGED = ("volumesvc-api.service", "volumesvc-conductor.service")


def _service(name):
    parser = configparser.ConfigParser(strict=False, interpolation=None,
                                       empty_lines_in_values=False)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read(UNITS / name)
    return parser["Service"]


@pytest.mark.parametrize("name", sorted(p.name for p in UNITS.glob("*.service")))
def test_systemd_accepts_every_line(name, tmp_path):
    # The executables are not installed here; everything else is checked as is.
    text = "\n".join("ExecStart=/bin/true" if line.startswith("ExecStart=") else line
                     for line in (UNITS / name).read_text().splitlines())
    unit = tmp_path / name
    unit.write_text(text + "\n")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), (
        result.stdout + result.stderr)


@pytest.mark.parametrize("name", UNPRIVILEGED)
def test_api_and_conductor_run_unprivileged_and_confined(name):
    service = _service(name)
    assert (service["User"], service["Type"]) == ("volumesvc", "notify")
    assert service["NoNewPrivileges"] == "yes" and service["CapabilityBoundingSet"] == ""
    assert (service["ProtectSystem"], service["ProtectHome"]) == ("strict", "yes")
    assert service["RestrictAddressFamilies"].split() == ["AF_UNIX", "AF_INET", "AF_INET6"]
    # What ProtectSystem=strict leaves writable: the state path's default and the logs.
    assert (service["StateDirectory"], service["LogsDirectory"]) == ("volumesvc", "volumesvc")


def test_the_compute_runs_unprivileged_in_the_libvirt_group_and_notifies():
    service = _service("volumesvc-compute.service")
    assert (service["User"], service["Group"], service["Type"]) == (
        "volumesvc", "volumesvc", "notify")
    assert service["SupplementaryGroups"] == "libvirt"
    assert (service["StateDirectory"], service["LogsDirectory"]) == ("volumesvc", "volumesvc")


def test_the_compute_keeps_what_its_privsep_daemons_need():
    """sudo (setuid) starts them, and os-brick's mounts must be the host's.

    NoNewPrivileges would stop sudo; any option that gives the service a
    mount namespace of its own would hide os-brick's mounts from QEMU.
    """
    service = _service("volumesvc-compute.service")
    namespaced = ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp",
                  "PrivateDevices", "ProtectKernelModules", "ProtectKernelTunables",
                  "CapabilityBoundingSet", "ReadWritePaths")
    assert [key for key in namespaced if key in service] == []
    assert service["RestrictSUIDSGID"] == "yes"
