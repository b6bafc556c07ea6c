"""Periodic tasks of a manager, run by its RPC service on native threads.

A manager declares its housekeeping with :func:`periodic_task`, naming the
config option that holds the interval in seconds (``0`` turns the task off,
so an operator can disable any of them without a code change)::

    @periodic.periodic_task("compute", "dangling_attachment_reconcile_interval")
    def _reconcile_dangling_attachments(self, context):
        ...

:class:`~volumesvc.service.RPCService` collects them with :func:`tasks_of`
and runs them with a :class:`PeriodicRunner`: one scheduler thread per task
that starts each run on its own worker thread with a fresh admin context.

Why these rules:

* A run that is still going when the next one is due is logged and that run
  is skipped. Runs never stack: a slow Cinder must not turn a reconcile
  every minute into a pile of concurrent reconciles.
* A run that raises is logged with its traceback; the schedule goes on. A
  housekeeping bug must not stop the next run, nor the RPC service.
* Stopping is bounded: the schedulers stop at once, running workers are
  waited for up to a deadline and then abandoned (daemon threads), as the
  RPC handlers are on SIGTERM.
"""

import dataclasses
import threading
import time
from collections.abc import Callable

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_MARK = "_volumesvc_periodic"


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    """One task, bound to its manager, with the interval read from config."""

    name: str
    func: Callable
    interval: float
    option: str  # "[group] name", for the log messages


def periodic_task(group: str | None, option: str):
    """Mark a manager method ``(self, context)`` as a periodic task.

    ``group``/``option`` name the option holding its interval in seconds
    (``group=None`` for ``[DEFAULT]``); ``0`` or less means never run it.
    """
    def decorate(func):
        setattr(func, _MARK, (group, option))
        return func
    return decorate


def tasks_of(manager, conf) -> list[PeriodicTask]:
    """The periodic tasks ``manager`` declares, intervals read from ``conf``."""
    tasks = []
    cls = type(manager)
    for attr in sorted(dir(cls)):
        mark = getattr(getattr(cls, attr, None), _MARK, None)
        if mark is None:
            continue
        group, option = mark
        interval = getattr(conf[group] if group else conf, option)
        tasks.append(PeriodicTask(name=f"{cls.__name__}.{attr}", func=getattr(manager, attr),
                                  interval=float(interval or 0),
                                  option=f"[{group or 'DEFAULT'}] {option}"))
    return tasks


class PeriodicRunner:
    """Runs periodic tasks on native threads until :meth:`stop`.

    ``context_factory`` makes the context each run receives (an admin
    context in a service): a run never reuses the previous run's context.
    """

    def __init__(self, tasks, *, context_factory, thread_prefix="periodic"):
        self.tasks = [t for t in tasks if t.interval > 0]
        for task in tasks:
            if task.interval <= 0:
                LOG.info("Periodic task %s is off (%s = 0)", task.name, task.option)
        self._context_factory = context_factory
        self._prefix = thread_prefix
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._schedulers: list[threading.Thread] = []
        self._workers: dict[str, threading.Thread] = {}

    def start(self):
        for task in self.tasks:
            thread = threading.Thread(target=self._schedule, args=(task,), daemon=True,
                                      name=f"{self._prefix}-{task.name}")
            thread.start()
            self._schedulers.append(thread)

    def _schedule(self, task):
        """Start a run every ``interval`` seconds unless the last one still runs."""
        started_at = 0.0
        next_run = time.monotonic() + task.interval
        while not self._stopping.wait(max(0.0, next_run - time.monotonic())):
            now = time.monotonic()
            with self._lock:
                worker = self._workers.get(task.name)
                if worker is not None and worker.is_alive():
                    LOG.warning("Periodic task %s still running after %.1fs (interval %.1fs, "
                                "%s): this run is skipped", task.name, now - started_at,
                                task.interval, task.option)
                else:
                    started_at = now
                    worker = threading.Thread(target=self._run_once, args=(task,),
                                              daemon=True, name=f"{self._prefix}-{task.name}-run")
                    self._workers[task.name] = worker
                    worker.start()
            # NOTE: a schedule that fell behind (a host suspended, a starved
            # thread) resumes one interval from now instead of catching up in
            # a burst of runs.
            next_run += task.interval
            if next_run <= now:
                next_run = now + task.interval

    def _run_once(self, task):
        begin = time.monotonic()
        try:
            task.func(self._context_factory())
        except Exception:  # noqa: BLE001 - logged; the next run still happens
            LOG.exception("Periodic task %s failed", task.name)
            return
        LOG.debug("Periodic task %s ran in %.3fs", task.name, time.monotonic() - begin)

    def stop(self):
        """Start no new run from now on (returns at once)."""
        self._stopping.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for running tasks; True if all ended."""
        deadline = time.monotonic() + max(0.0, timeout)
        for thread in self._schedulers:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            workers = list(self._workers.items())
        stuck = []
        for name, worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                stuck.append(name)
        if stuck:
            LOG.warning("Periodic tasks still running after %.1fs, abandoned: %s",
                        timeout, ", ".join(stuck))
        return not stuck
