"""Periodic tasks: cadence, off switch, failures, overruns and a bounded stop."""

import logging
import threading
import time

import pytest
from oslo_config import cfg

from tests.polling import eventually
from volumesvc import periodic

INTERVAL = 0.1


class _Recorder:
    """A task body that records when it ran and with which context."""

    def __init__(self, body=None):
        self.starts = []
        self.contexts = []
        self.running = 0
        self.max_running = 0
        self._lock = threading.Lock()
        self._body = body

    def __call__(self, context):
        with self._lock:
            self.starts.append(time.monotonic())
            self.contexts.append(context)
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            if self._body:
                self._body(len(self.starts))
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def run():
    runners = []

    def _run(func, interval=INTERVAL):
        task = periodic.PeriodicTask(name="t.task", func=func, interval=interval,
                                     option="[test] interval")
        contexts = iter(range(1_000_000))
        runner = periodic.PeriodicRunner([task], context_factory=lambda: next(contexts))
        runners.append(runner)
        runner.start()
        return runner

    yield _run
    for runner in runners:
        runner.stop()
        runner.wait(2.0)


def test_a_task_runs_at_its_interval_with_a_fresh_context(run):
    task = _Recorder()
    begin = time.monotonic()
    run(task)
    assert eventually(lambda: len(task.starts) >= 3)
    # The runs keep a cadence of one interval from the start: the k-th never
    # starts before k intervals have passed (a little slack for the timer's
    # resolution). Gaps between two runs are not compared: on a loaded host
    # one run may start late and the next on time, which is the cadence.
    for k, start in enumerate(task.starts[:3], start=1):
        assert start - begin >= k * INTERVAL * 0.95, (k, start - begin)
    assert task.contexts[:3] == [0, 1, 2]


def test_an_interval_of_zero_never_runs(run):
    task = _Recorder()
    runner = run(task, interval=0)
    assert runner.tasks == []
    time.sleep(INTERVAL * 4)
    assert task.starts == []


def test_a_failure_is_logged_with_its_traceback_and_the_next_run_happens(run, caplog):
    def body(n):
        if n == 1:
            raise RuntimeError("reconcile blew up")

    task = _Recorder(body)
    with caplog.at_level(logging.ERROR, logger="volumesvc.periodic"):
        run(task)
        assert eventually(lambda: len(task.starts) >= 2)
    failures = [r for r in caplog.records if "t.task failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info and "reconcile blew up" in str(failures[0].exc_info[1])


def test_an_overrun_is_logged_and_the_runs_do_not_stack(run, caplog):
    task = _Recorder(lambda n: time.sleep(INTERVAL * 3.5) if n == 1 else None)
    with caplog.at_level(logging.WARNING, logger="volumesvc.periodic"):
        run(task)
        assert eventually(lambda: len(task.starts) >= 2)
    skipped = [r for r in caplog.records if "still running" in r.getMessage()]
    assert skipped, "the overrun was not logged"
    assert task.max_running == 1
    # The second run starts only once the first is over, at a later tick.
    assert task.starts[1] - task.starts[0] >= INTERVAL * 3.5


def test_stop_returns_in_bounded_time_with_a_stuck_task(run, caplog):
    release = threading.Event()
    task = _Recorder(lambda n: release.wait(30))
    runner = run(task)
    try:
        assert eventually(lambda: task.running == 1)
        begin = time.monotonic()
        runner.stop()
        with caplog.at_level(logging.WARNING, logger="volumesvc.periodic"):
            assert runner.wait(0.3) is False
        assert time.monotonic() - begin < 2.0
        assert any("abandoned: t.task" in r.getMessage() for r in caplog.records)
        starts = len(task.starts)
        time.sleep(INTERVAL * 3)
        assert len(task.starts) == starts  # no run after stop()
    finally:
        release.set()


def test_stop_waits_for_a_run_that_ends_in_time(run):
    task = _Recorder(lambda n: time.sleep(INTERVAL * 2))
    runner = run(task)
    assert eventually(lambda: task.running == 1)
    runner.stop()
    assert runner.wait(5.0) is True
    assert task.running == 0


class _Manager:
    def __init__(self):
        self.calls = []

    @periodic.periodic_task("fake", "reconcile_interval")
    def reconcile(self, context):
        self.calls.append(context)

    @periodic.periodic_task(None, "sweep_interval")
    def sweep(self, context):
        self.calls.append(context)

    def not_periodic(self, context):
        raise AssertionError("never collected")


def test_tasks_are_collected_with_their_intervals_from_config():
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.IntOpt("reconcile_interval", default=60), group="fake")
    conf.register_opt(cfg.FloatOpt("sweep_interval", default=0))
    conf([])
    manager = _Manager()
    tasks = {t.name: t for t in periodic.tasks_of(manager, conf)}
    assert set(tasks) == {"_Manager.reconcile", "_Manager.sweep"}
    assert tasks["_Manager.reconcile"].interval == 60
    assert tasks["_Manager.reconcile"].option == "[fake] reconcile_interval"
    assert tasks["_Manager.sweep"].interval == 0
    tasks["_Manager.reconcile"].func("ctx")
    assert manager.calls == ["ctx"]


def test_the_conductor_offloads_shelved_servers_on_shelved_poll_interval():
    from volumesvc.conductor.manager import ConductorManager
    from volumesvc.conf import get_conf

    conf = get_conf(default_config_files=[])
    conf.set_override("shelved_poll_interval", 7)
    manager = ConductorManager(conf, db=None, compute_rpcapi=None, cinder=None)
    (task,) = [t for t in periodic.tasks_of(manager, conf) if "shelved" in t.name]
    assert (task.interval, task.option) == (7.0, "[DEFAULT] shelved_poll_interval")
