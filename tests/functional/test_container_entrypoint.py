"""The container image's entry point (containers/volumesvc-start), run on this machine.

The script only chooses a program and hands it the mounted configuration
file (with Kolla's layout, the one it copied into place first), so it is
run here with this virtualenv's programs first on ``PATH``, as the image has
``/opt/volumesvc/bin``; building and running the image itself is
``tools/container-check.sh`` (doc/source/install/container.rst).
"""

import getpass
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import pwd
import sqlite3
import subprocess
import sys

import pytest

import volumesvc

REPO = pathlib.Path(volumesvc.__file__).parent.parent
START = REPO / "containers" / "volumesvc-start"


def _start(*args, conf, kolla=None, **env):
    """Run the entry point; ``kolla`` is config.json's path (none there unless given)."""
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
           "VOLUMESVC_CONFIG_FILE": str(conf), "HOME": os.environ.get("HOME", "/"),
           "KOLLA_CONFIG_FILE": str(kolla or pathlib.Path(conf).parent / "no-config.json"),
           **env}
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


# Kolla's layout: config.json and the files it lists in one directory (the
# image's /var/lib/kolla/config_files), copied to where the service reads
# them (the image's /etc/volumesvc) by the entry point.


def _kolla(tmp_path, *, files=None, command=None, **conf_entry):
    """config_files/ with volumesvc.conf (over a SQLite file) and config.json."""
    source = tmp_path / "config_files"
    source.mkdir()
    db = tmp_path / "volumesvc.sqlite"
    (source / "volumesvc.conf").write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n"
                                           f"[database]\nconnection = sqlite:///{db}\n")
    etc = tmp_path / "etc" / "volumesvc"
    entry = {"source": str(source / "volumesvc.conf"), "dest": str(etc / "volumesvc.conf"),
             "owner": getpass.getuser(), "perm": "0600", **conf_entry}
    config = {"config_files": [entry, *(files or [])]}
    if command is not None:
        config["command"] = command
    (source / "config.json").write_text(json.dumps(config))
    return source, etc / "volumesvc.conf", db


def _tables(db):
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_kolla_files_are_copied_into_place_before_the_service_starts(tmp_path):
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "policy.yaml").write_text("{}\n")
    (policy / "extra.yaml").write_text("{}\n")
    conf_dir = tmp_path / "etc" / "volumesvc"
    source, conf, db = _kolla(tmp_path, files=[
        {"source": str(policy / "*.yaml"), "dest": f"{conf_dir}/",
         "owner": getpass.getuser(), "perm": "0640"}])
    result = _start("manage", "db", "sync", conf=conf, kolla=source / "config.json")
    assert result.returncode == 0, result.stderr
    assert {"alembic_version", "instances"} <= _tables(db)
    assert conf.read_text() == (source / "volumesvc.conf").read_text()
    assert conf.stat().st_mode & 0o777 == 0o600
    assert (conf_dir / "policy.yaml").stat().st_mode & 0o777 == 0o640
    assert (conf_dir / "extra.yaml").exists()
    assert f"copied {source / 'volumesvc.conf'} to {conf}" in result.stderr


def test_a_missing_kolla_source_stops_the_start_unless_optional(tmp_path):
    absent = str(tmp_path / "absent.conf")
    source, conf, db = _kolla(tmp_path, files=[{"source": absent, "dest": absent + ".dest"}])
    result = _start("manage", "db", "sync", conf=conf, kolla=source / "config.json")
    assert result.returncode == 1
    assert f"{absent} does not exist (and is not optional): not starting" in result.stderr
    assert not db.exists()

    (source / "config.json").write_text(json.dumps({"config_files": [
        {"source": str(source / "volumesvc.conf"), "dest": str(conf)},
        {"source": absent, "dest": absent + ".dest", "optional": True}]}))
    result = _start("manage", "db", "sync", conf=conf, kolla=source / "config.json")
    assert result.returncode == 0, result.stderr
    assert "absent and optional: skipped" in result.stderr


def test_kolla_start_copies_then_runs_the_command_of_config_json(tmp_path):
    conf = tmp_path / "etc" / "volumesvc" / "volumesvc.conf"
    source, _conf, _db = _kolla(
        tmp_path, command=f"sh -c 'echo \"started with\" \"$1\"; head -n 1 \"$1\"' - {conf}")
    result = _start("kolla_start", conf=conf, kolla=source / "config.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"started with {conf}", "[DEFAULT]"]


def test_kolla_start_needs_config_json(tmp_path):
    result = _start("kolla_start", conf=tmp_path / "volumesvc.conf",
                    kolla=tmp_path / "config.json")
    assert result.returncode == 1
    assert f"kolla_start needs {tmp_path / 'config.json'}" in result.stderr


def test_kolla_copy_strategies(tmp_path):
    """COPY_ALWAYS takes a changed file at the next start; COPY_ONCE keeps the first copy."""
    source, conf, _db = _kolla(tmp_path, command="true")
    kolla, marker = source / "config.json", tmp_path / "configured"
    first = (source / "volumesvc.conf").read_text()
    assert _start("kolla_start", conf=conf, kolla=kolla).returncode == 0
    (source / "volumesvc.conf").write_text(first + "# changed\n")
    assert _start("kolla_start", conf=conf, kolla=kolla,
                  KOLLA_CONFIG_STRATEGY="COPY_ALWAYS").returncode == 0
    assert conf.read_text().endswith("# changed\n")

    (source / "volumesvc.conf").write_text(first)
    once = {"KOLLA_CONFIG_STRATEGY": "COPY_ONCE", "VOLUMESVC_KOLLA_MARKER": str(marker)}
    assert _start("kolla_start", conf=conf, kolla=kolla, **once).returncode == 0
    assert conf.read_text() == first and marker.exists()
    (source / "volumesvc.conf").write_text(first + "# changed again\n")
    result = _start("kolla_start", conf=conf, kolla=kolla, **once)
    assert result.returncode == 0 and "already configured" in result.stderr
    assert conf.read_text() == first

    result = _start("kolla_start", conf=conf, kolla=kolla, KOLLA_CONFIG_STRATEGY="COPY_SOMETIMES")
    assert result.returncode == 1 and "must be one of COPY_ALWAYS, COPY_ONCE" in result.stderr


def test_a_kolla_owner_is_applied_as_root_and_refused_without(tmp_path):
    source, conf, _db = _kolla(tmp_path, command="true", owner="nobody")
    result = _start("kolla_start", conf=conf, kolla=source / "config.json")
    if os.geteuid() == 0:
        assert result.returncode == 0, result.stderr
        assert conf.stat().st_uid == pwd.getpwnam("nobody").pw_uid
    else:
        assert result.returncode == 1
        assert "cannot give it to nobody without root" in result.stderr


def _kolla_config_module():
    """containers/volumesvc-kolla-config, which has no .py suffix, as a module."""
    path = str(REPO / "containers" / "volumesvc-kolla-config")
    loader = importlib.machinery.SourceFileLoader("volumesvc_kolla_config", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_without_root_a_file_is_only_handed_to_the_user_itself(tmp_path, monkeypatch):
    """The image runs as volumesvc: another owner in config.json is refused, not ignored."""
    kolla_config = _kolla_config_module()
    path = tmp_path / "volumesvc.conf"
    path.write_text("")
    me = pwd.getpwuid(os.stat(path).st_uid).pw_name
    # Neither root nor nobody, like the image's volumesvc (uid 42480).
    monkeypatch.setattr(os, "geteuid", lambda: 42480)
    with pytest.raises(kolla_config.ConfigError,
                       match="cannot give it to nobody without root .*uid 42480"):
        kolla_config._chown(str(path), "nobody")
    kolla_config._chown(str(path), me)  # already its own: nothing to do
