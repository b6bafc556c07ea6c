"""Attach and detach casts carry what a re-run needs: the request, ``recovered``."""

import pytest

from volumesvc import rpc
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.conf import get_conf


class _Prepared:
    def __init__(self, sent, version):
        self.sent, self.version = sent, version

    def cast(self, ctxt, method, **kwargs):
        self.sent.append((method, self.version, kwargs))


class _Client:
    """Records what would be sent, at which version."""

    def __init__(self):
        self.sent = []

    def prepare(self, version=None, **kwargs):
        return _Prepared(self.sent, version)


def _api(api_class):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    api = api_class(conf, rpc.get_transport(conf))
    api._client = _Client()
    return api


def test_the_conductor_casts_carry_the_request():
    api = _api(conductor_rpcapi.ConductorAPI)
    api.attach_volume(None, instance_uuid="i", volume_id="v", multiattach=False,
                      request_uuid="r-1")
    api.detach_volume(None, instance_uuid="i", volume_id="v", attachment_id="a",
                      request_uuid="r-2")
    attach, detach = api._client.sent
    assert attach[0] == "attach_volume" and attach[2]["request_uuid"] == "r-1"
    assert attach[2]["multiattach"] is False
    assert detach[0] == "detach_volume" and detach[2]["request_uuid"] == "r-2"


@pytest.mark.parametrize("recovered", [False, True])
def test_the_compute_attach_says_whether_it_is_recovered(recovered):
    api = _api(compute_rpcapi.ComputeAPI)
    api.attach_volume(None, host="h", instance={}, bdm={}, multiattach=False,
                      event_started=True, recovered=recovered)
    ((method, _version, kwargs),) = api._client.sent
    assert method == "attach_volume"
    assert kwargs["recovered"] is recovered and kwargs["event_started"] is True


@pytest.mark.parametrize("recovered", [False, True])
def test_the_compute_detach_says_whether_it_is_recovered(recovered):
    api = _api(compute_rpcapi.ComputeAPI)
    api.detach_volume(None, host="h", instance={}, bdm={}, attachment_id="a",
                      recovered=recovered)
    ((method, _version, kwargs),) = api._client.sent
    assert method == "detach_volume" and kwargs["recovered"] is recovered
