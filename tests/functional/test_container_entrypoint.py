"""The container image's entry point (containers/volumesvc-start), run on this machine.

The script only chooses a program and hands it the mounted configuration
file, so it is run here with this virtualenv's programs first on ``PATH``,
as the image has ``/opt/volumesvc/bin``; building and running the image
itself is ``tools/container-check.sh`` (doc/source/install/container.rst).
"""

import os
import pathlib
import sqlite3
import subprocess
import sys

import volumesvc

REPO = pathlib.Path(volumesvc.__file__).parent.parent
START = REPO / "containers" / "volumesvc-start"


def _start(*args, conf):
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
           "VOLUMESVC_CONFIG_FILE": str(conf), "HOME": os.environ.get("HOME", "/")}
    return subprocess.run([str(START), *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_a_service_does_not_start_without_the_configuration(tmp_path):
    missing = tmp_path / "volumesvc.conf"
    for what in ("api", "conductor", "compute", "manage", "status"):
        result = _start(what, conf=missing)
        assert result.returncode == 1, what
        assert f"cannot read {missing}" in result.stderr


def test_manage_runs_with_the_mounted_configuration(tmp_path):
    """``manage db sync`` migrates the database the mounted file names."""
    db = tmp_path / "volumesvc.sqlite"
    conf = tmp_path / "volumesvc.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                    f"[database]\nconnection = sqlite:///{db}\n")
    result = _start("manage", "db", "sync", conf=conf)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(db) as connection:
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"alembic_version", "instances"} <= tables


def test_any_other_command_runs_as_given(tmp_path):
    result = _start("sh", "-c", "echo $VOLUMESVC_CONFIG_FILE", conf=tmp_path / "absent.conf")
    assert result.returncode == 0
    assert result.stdout.strip() == str(tmp_path / "absent.conf")
