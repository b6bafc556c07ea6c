"""volumesvc-manage and volumesvc-status against SQLite, PostgreSQL and MariaDB."""

import json
import subprocess
import textwrap

import pytest

from tests.fixtures import database as db_fixtures
from tests.integration.conftest import bin_path
from volumesvc.conf import get_conf
from volumesvc.db import migration


def _run(binary, conf_path, *args):
    return subprocess.run([bin_path(binary), "--config-file", str(conf_path), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/vs.sqlite"
        return
    with db_fixtures.provisioned_url(request.param) as url:
        yield url


def test_db_sync_version_and_upgrade_check(tmp_path, database_url):
    conf_path = tmp_path / "volumesvc.conf"
    conf_path.write_text(textwrap.dedent(f"""\
        [DEFAULT]
        state_path = {tmp_path}
        # Not a single-machine compute: volumesvc/cmd/checks.py would warn.
        my_ip = 192.0.2.10
        compute_driver = fake
        [database]
        connection = {database_url}
        # Cinder gets a service token (the upgrade check fails otherwise).
        [service_user]
        auth_type = password
        auth_url = http://192.0.2.20:5000/v3
        username = volumesvc
        password = secret
        """))
    before = _run("volumesvc-manage", conf_path, "db", "version")
    assert before.returncode == 0 and before.stdout.strip() == "None", before.stderr

    status = _run("volumesvc-status", conf_path, "upgrade", "check")
    assert status.returncode == 2 and "db sync" in status.stdout, status.stdout

    sync = _run("volumesvc-manage", conf_path, "db", "sync")
    assert sync.returncode == 0, sync.stderr
    head = migration.script_directory().get_current_head()
    after = _run("volumesvc-manage", conf_path, "db", "version")
    assert after.stdout.strip() == head

    # No computes yet: a warning (exit 1), the schema check passes.
    status = _run("volumesvc-status", conf_path, "upgrade", "check")
    assert status.returncode == 1, status.stdout
    assert "No compute services" in status.stdout

    conf = get_conf(args=["--config-file", str(conf_path)], default_config_files=[])
    from volumesvc import context, version
    from volumesvc.db import api as db_api
    from volumesvc.objects import service as service_obj

    db = db_api.Database(conf)
    service_obj.heartbeat(db, context.get_admin_context(), host="c1",
                          binary="volumesvc-compute", topic="compute",
                          version=version.SERVICE_VERSION, capabilities={"x": True})
    status = _run("volumesvc-status", conf_path, "upgrade", "check")
    assert status.returncode == 0, status.stdout
    db.dispose()
    listing = json.loads(_run("volumesvc-manage", conf_path, "service", "list",
                              "--json").stdout)
    assert sorted((r["host"], r["binary"]) for r in listing) == [
        ("c1", "volumesvc-compute")]
