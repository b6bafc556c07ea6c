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


def test_a_node_that_exited_is_not_waited_for(tmp_path, monkeypatch):
    node = _node(tmp_path, 5999)
    asked = []
    monkeypatch.setattr(node, "ctl", lambda *args, **kwargs: asked.append(args))
    with pytest.raises(rabbit.NodeExited):
        node.await_startup(timeout=30, alive=lambda: False)
    assert asked == []


class _Proc:
    def __init__(self, runs):
        self.runs = runs

    def running(self):
        return self.runs


class _Node:
    """A node whose first boot fails as RabbitMQ's does when its port is taken."""

    nodename = "vslab-rabbit-2@localhost"

    def __init__(self, failures):
        self.failures = failures
        self.waited = 0

    def await_startup(self, alive):
        if not alive():
            raise rabbit.NodeExited("exited")

    def wait_ports_free(self):
        self.waited += 1


def _cluster(tmp_path, node, proc):
    from volumesvc_aio.cluster import Cluster

    cluster = Cluster.__new__(Cluster)
    cluster.state_dir, cluster.procs, cluster.log = str(tmp_path), {"vslab-rabbit-2": proc}, \
        (lambda message: None)

    def respawn(name):
        node.failures -= 1
        proc.runs = node.failures == 0
    cluster.respawn = respawn
    return cluster


def test_a_node_that_exited_while_booting_is_started_again(tmp_path):
    node, proc = _Node(failures=1), _Proc(runs=False)
    _cluster(tmp_path, node, proc)._await_rabbit(node)
    assert node.waited == 1 and proc.runs


def test_a_node_that_keeps_exiting_fails_the_start(tmp_path):
    node, proc = _Node(failures=5), _Proc(runs=False)
    with pytest.raises(rabbit.NodeExited):
        _cluster(tmp_path, node, proc)._await_rabbit(node, attempts=3)
    assert node.waited == 2
