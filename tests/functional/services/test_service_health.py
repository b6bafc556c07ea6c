"""What the conductor and the compute tell systemd's watchdog (RPCService.health)."""

import socket

from tests.functional.stack import Stack

HOST = "fn-compute"


def test_services_are_healthy_while_their_heartbeats_are_persisted(tmp_path, monkeypatch):
    # The compute started below gets a notify socket, as under systemd (Type=notify).
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(10)
    stack = Stack(tmp_path, hosts=())
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
        compute = stack.add_compute(HOST)
        assert sock.recv(4096).decode() == f"READY=1\nSTATUS=serving topic compute on {HOST}"
        assert stack.conductor.health() == (True, f"serving topic conductor on "
                                                  f"{stack.conductor.host}")
        assert compute.health()[0] is True

        # A heartbeat that cannot be persisted, for longer than service_down_time.
        def refuse(*args, **kwargs):
            raise ConnectionError("conductor unreachable")
        compute._heartbeat = refuse
        compute.conf.set_override("service_down_time", 1)
        assert compute.report_state() is False
        stack.wait(lambda: not compute.health()[0], timeout=5, what="unhealthy")
        assert compute.health() == (
            False, "heartbeat failing: ConnectionError: conductor unreachable")
    finally:
        stack.stop()
    assert compute.health() == (False, "stopping")
    assert sock.recv(4096).decode() == "STOPPING=1\nSTATUS=stopping"
    sock.close()
