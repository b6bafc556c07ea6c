"""RPC client and server of each interface must agree on one version."""

import inspect

import pytest

from volumesvc import rpc
from volumesvc.compute import manager as compute_manager
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import manager as conductor_manager
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.conf import get_conf

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


# -- the questions callers ask before they send (each follows the version cap) --

CONDUCTOR_QUESTIONS = {
    "can_attach": conductor_rpcapi.ATTACH_VERSION,
    "can_send_events": conductor_rpcapi.EVENTS_VERSION,
    "can_lifecycle": conductor_rpcapi.LIFECYCLE_VERSION,
    "can_snapshot": conductor_rpcapi.SNAPSHOT_VERSION,
    "can_report_attach_status": conductor_rpcapi.ATTACH_STATUS_VERSION,
    "can_finish_event_with_bdm_update": conductor_rpcapi.FINISH_EVENT_VERSION,
    "can_swap_volume": conductor_rpcapi.SWAP_VERSION,
    "can_rebuild": conductor_rpcapi.REBUILD_VERSION,
    "can_track_volume_requests": conductor_rpcapi.VOLUME_REQUESTS_VERSION,
    "can_attach_read_only": conductor_rpcapi.READ_ONLY_VERSION,
}
COMPUTE_QUESTIONS = {
    "can_send_events": compute_rpcapi.EVENTS_VERSION,
    "can_take_started_attach_event": compute_rpcapi.ATTACH_EVENT_VERSION,
    "can_swap_volume": compute_rpcapi.SWAP_VERSION,
    "can_rebuild": compute_rpcapi.REBUILD_VERSION,
    "can_take_recovered": compute_rpcapi.RECOVERED_VERSION,
    "can_get_console_output": compute_rpcapi.CONSOLE_OUTPUT_VERSION,
}


def _client(api_class, group, cap):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    if cap is not None:
        conf.set_override(group, cap, "upgrade_levels")
    return api_class(conf, rpc.get_transport(conf))


def _below(version):
    major, minor = version.split(".")
    return f"{major}.{int(minor) - 1}"


def test_every_question_is_listed():
    """A new ``can_*`` question gets a line in the tables above (and so a test)."""
    for client, questions in ((conductor_rpcapi.ConductorAPI, CONDUCTOR_QUESTIONS),
                              (compute_rpcapi.ComputeAPI, COMPUTE_QUESTIONS)):
        asked = {m for m in _public_methods(client) if m.startswith("can_")}
        assert asked == set(questions), client.__name__


def test_no_generic_version_passthrough():
    """Callers ask a named question; no client hands out ``can_send_version``."""
    assert not hasattr(conductor_rpcapi.ConductorAPI, "can_send_version")
    assert not hasattr(compute_rpcapi.ComputeAPI, "can_send_version")


@pytest.mark.parametrize("api_class,group,questions", [
    (conductor_rpcapi.ConductorAPI, "conductor", CONDUCTOR_QUESTIONS),
    (compute_rpcapi.ComputeAPI, "compute", COMPUTE_QUESTIONS)], ids=["conductor", "compute"])
def test_each_question_follows_the_version_cap(api_class, group, questions):
    uncapped = _client(api_class, group, None)
    for question, version in questions.items():
        assert getattr(uncapped, question)() is True, question
        at = _client(api_class, group, version)
        assert getattr(at, question)() is True, (question, version)
        below = _client(api_class, group, _below(version))
        assert getattr(below, question)() is False, (question, _below(version))
