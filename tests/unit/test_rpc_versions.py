"""RPC client and server of each interface must agree on one version."""

import inspect

from volumesvc.compute import manager as compute_manager
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import manager as conductor_manager
from volumesvc.conductor import rpcapi as conductor_rpcapi

PAIRS = [
    (compute_rpcapi, compute_rpcapi.ComputeAPI, compute_manager.ComputeManager),
    (conductor_rpcapi, conductor_rpcapi.ConductorAPI, conductor_manager.ConductorManager),
]


def _public_methods(cls):
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def test_manager_target_is_the_rpcapi_version():
    for module, _client, server in PAIRS:
        assert server.target.version == module.VERSION


def test_version_history_documents_the_current_version():
    for module, _client, _server in PAIRS:
        assert f"* {module.VERSION} - " in module.__doc__


def test_every_client_method_has_a_server_method():
    for _module, client, server in PAIRS:
        missing = {m for m in _public_methods(client) - _public_methods(server)
                   if not m.startswith("can_")}
        assert missing == set(), (client.__name__, missing)


def test_service_version_history_ends_at_the_current_rpc_versions():
    """The newest service version speaks the RPC versions this code sends."""
    from volumesvc import version

    newest = version.SERVICE_VERSION_HISTORY[-1]
    assert version.SERVICE_VERSION == len(version.SERVICE_VERSION_HISTORY)
    assert newest["compute_rpc"] == compute_rpcapi.VERSION
    assert newest["conductor_rpc"] == conductor_rpcapi.VERSION
    assert version.MIN_COMPUTE_VOLUME_TYPE <= version.SERVICE_VERSION
    assert version.MIN_COMPUTE_EXTEND_COMPLETION <= version.SERVICE_VERSION


def test_extend_completion_arrives_with_the_compute_event_rpc():
    """Service version 4 is the first compute that takes external events (RPC 1.3)."""
    from volumesvc import version

    first = version.SERVICE_VERSION_HISTORY[version.MIN_COMPUTE_EXTEND_COMPLETION - 1]
    assert first["compute_rpc"] == "1.3"
