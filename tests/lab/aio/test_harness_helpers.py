"""Harness helpers: free_port (never from the ephemeral range) and ProcessGroup's argv."""

import collections
import socket

import pytest

import volumesvc_aio as aio


@pytest.fixture
def port_range(tmp_path, monkeypatch):
    """Point free_port at a range file of our own and forget the ports it handed out."""
    monkeypatch.setattr(aio, "_RECENT_PORTS", collections.deque(maxlen=256))

    def set_low(low):
        path = tmp_path / "ip_local_port_range"
        path.write_text(f"{low}\t60999\n")
        monkeypatch.setattr(aio, "_EPHEMERAL_RANGE_FILE", str(path))
    return set_low


def test_ports_are_below_the_ephemeral_range_distinct_and_free(port_range):
    port_range(32768)
    ports = [aio.free_port() for _ in range(100)]
    assert len(set(ports)) == 100
    assert all(20768 <= p < 32768 for p in ports), ports
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_listening_port_and_a_port_handed_out_are_never_given(port_range):
    # Two candidates only (10000 and 10001): one listens, the other is handed
    # out once, then nothing is left.
    port_range(10002)
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 10000))
        listener.listen()
        assert aio.free_port() == 10001
        with pytest.raises(RuntimeError, match="no free TCP port"):
            aio.free_port()


def test_an_unreadable_range_file_means_the_linux_default(port_range, monkeypatch):
    monkeypatch.setattr(aio, "_EPHEMERAL_RANGE_FILE", "/nonexistent/ip_local_port_range")
    assert 20768 <= aio.free_port() < 32768


def test_a_process_group_that_dies_with_its_parent_runs_under_setpriv(tmp_path):
    group = aio.ProcessGroup("x", ["true"], str(tmp_path / "x.log"), nice=10,
                             die_with_parent=True)
    assert group._argv() == ["setpriv", "--pdeathsig", "TERM", "nice", "-n", "10", "true"]
    assert aio.ProcessGroup("x", ["true"], str(tmp_path / "x.log"))._argv() == ["true"]
