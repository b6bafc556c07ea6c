"""A cluster's RabbitMQ node waits for its fixed ports instead of failing to start."""

import socket
import threading

import pytest

from volumesvc_aio import rabbit


def _listening():
    """A listener on a port whose distribution port (+20000) is a free port too.

    Free when chosen: the machine's other processes use ports of that range
    for their outgoing connections.
    """
    for port in range(21000, 45000, 97):
        if not rabbit._bindable("127.0.0.1", port + 20000):
            continue
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        sock.listen()
        return sock
    raise AssertionError("no free port")


def _node(tmp_path, port):
    return rabbit.ClusterNode(str(tmp_path), "vslab-rabbit-1", "127.0.0.1", port)


def test_a_port_in_use_is_waited_for_then_refused(tmp_path):
    with _listening() as sock:
        node = _node(tmp_path, sock.getsockname()[1])
        with pytest.raises(RuntimeError, match="still in use"):
            node.wait_ports_free(timeout=0.5)


def test_a_port_freed_meanwhile_lets_the_node_start(tmp_path):
    sock = _listening()
    node = _node(tmp_path, sock.getsockname()[1])
    threading.Timer(1.0, sock.close).start()
    node.wait_ports_free(timeout=30)
    assert rabbit._bindable("127.0.0.1", node.port)
