"""CPU priority of the processes an all-in-one (or a benchmark stack) starts.

On one machine the API shares the cores with the work it hands off: the
conductor and compute finishing attaches, Cinder and Glance serving them.
When a burst of requests arrives, a ``GET`` should not wait behind that
background work for a core, so everything but the request path
(volumesvc-api, and Keystone, which validates its tokens) runs at a lower
priority, as an operator would set with ``Nice=``/``CPUWeight=`` in the
systemd units (``etc/systemd/``, ``doc/source/admin/cpu-priority.rst``).

Two things decide who gets a core on Linux, and both are set:

* the nice value of each thread, inherited by everything the process
  starts (the command is run under ``nice -n``, so no thread or worker is
  ever created at the old priority);
* with ``kernel.sched_autogroup_enabled`` (the default of most
  distributions), each session is one scheduling group and the nice value
  of threads only orders threads within their own session. Every service
  here runs in a session of its own (a process group to stop), so its
  autogroup's nice value (``/proc/<pid>/autogroup``) is lowered too.
"""

import errno
import os
import time

from volumesvc import binaries

# Nice value of background work: a weight of 110 against the API's 1024, so
# under contention the API gets about 9 in 10 of a core's time.
BACKGROUND_NICE = 10

# What runs at BACKGROUND_NICE (names as the aio and the storm stack call
# their processes); everything else, the API first, keeps nice 0.
BACKGROUND = frozenset({
    binaries.CONDUCTOR, binaries.COMPUTE,
    "cinder-api", "cinder-scheduler", "cinder-volume", "glance-api",
})

_AUTOGROUP_TRIES = 30  # unprivileged writes are limited to one per 100 ms machine-wide


def nice_for(name, enabled=True):
    """The nice value the process called ``name`` should run at."""
    if not enabled:
        return 0
    # More computes of an all-in-one log as volumesvc-compute-<host>.
    return BACKGROUND_NICE if name in BACKGROUND or name.startswith(
        f"{binaries.COMPUTE}-") else 0


def niced_argv(argv, nice):
    """``argv`` run at ``nice`` (``nice -n``), unchanged for 0."""
    return ["nice", "-n", str(nice), *argv] if nice else list(argv)


def lower_autogroup(pid, nice):
    """Set the nice value of ``pid``'s autogroup; False where there is none.

    The kernel refuses unprivileged writes closer together than 100 ms
    (EAGAIN), so a few are retried.
    """
    if not nice:
        return False
    path = f"/proc/{pid}/autogroup"
    for _ in range(_AUTOGROUP_TRIES):
        try:
            with open(path, "w") as f:
                f.write(str(nice))
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return False  # no autogroup support, or the process is gone
        time.sleep(0.11)
    return False


def autogroup_nice(pid):
    """The nice value of ``pid``'s autogroup, or None without autogroups."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return int(f.read().rsplit("nice", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def thread_nice(pid):
    """The nice value of ``pid``'s main thread (field 19 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return int(data[data.rindex(")") + 2:].split()[16])


def apply(pid, nice):
    """After start: lower the autogroup of a process started by :func:`niced_argv`."""
    if nice and os.path.exists("/proc/sys/kernel/sched_autogroup_enabled"):
        lower_autogroup(pid, nice)
