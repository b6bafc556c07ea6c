"""systemd notifications: READY, WATCHDOG only while healthy, STATUS on change."""

import os
import socket

from volumesvc.common import systemd


def _socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    sock.bind(path)
    sock.settimeout(5)
    return sock, path


def _received(sock):
    messages = []
    sock.setblocking(False)
    try:
        while True:
            messages.append(sock.recv(4096).decode())
    except BlockingIOError:
        return messages


def test_ready_then_watchdog_only_while_healthy(tmp_path):
    sock, path = _socket(tmp_path)
    health = [(True, "serving")]
    notifier = systemd.Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000",
                                 "WATCHDOG_PID": str(os.getpid())})
    assert notifier.watchdog_seconds == 4.0
    dog = systemd.Watchdog(notifier, lambda: health[0], "test")
    dog.start()
    try:
        assert sock.recv(4096).decode() == "READY=1\nSTATUS=serving"
        assert dog.check() is True
        health[0] = (False, "heartbeat failing: DBConnectionError")
        assert dog.check() is False
        assert dog.check() is False
        health[0] = (True, "serving")
        assert dog.check() is True
    finally:
        dog.stop()
    assert _received(sock) == [
        "WATCHDOG=1", "STATUS=heartbeat failing: DBConnectionError",
        "WATCHDOG=1\nSTATUS=serving", "STOPPING=1\nSTATUS=stopping"]


def test_without_systemd_nothing_is_sent():
    notifier = systemd.Notifier({})
    assert notifier.send("READY=1") is False
    assert notifier.watchdog_seconds is None


def test_a_watchdog_meant_for_another_process_is_ignored(tmp_path):
    _sock, path = _socket(tmp_path)
    notifier = systemd.Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000",
                                 "WATCHDOG_PID": "1"})
    assert notifier.watchdog_seconds is None
    assert notifier.send("READY=1") is True


def test_an_abstract_socket_name_is_used_as_such():
    name = f"@volumesvc-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name[1:])
    sock.settimeout(5)
    try:
        assert systemd.Notifier({"NOTIFY_SOCKET": name}).send("READY=1")
        assert sock.recv(64) == b"READY=1"
    finally:
        sock.close()
