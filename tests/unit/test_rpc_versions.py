"""RPC client and server of each interface agree on one version, and caps hold.

The first release is the baseline: both interfaces at 1.0, service version 1.
What stays from the rolling-upgrade machinery is shown here with a synthetic
newer version (a fake 1.1 method): ``[upgrade_levels]`` caps what a client
sends, and the API answers a request refused by the cap with 503.
"""

import inspect

import oslo_messaging as messaging
import pytest

from volumesvc import context, rpc, version
from volumesvc.api import errors
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
        missing = _public_methods(client) - _public_methods(server)
        assert missing == set(), (client.__name__, missing)


def test_every_client_method_is_in_the_version_history():
    """A method is listed with the version that brought it (the docstring's history)."""
    for module, client, _server in PAIRS:
        history = " ".join(module.__doc__.split())
        missing = {m for m in _public_methods(client) if m not in history}
        assert missing == set(), (client.__name__, missing)


def test_service_version_history_ends_at_the_current_rpc_versions():
    """The newest service version speaks the RPC versions this code sends."""
    newest = version.SERVICE_VERSION_HISTORY[-1]
    assert version.SERVICE_VERSION == len(version.SERVICE_VERSION_HISTORY)
    assert newest["compute_rpc"] == compute_rpcapi.VERSION
    assert newest["conductor_rpc"] == conductor_rpcapi.VERSION


def test_every_gated_feature_names_a_known_later_service_version():
    """A gate at version 1 would refuse nothing; one above SERVICE_VERSION, everything."""
    for first, what in version.GATED_FEATURES:
        assert 1 < first <= version.SERVICE_VERSION, what


# -- the cap mechanism, with a synthetic newer version -------------------------

class _NewerConductorAPI(conductor_rpcapi.ConductorAPI):
    """The client as it would be after a 1.1 bump: one method more."""

    def newer_cast(self, ctxt):
        self._client.prepare(version="1.1").cast(ctxt, "newer_cast")

    def newer_call(self, ctxt):
        return self._call(ctxt, "newer_call", version="1.1")


class _NewerComputeAPI(compute_rpcapi.ComputeAPI):
    def newer_cast(self, ctxt, *, host):
        self._prepare(host, "1.1").cast(ctxt, "newer_cast")


def _api(api_class, group, cap):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    if cap is not None:
        conf.set_override(group, cap, "upgrade_levels")
    return api_class(conf, rpc.get_transport(conf))


def _allows(api, newer):
    """What a caller of a newer method would ask first (oslo.messaging's own answer)."""
    return api._client.can_send_version(newer)


@pytest.mark.parametrize("cap", [None, "1.1"])
def test_a_newer_method_is_sent_when_the_cap_allows_it(cap):
    ctxt = context.get_admin_context()
    conductor = _api(_NewerConductorAPI, "conductor", cap)
    assert _allows(conductor, "1.1")
    conductor.newer_cast(ctxt)  # the fake driver queues it: no error
    compute = _api(_NewerComputeAPI, "compute", cap)
    assert _allows(compute, "1.1")
    compute.newer_cast(ctxt, host="h1")


def test_a_cap_refuses_a_newer_method_before_it_is_sent():
    ctxt = context.get_admin_context()
    conductor = _api(_NewerConductorAPI, "conductor", "1.0")
    assert not _allows(conductor, "1.1") and _allows(conductor, "1.0")
    with pytest.raises(messaging.RPCVersionCapError):
        conductor.newer_cast(ctxt)
    with pytest.raises(messaging.RPCVersionCapError):
        conductor.newer_call(ctxt)
    compute = _api(_NewerComputeAPI, "compute", "1.0")
    with pytest.raises(messaging.RPCVersionCapError):
        compute.newer_cast(ctxt, host="h1")


def test_the_baseline_methods_pass_a_cap_at_the_baseline():
    """A cap at 1.0 (the first release) lets every method of this code through."""
    ctxt = context.get_admin_context()
    conductor = _api(conductor_rpcapi.ConductorAPI, "conductor", "1.0")
    conductor.delete_instance(ctxt, instance_uuid="i-1")
    conductor.detach_volume(ctxt, instance_uuid="i-1", volume_id="v-1", attachment_id="a-1",
                            request_uuid="r-1")
    compute = _api(compute_rpcapi.ComputeAPI, "compute", "1.0")
    compute.attach_volume(ctxt, host="h1", instance={}, bdm={}, multiattach=False,
                          event_started=True, recovered=True)


def test_the_api_answers_a_capped_request_with_503():
    exc = messaging.RPCVersionCapError(version="1.1", version_cap="1.0")
    error = errors.to_api_error(exc)
    assert (error.status, error.code) == (503, errors.CONDUCTOR_TOO_OLD)
    assert "upgrade is complete" in error.message
