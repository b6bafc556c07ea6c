"""RabbitMQ helpers for the single-machine setup and integration tests.

Two Cinders, or a test run and the all-in-one, that share one RabbitMQ talk
over the same topics unless each has its own virtual host. These helpers
start a RabbitMQ only when none answers on the port (the project's machines
usually run one already) and create or delete per-run virtual hosts with
``rabbitmqctl``.
"""

import os
import socket
import subprocess
import time
import urllib.parse

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5672
DEFAULT_USER = "guest"
DEFAULT_PASSWORD = "guest"


def _env():
    """Environment that keeps a RabbitMQ we start (and rabbitmqctl) on loopback."""
    env = dict(os.environ)
    env.setdefault("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
    env.setdefault("ERL_EPMD_ADDRESS", "127.0.0.1")
    env.setdefault("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                   "-kernel inet_dist_use_interface {127,0,0,1}")
    return env


def port_open(host=DEFAULT_HOST, port=DEFAULT_PORT, timeout=1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _ctl(*args, check=True, timeout=60):
    return subprocess.run(["rabbitmqctl", *args], env=_env(), check=check,
                          capture_output=True, text=True, timeout=timeout)


def ensure_rabbit(timeout=60.0, host=DEFAULT_HOST, port=DEFAULT_PORT):
    """Start RabbitMQ (detached) unless something already listens on ``port``.

    Returns True when this call started it. The server outlives the caller on
    purpose: it is shared machine infrastructure, like the database servers.
    """
    if port_open(host, port):
        return False
    subprocess.run(["rabbitmq-server", "-detached"], env=_env(), check=True,
                   capture_output=True, timeout=60)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = _ctl("await_startup", check=False, timeout=timeout)
        if result.returncode == 0 and port_open(host, port):
            return True
        time.sleep(1)
    raise RuntimeError(f"RabbitMQ did not start on {host}:{port} within {timeout}s")


def transport_url(vhost, host=DEFAULT_HOST, port=DEFAULT_PORT,
                  user=DEFAULT_USER, password=DEFAULT_PASSWORD) -> str:
    """oslo.messaging URL for ``vhost`` (quoted, so names with '/' work)."""
    return (f"rabbit://{user}:{password}@{host}:{port}/"
            f"{urllib.parse.quote(vhost, safe='')}")


def ensure_vhost(name, user=DEFAULT_USER, host=DEFAULT_HOST, port=DEFAULT_PORT, *,
                 fresh=False) -> str:
    """Create virtual host ``name`` (idempotent), grant ``user`` everything, return its URL.

    ``fresh`` deletes it first, with whatever messages an earlier deployment
    left queued in it.
    """
    ensure_rabbit(host=host, port=port)
    if fresh:
        delete_vhost(name)
    result = _ctl("add_vhost", name, check=False)
    if result.returncode != 0 and "already" not in (result.stdout + result.stderr):
        raise RuntimeError(f"rabbitmqctl add_vhost {name} failed: {result.stderr.strip()}")
    _ctl("set_permissions", "-p", name, user, ".*", ".*", ".*")
    return transport_url(name, host=host, port=port, user=user)


def delete_vhost(name):
    """Delete virtual host ``name``; a missing one is not an error."""
    result = _ctl("delete_vhost", name, check=False)
    if result.returncode != 0 and "not" not in (result.stdout + result.stderr).lower():
        raise RuntimeError(f"rabbitmqctl delete_vhost {name} failed: {result.stderr.strip()}")
