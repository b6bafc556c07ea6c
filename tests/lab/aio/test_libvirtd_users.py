"""Several users of the one system libvirt daemon: only the last one stops it.

Regression: the all-in-one that had started ``libvirtd`` stopped it when it
stopped, under the other all-in-ones still using ``qemu:///system``. These
run :class:`volumesvc_aio.libvirtd.LibvirtDaemon` against stand-in daemons
(small programs listening on the sockets) in a private run directory.
"""

import os
import stat
import sys
import textwrap

import pytest

from volumesvc_aio import libvirtd

STAND_IN = textwrap.dedent("""\
    #!{python}
    import os, socket, sys, time
    path = os.environ[{env!r}]
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen()
    try:
        while True:
            time.sleep(1)
    finally:
        os.unlink(path)
    """)


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, env in (("libvirtd", "FAKE_LIBVIRTD_SOCK"), ("virtlogd", "FAKE_VIRTLOGD_SOCK")):
        path = bindir / name
        path.write_text(STAND_IN.format(python=sys.executable, env=env))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LIBVIRTD_SOCK", str(run / "libvirt-sock"))
    monkeypatch.setenv("FAKE_VIRTLOGD_SOCK", str(run / "virtlogd-sock"))
    monkeypatch.setattr(libvirtd, "LIBVIRTD_SOCKET", str(run / "libvirt-sock"))
    monkeypatch.setattr(libvirtd, "VIRTLOGD_SOCKET", str(run / "virtlogd-sock"))
    monkeypatch.setattr(libvirtd, "USERS_LOCK", str(run / "users.lock"))
    monkeypatch.setattr(libvirtd, "STARTED_FILE", str(run / "started.json"))
    monkeypatch.setattr(libvirtd, "SYSTEM_DIRS", (str(run),))
    monkeypatch.setattr(libvirtd, "ensure_qemu_conf", lambda: False)
    return run


def _daemon(tmp_path, name):
    daemon = libvirtd.LibvirtDaemon(str(tmp_path / name))
    daemon.configure()
    return daemon


def _serving():
    return (libvirtd.socket_answers(libvirtd.LIBVIRTD_SOCKET)
            and libvirtd.socket_answers(libvirtd.VIRTLOGD_SOCKET))


def test_the_starter_stopping_first_leaves_the_daemon_to_the_others(run_dir, tmp_path):
    first, second = _daemon(tmp_path, "a"), _daemon(tmp_path, "b")
    first.start()
    assert first.started_here and _serving()
    second.start()
    assert not second.started_here
    first.stop()
    assert _serving(), "the starter took the daemon away from a user"
    second.stop()
    libvirtd.wait_for(lambda: not _serving(), 15, what="the daemons to stop")


def test_the_last_user_stops_what_a_killed_starter_left(run_dir, tmp_path):
    """A starter that never stopped (SIGKILLed) leaves its daemons to the last user."""
    first, second = _daemon(tmp_path, "a"), _daemon(tmp_path, "b")
    first.start()
    second.start()
    os.close(first._users_fd)  # what the kernel does for a killed process
    first._users_fd, first.processes = None, []
    second.stop()
    libvirtd.wait_for(lambda: not _serving(), 15, what="the daemons to stop")


def test_a_daemon_volumesvc_did_not_start_is_left_alone(run_dir, tmp_path):
    outsider = _daemon(tmp_path, "outsider")
    outsider.start()
    os.unlink(libvirtd.STARTED_FILE)  # as if the machine's own service ran it
    user = _daemon(tmp_path, "user")
    user.start()
    assert not user.started_here
    user.stop()
    assert _serving()
    outsider.stop()  # its own processes
    libvirtd.wait_for(lambda: not _serving(), 15, what="the daemons to stop")


def test_the_run_dir_a_daemon_made_private_is_opened(tmp_path):
    """Regression: /run/libvirt was 0700 (made by a daemon under its umask 077) and the
    unprivileged compute's connection to the group-owned socket was refused."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    libvirtd.open_run_dir(str(run))
    assert run.stat().st_mode & 0o777 == 0o755
    run.chmod(0o750)
    libvirtd.open_run_dir(str(run))
    assert run.stat().st_mode & 0o777 == 0o755
