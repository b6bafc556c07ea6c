"""The gunicorn installed is one our workers were written against.

``volumesvc.serving.gunicorn_workers`` subclasses gunicorn's sync and gthread
workers and uses parts of them gunicorn does not document: the gthread
worker's pools, poller and connection queues, its connection objects'
fields, and the methods it overrides (``enqueue_req`` above all: if gunicorn
renamed it, reads would silently queue behind attaches again). pyproject
pins gunicorn to the releases that have all of them and whose own refusals
have the statuses the fault tests expect (27.0 first answers a request line
over the limit with 414, not 400); these tests check that the installed
gunicorn is inside that pin and, read from our module's own code, that
every such name exists on the real classes.
"""

import ast
import importlib.metadata
import inspect
import pathlib
import socket
import tomllib

import pytest
from gunicorn import config, util
from gunicorn.glogging import Logger
from gunicorn.workers import gthread
from packaging.requirements import Requirement

from volumesvc.serving import gunicorn_workers

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCE = pathlib.Path(gunicorn_workers.__file__)
OUR_CLASSES = ("_JSONFaults", "_MemoryBound", "ThreadWorker")


def _pinned():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = [Requirement(r) for r in pyproject["project"]["dependencies"]
             if Requirement(r).name == "gunicorn"]
    assert len(found) == 1
    return found[0].specifier


def _classes():
    tree = ast.parse(SOURCE.read_text())
    return [node for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name in OUR_CLASSES]


def _attributes_of(name):
    """Attributes our worker classes read or call on the variable ``name``."""
    return {node.attr for cls in _classes() for node in ast.walk(cls)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == name}


def _defined_by_us():
    """Names our classes give a value themselves: methods, class and instance attributes.

    A bare annotation (``nr: int``) only tells the type checker about one of
    gunicorn's attributes: it is not ours.
    """
    names = set()
    for cls in _classes():
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign):
                names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
            elif (isinstance(stmt, ast.AnnAssign) and stmt.value is not None
                  and isinstance(stmt.target, ast.Name)):
                names.add(stmt.target.id)
    return names


@pytest.fixture
def worker():
    cfg = config.Config()
    return gthread.ThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))


def test_the_pin_has_an_upper_bound():
    assert any(spec.operator in ("<", "<=", "==", "~=") for spec in _pinned())


def test_installed_gunicorn_is_inside_the_pin():
    installed = importlib.metadata.version("gunicorn")
    assert _pinned().contains(installed), (installed, str(_pinned()))


def test_the_source_scan_sees_what_the_worker_uses():
    used = _attributes_of("self")
    assert {"tpool", "method_queue", "pending_conns", "handle", "finish_request"} <= used
    assert "read_pool" in _defined_by_us()
    assert {"sock", "initialized", "data_ready", "timeout"} <= _attributes_of("conn")


def test_gthread_worker_has_every_attribute_we_use(worker):
    # Worker attributes gunicorn sets only when the process starts (the
    # pools, the poller) are None after __init__, but they exist.
    missing = {name for name in _attributes_of("self") - _defined_by_us()
               if not hasattr(worker, name)}
    assert missing == set()


def test_gthread_connections_have_every_field_we_use():
    cfg = config.Config()
    a, b = socket.socketpair()
    try:
        conn = gthread.TConn(cfg, a, ("127.0.0.1", 1), ("127.0.0.1", 2))
        assert {name for name in _attributes_of("conn") if not hasattr(conn, name)} == set()
    finally:
        a.close()
        b.close()


def test_every_method_we_override_exists_in_gunicorn_with_the_same_parameters():
    overridden = {node.name for cls in _classes() for node in cls.body
                  if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    assert {"enqueue_req", "handle_error", "notify", "handle_quit"} <= overridden
    for name in sorted(overridden):
        theirs = getattr(gthread.ThreadWorker, name, None)
        assert theirs is not None, f"gunicorn's gthread worker has no {name}()"
        ours = getattr(gunicorn_workers.ThreadWorker, name)
        assert (list(inspect.signature(ours).parameters)
                == list(inspect.signature(theirs).parameters)), name


def test_the_util_functions_we_call_exist():
    assert callable(util.write_nonblock)
