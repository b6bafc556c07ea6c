"""The request path comes first: systemd units, the all-in-one and the storm stack.

The units carry the weights and nice values operators install; the
all-in-one and the benchmark stack start conductor, compute, Cinder and
Glance below the API, each at the kernel's two levels (thread nice value
and the session's autogroup), and can be told not to.
"""

import configparser
import os
import sys

import pytest

import volumesvc_aio as harness
from volumesvc import binaries
from volumesvc_aio import cinder, glance, priority
from volumesvc_aio import cmd as aio

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _unit(name):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(os.path.join(REPO, "etc", "systemd", f"{name}.service"))
    return parser["Service"]


def test_units_weigh_the_api_above_conductor_and_compute():
    api = _unit(binaries.API)
    assert int(api.get("Nice", "0")) == 0
    for name in (binaries.CONDUCTOR, binaries.COMPUTE):
        unit = _unit(name)
        assert int(unit["CPUWeight"]) * 4 <= int(api["CPUWeight"]), name
        assert int(unit["Nice"]) >= 10, name


def test_the_api_unit_takes_its_gunicorn_settings_from_the_api_options():
    # Recycling with jitter and preloading come from [api] through the config
    # module (tests/functional/serving/test_wsgi_servers.py prints them).
    command = _unit(binaries.API)["ExecStart"].split()
    assert command[command.index("--config") + 1] == "python:volumesvc.serving.gunicorn_conf"
    for repeated in ("--workers", "--threads", "--bind", "--max-requests", "--timeout"):
        assert repeated not in command


@pytest.mark.parametrize("name, nice", [
    (binaries.API, 0), ("keystone", 0),
    (binaries.CONDUCTOR, priority.BACKGROUND_NICE), (binaries.COMPUTE, priority.BACKGROUND_NICE),
    (f"{binaries.COMPUTE}-aio-compute-2", priority.BACKGROUND_NICE),
    *[(name, priority.BACKGROUND_NICE) for name in cinder.SERVICES],
    ("glance-api", priority.BACKGROUND_NICE),
])
def test_only_background_work_is_lowered(name, nice):
    assert priority.nice_for(name) == nice
    assert priority.nice_for(name, enabled=False) == 0


def test_a_lowered_process_and_its_threads_and_children_run_niced(tmp_path):
    # The child forks a grandchild and starts a thread: all at the lowered value.
    script = ("import os, threading, time\n"
              "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
              "if os.fork() == 0:\n    time.sleep(30)\n"
              "time.sleep(30)\n")
    proc = harness.ProcessGroup("volumesvc-conductor", [sys.executable, "-c", script],
                                str(tmp_path / "log"), nice=priority.BACKGROUND_NICE).start()
    try:
        harness.wait_for(lambda: len(os.listdir(f"/proc/{proc.pid}/task")) == 2, 10)
        harness.wait_for(lambda: open(f"/proc/{proc.pid}/task/{proc.pid}/children").read(), 10)
        child = int(open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()[0])
        for pid in (proc.pid, child, *map(int, os.listdir(f"/proc/{proc.pid}/task"))):
            assert priority.thread_nice(pid) == priority.BACKGROUND_NICE
        if priority.autogroup_nice(os.getpid()) is not None:
            assert priority.autogroup_nice(proc.pid) == priority.BACKGROUND_NICE
            assert priority.autogroup_nice(child) == priority.BACKGROUND_NICE
    finally:
        proc.stop(5)


def test_the_request_path_keeps_its_priority(tmp_path):
    proc = harness.ProcessGroup(binaries.API, [sys.executable, "-c", "import time; "
                                               "time.sleep(30)"], str(tmp_path / "log")).start()
    try:
        assert priority.thread_nice(proc.pid) == 0
        assert priority.autogroup_nice(proc.pid) in (None, 0)
    finally:
        proc.stop(5)


class _Recorder:
    started: list = []
    made: list = []

    def __init__(self, name, argv, log_path, env=None, cwd=None, nice=0,
                 die_with_parent=False):
        self.name, self.nice = name, nice
        self.die_with_parent = die_with_parent
        _Recorder.made.append(self)

    def start(self):
        _Recorder.started.append((self.name, self.nice))
        return self


@pytest.mark.parametrize("argv, lowered", [([], True), (["--no-cpu-priority"], False)])
def test_the_all_in_one_lowers_its_background_processes(argv, lowered, monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "ProcessGroup", _Recorder)
    _Recorder.started, _Recorder.made = [], []
    args = aio._parse_args(["--state-dir", str(tmp_path), "--computes", "2", *argv])
    allinone = aio.AllInOne(args)
    for binary in (binaries.CONDUCTOR, binaries.COMPUTE):
        allinone._spawn(binary, "x.conf")
    allinone._spawn(binaries.COMPUTE, "x.conf", log_name=f"{binaries.COMPUTE}-aio-compute-2")
    allinone._spawn(binaries.API, "x.conf")
    low = priority.BACKGROUND_NICE if lowered else 0
    assert _Recorder.started == [(binaries.CONDUCTOR, low), (binaries.COMPUTE, low),
                                 (f"{binaries.COMPUTE}-aio-compute-2", low), (binaries.API, 0)]
    # and none of them outlives the aio (setpriv --pdeathsig)
    assert all(made.die_with_parent for made in _Recorder.made)


@pytest.mark.parametrize("lowered", [True, False])
def test_cinder_and_glance_harnesses_start_lowered_when_asked(lowered, monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "ProcessGroup", _Recorder)
    monkeypatch.setattr(harness.ServiceHarness, "db_sync", lambda self: None)
    _Recorder.started, _Recorder.made = [], []
    for made in (cinder.CinderHarness(str(tmp_path / "c"), port=1),
                 glance.GlanceHarness(str(tmp_path / "g"), port=2)):
        made.config_file = str(tmp_path / "exists.conf")
        open(made.config_file, "w").close()
        made.background_priority = lowered
        made.start()
    low = priority.BACKGROUND_NICE if lowered else 0
    assert _Recorder.started == [(name, low) for name in (*cinder.SERVICES, "glance-api")]
    # a harness's processes die with their starter only when it says so
    assert not any(made.die_with_parent for made in _Recorder.made)
