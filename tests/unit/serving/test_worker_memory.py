"""The memory bound of the thread worker: what it reads and when it retires the worker."""

from tests.fixtures.clock import patch_time
from volumesvc.serving import gunicorn_workers as gw


def test_private_memory_is_clean_plus_dirty_private_pages(tmp_path):
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text(
        "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0   [rollup]\n"
        "Rss:              120000 kB\nPss:               60000 kB\n"
        "Shared_Clean:      50000 kB\nShared_Dirty:      30000 kB\n"
        "Private_Clean:      4096 kB\nPrivate_Dirty:     36864 kB\n")
    assert gw.private_memory_mib(str(rollup)) == 40.0
    assert gw.private_memory_mib(str(tmp_path / "missing")) is None


class _Log:
    def __init__(self):
        self.lines = []

    def info(self, msg, *args):
        self.lines.append(msg % args)


class _Base:
    def notify(self):
        self.notified = getattr(self, "notified", 0) + 1


class _Worker(gw._MemoryBound, _Base):
    memory_quiet_seconds = 10.0

    def __init__(self, bound, open_conns=0, idle_conns=0):
        self.worker_private_memory_max = bound
        self.nr = 0  # requests served (gunicorn's counter)
        self.alive = True
        self.log = _Log()
        self.nr_conns = open_conns
        self.keepalived_conns = [object()] * idle_conns
        self.pending_conns = []


def _run(worker, monkeypatch, memory, times):
    clock = iter(times)
    patch_time(monkeypatch, gw, monotonic=lambda: next(clock))
    monkeypatch.setattr(gw.random, "uniform", lambda a, b: 1.0)
    monkeypatch.setattr(gw, "private_memory_mib", lambda: memory)
    for _ in times:
        worker.notify()


def test_over_the_bound_stops_the_worker_loop_once_quiet(monkeypatch):
    worker = _Worker(32)
    # first call schedules (t=0 -> check at 1.0); 0.5 is too early; at 1.0 and
    # 5.0 the worker has not been quiet for 10 s; at 10.0 it has
    _run(worker, monkeypatch, 48.0, [0.0, 0.5, 1.0, 5.0, 10.0])
    assert worker.alive is False
    assert worker.notified == 5  # gunicorn's own heartbeat still ran every time
    assert "48 MiB of its own" in worker.log.lines[0]


def test_under_the_bound_or_unbounded_keeps_the_worker(monkeypatch):
    under = _Worker(32)
    _run(under, monkeypatch, 20.0, [0.0, 1.0, 11.0, 16.0])
    assert under.alive is True
    unbounded = _Worker(0)
    _run(unbounded, monkeypatch, 500.0, [0.0, 1.0, 11.0, 16.0])
    assert unbounded.alive is True and unbounded.log.lines == []


def test_never_in_the_middle_of_a_burst(monkeypatch):
    busy = _Worker(32, open_conns=5, idle_conns=2)  # 3 requests being served
    _run(busy, monkeypatch, 48.0, [0.0, 1.0, 11.0, 16.0])
    assert busy.alive is True
    idle = _Worker(32, open_conns=2, idle_conns=2)  # only kept-alive connections open
    _run(idle, monkeypatch, 48.0, [0.0, 11.0])
    assert idle.alive is False


def test_a_worker_serving_requests_is_not_replaced_until_they_stop(monkeypatch):
    """Regression: a worker in steady use passes the bound; replaced whenever no
    request was in flight at the check, workers were replaced every few
    seconds in the middle of an attach storm."""
    worker = _Worker(32)
    clock = iter([0.0, 1.0, 6.0, 11.0, 16.0, 21.0, 26.0, 27.0])
    patch_time(monkeypatch, gw, monotonic=lambda: next(clock))
    monkeypatch.setattr(gw.random, "uniform", lambda a, b: 1.0)
    monkeypatch.setattr(gw, "private_memory_mib", lambda: 48.0)
    worker.notify()  # t=0
    for _ in range(4):  # t=1, 6, 11, 16: a request between every two heartbeats
        worker.nr += 1
        worker.notify()
        assert worker.alive is True
    worker.notify()  # t=21: 5 s quiet
    worker.notify()  # t=26: 10 s quiet
    assert worker.alive is False


def test_a_check_that_met_a_burst_is_retried_at_the_next_heartbeat(monkeypatch):
    """Regression: a busy check waited a whole interval, so a worker serving a
    request at each check was not replaced for many intervals (a flaky real
    gunicorn test)."""
    worker = _Worker(32, open_conns=3)
    clock = iter([0.0, 11.0, 12.0])
    patch_time(monkeypatch, gw, monotonic=lambda: next(clock))
    monkeypatch.setattr(gw.random, "uniform", lambda a, b: 1.0)
    monkeypatch.setattr(gw, "private_memory_mib", lambda: 48.0)
    worker.notify()  # t=0: schedules the first check at 1.0
    worker.notify()  # t=11: due and quiet, but 3 requests are being served
    assert worker.alive is True
    worker.nr_conns = 0  # they finished
    worker.notify()  # t=12: one heartbeat later, not an interval later
    assert worker.alive is False


def test_volumesvc_api_passes_the_bound_from_config():
    from volumesvc.conf import get_conf
    from volumesvc.serving import server

    conf = get_conf(default_config_files=[])
    worker = server.gunicorn_settings(conf)["worker_class"]
    assert worker.worker_private_memory_max == conf.wsgi.worker_private_memory_max == 32
    # the class the systemd unit's gunicorn command line names has the same default
    assert gw.ThreadWorker.worker_private_memory_max == 32


def test_the_quiet_time_differs_per_worker(monkeypatch):
    """Workers idle from the same moment are not all replaced in the same second:
    each waits its quiet time times a random factor between 1 and 1.5."""
    worker = _Worker(32)
    clock = iter([0.0, 11.0, 14.0, 15.0])
    patch_time(monkeypatch, gw, monotonic=lambda: next(clock))
    monkeypatch.setattr(gw.random, "uniform", lambda a, b: b)  # the longest: 15 s
    monkeypatch.setattr(gw, "private_memory_mib", lambda: 48.0)
    for _ in range(3):
        worker.notify()
    assert worker.alive is True
    worker.notify()
    assert worker.alive is False
