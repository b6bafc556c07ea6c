"""Single-machine settings are named at service start and by volumesvc-status."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.fixtures import database as db_fixtures
from tests.fixtures import process
from volumesvc import binaries, context, version
from volumesvc.cmd import status
from volumesvc.conf import get_conf
from volumesvc.objects import service as service_obj

SINGLE_MACHINE = """\
    [DEFAULT]
    my_ip = 127.0.0.1
    [libvirt]
    connection_uri = qemu:///embed?root={tmp}/libvirt
    virt_type = qemu
    guest_memory_cap_mb = 64
    """
SEVERAL_MACHINES = """\
    [DEFAULT]
    my_ip = 192.0.2.10
    compute_driver = fake
    """
NOAUTH_CINDER = """\
    [DEFAULT]
    my_ip = 192.0.2.10
    compute_driver = fake
    [cinder]
    auth_strategy = noauth
    """

# What a production deployment has: Cinder gets a service token.
SERVICE_USER = """\
    [service_user]
    auth_type = password
    auth_url = http://192.0.2.20:5000/v3
    username = volumesvc
    password = secret
    user_domain_name = Default
    project_name = service
    project_domain_name = Default
    """


@pytest.fixture
def deployment(tmp_path):
    """A migrated SQLite database and a function writing a config file for it."""
    conf = get_conf(default_config_files=[])
    db = db_fixtures.sqlite_database(conf, str(tmp_path / "db"))

    def write(body, service_user=SERVICE_USER):
        path = tmp_path / "volumesvc.conf"
        path.write_text(textwrap.dedent(body).format(tmp=tmp_path) + textwrap.dedent(f"""\
            [DEFAULT]
            host = ctl1
            state_path = {tmp_path}
            transport_url = rabbit://guest:guest@127.0.0.1:9/
            [database]
            connection = {conf.database.connection}
            """) + textwrap.dedent(service_user))
        return path

    def beat(host, binary, service_version=version.SERVICE_VERSION):
        service_obj.heartbeat(db, context.get_admin_context(), host=host, binary=binary,
                              topic="t", version=service_version)

    yield write, beat
    db.dispose()


def upgrade_check(path, capsys):
    code = status.main(["--config-file", str(path), "upgrade", "check"])
    out = capsys.readouterr().out
    return code, " ".join(line.strip("| ") for line in out.splitlines())


def test_status_names_each_setting_to_change(deployment, capsys):
    write, beat = deployment
    beat("cpu1", binaries.COMPUTE)
    beat("ctl1", binaries.CONDUCTOR)
    code, details = upgrade_check(write(SEVERAL_MACHINES), capsys)
    assert code == 0, details

    beat("ctl2", binaries.CONDUCTOR)
    code, details = upgrade_check(write(SINGLE_MACHINE), capsys)
    assert code == 1, details
    for option in ("[DEFAULT] my_ip", "[libvirt] connection_uri", "[libvirt] virt_type",
                   "[libvirt] guest_memory_cap_mb", "[database] connection"):
        assert f"change {option}" in details, details
    assert "conductors on 2 hosts (ctl1, ctl2)" in details, details


def test_status_names_the_computes_a_newer_service_version_waits_for(
        deployment, capsys, monkeypatch):
    """Synthetic: the code one service version newer, a feature gated on it, one old compute."""
    write, beat = deployment
    path = write(SEVERAL_MACHINES)
    old, new = version.SERVICE_VERSION, version.SERVICE_VERSION + 1
    beat("ctl1", binaries.CONDUCTOR)
    beat("cpu1", binaries.COMPUTE)
    code, details = upgrade_check(path, capsys)
    assert code == 0, details

    monkeypatch.setattr(version, "SERVICE_VERSION_HISTORY", version.SERVICE_VERSION_HISTORY + (
        {"compute_rpc": "1.9", "conductor_rpc": "1.9"},))
    monkeypatch.setattr(version, "SERVICE_VERSION", new)
    monkeypatch.setattr(version, "GATED_FEATURES", ((new, "the newer feature for servers on"),))
    beat("cpu2", binaries.COMPUTE, new)  # upgraded: heartbeats the new version
    code, details = upgrade_check(path, capsys)
    assert code == 1, details
    assert f"Compute services at version {old} (this code is {new}) on hosts: cpu1." \
        in details, details
    assert "the newer feature for servers on cpu1." in details, details
    assert "cpu2" not in details, details

    beat("cpu1", binaries.COMPUTE, new)  # upgraded too
    code, details = upgrade_check(path, capsys)
    assert code == 0, details


def test_computes_with_names_of_their_own_do_not_make_sqlite_shared(deployment, capsys):
    write, beat = deployment
    for host in ("cpu1", "cpu2", "cpu3"):
        beat(host, binaries.COMPUTE)
    beat("ctl1", binaries.CONDUCTOR)
    code, details = upgrade_check(write(SEVERAL_MACHINES), capsys)
    assert code == 0, details




def _start_and_read_warnings(binary, module, path, expected, timeout=60):
    """Start the service from its command line; return its log once ``expected`` is in it."""
    log = path.parent / f"{module}.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from volumesvc.cmd.{module} import main; main()",
         "--config-file", str(path), "--log-file", str(log)],
        env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text() if log.exists() else ""
            if all(e in text for e in expected):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{binary} did not log {expected}: {text}")
    finally:
        process.stop(proc)


def test_compute_start_logs_a_warning_per_setting(deployment):
    write, _ = deployment
    options = ("[DEFAULT] my_ip", "[libvirt] connection_uri", "[libvirt] virt_type",
               "[libvirt] guest_memory_cap_mb")
    text = _start_and_read_warnings(binaries.COMPUTE, "compute", write(SINGLE_MACHINE),
                                    [f"change {o}" for o in options])
    lines = [line for line in text.splitlines() if "(change " in line]
    assert len(lines) == len(options) and all(" WARNING " in line for line in lines), lines


def test_conductor_start_logs_sqlite_shared_by_two_hosts(deployment):
    write, beat = deployment
    beat("ctl2", binaries.CONDUCTOR)
    text = _start_and_read_warnings(binaries.CONDUCTOR, "conductor", write(SEVERAL_MACHINES),
                                    ["change [database] connection"])
    assert "(ctl1, ctl2)" in text


def _service_user_row(details):
    """The text of the service-token check's row (up to the next check's title)."""
    start = details.index("Check: Service user token")
    end = details.find("Check:", start + 1)
    return details[start:end if end != -1 else None]


@pytest.mark.parametrize("service_user, expected", [
    ("[service_user]\nsend_service_user_token = false\n",
     "[service_user] send_service_user_token is false"),
    # On (the default) but without credentials: no token would be sent.
    ("", "[service_user] auth_type is not set"),
], ids=["off", "on-without-auth_type"])
def test_status_fails_without_service_tokens(deployment, capsys, service_user, expected):
    write, beat = deployment
    beat("cpu1", binaries.COMPUTE)
    code, details = upgrade_check(write(SEVERAL_MACHINES, service_user=service_user), capsys)
    assert code == 2, details
    row = _service_user_row(details)
    assert "Result: Failure" in row and expected in row, row
    if "is false" in expected:
        assert "CVE-2023-2088" in row, row


def test_status_passes_service_tokens_on_a_noauth_cinder(deployment, capsys):
    """With [cinder] auth_strategy = noauth no token of any kind goes to Cinder."""
    write, beat = deployment
    beat("cpu1", binaries.COMPUTE)
    code, details = upgrade_check(write(NOAUTH_CINDER, service_user=""), capsys)
    assert "Result: Success" in _service_user_row(details), details
    assert code == 0, details
