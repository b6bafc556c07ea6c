"""``volumesvc-manage systemd units``: units that start this installation's programs."""

import os
import pathlib
import subprocess
import sysconfig

from volumesvc.cmd import manage, manage_systemd

SHIPPED = pathlib.Path(__file__).resolve().parents[3] / "etc" / "systemd"


def _exec_lines(path):
    return [line for line in path.read_text().splitlines() if line.startswith("Exec")]


def test_the_units_start_the_programs_of_the_python_that_wrote_them(tmp_path, capsys):
    assert manage.main(["systemd", "units", "--output-dir", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(manage_systemd.UNITS)
    assert capsys.readouterr().out.split() == [str(tmp_path / n) for n in manage_systemd.UNITS]
    bindir = pathlib.Path(sysconfig.get_path("scripts"))
    for name in manage_systemd.UNITS:
        unit = tmp_path / name
        starts = [line.split("=", 1)[1].split()[0] for line in _exec_lines(unit)
                  if line.startswith("ExecStart=")]
        assert len(starts) == 1
        program = pathlib.Path(starts[0])
        assert program.parent == bindir and os.access(program, os.X_OK), program
        # Every other line is the shipped unit's.
        shipped = (SHIPPED / name).read_text().splitlines()
        rendered = unit.read_text().splitlines()
        assert [a for a, b in zip(shipped, rendered, strict=True) if a != b] == [
            line for line in shipped if line.startswith("ExecStart=")]
        # The programs exist here, so systemd checks the units as they are.
        result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), (
            result.stdout + result.stderr)


def test_the_api_units_reload_stays_the_systems_kill(tmp_path):
    assert manage.main(["systemd", "units", "--output-dir", str(tmp_path)]) == 0
    assert "ExecReload=/bin/kill -HUP $MAINPID" in _exec_lines(
        tmp_path / "volumesvc-api.service")


def test_a_bindir_without_the_programs_writes_nothing(tmp_path, capsys):
    output = tmp_path / "units"
    assert manage.main(["systemd", "units", "--output-dir", str(output),
                        "--bindir", str(tmp_path / "empty")]) == manage_systemd.MISSING_PROGRAM
    assert not output.exists()
    err = capsys.readouterr().err
    assert str(tmp_path / "empty" / "volumesvc-compute") in err and "gunicorn" in err


def test_another_bindir_is_named_in_every_unit(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for program in ("gunicorn", "volumesvc-conductor", "volumesvc-compute"):
        (bindir / program).write_text("#!/bin/sh\n")
        (bindir / program).chmod(0o755)
    assert manage.main(["systemd", "units", "--output-dir", str(tmp_path / "out"),
                        "--bindir", str(bindir)]) == 0
    compute = (tmp_path / "out" / "volumesvc-compute.service").read_text()
    assert f"ExecStart={bindir}/volumesvc-compute --config-file " in compute
