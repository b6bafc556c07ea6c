"""The 1.11 arguments of attach and detach go only where the version cap allows them."""

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
    """Records what would be sent, at which version; answers the cap like the real one."""

    def __init__(self, real):
        self.real, self.sent = real, []

    def can_send_version(self, version):
        return self.real.can_send_version(version)

    def prepare(self, version=None, **kwargs):
        return _Prepared(self.sent, version)


def _api(api_class, group, cap=None):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    if cap is not None:
        conf.set_override(group, cap, "upgrade_levels")
    api = api_class(conf, rpc.get_transport(conf))
    api._client = _Client(api._client)
    return api


def test_the_conductor_casts_carry_the_request_at_1_11():
    api = _api(conductor_rpcapi.ConductorAPI, "conductor")
    assert api.can_track_volume_requests()
    api.attach_volume(None, instance_uuid="i", volume_id="v", multiattach=False,
                      request_uuid="r-1")
    api.detach_volume(None, instance_uuid="i", volume_id="v", attachment_id="a",
                      request_uuid="r-2")
    attach, detach = api._client.sent
    assert attach[:2] == ("attach_volume", "1.11") and attach[2]["request_uuid"] == "r-1"
    assert detach[:2] == ("detach_volume", "1.11") and detach[2]["request_uuid"] == "r-2"


def test_without_a_request_the_casts_stay_at_their_old_versions():
    api = _api(conductor_rpcapi.ConductorAPI, "conductor")
    api.attach_volume(None, instance_uuid="i", volume_id="v", multiattach=False)
    api.detach_volume(None, instance_uuid="i", volume_id="v", attachment_id="a")
    attach, detach = api._client.sent
    assert attach[1] == "1.2" and "request_uuid" not in attach[2]
    assert detach[1] == "1.1" and "request_uuid" not in detach[2]


def test_a_conductor_pinned_below_1_11_is_not_given_requests():
    assert not _api(conductor_rpcapi.ConductorAPI, "conductor", "1.10") \
        .can_track_volume_requests()


@pytest.mark.parametrize("recovered, version", [(False, "1.8"), (True, "1.11")])
def test_the_compute_attach_says_recovered_at_1_11(recovered, version):
    api = _api(compute_rpcapi.ComputeAPI, "compute")
    api.attach_volume(None, host="h", instance={}, bdm={}, multiattach=False,
                      event_started=True, recovered=recovered)
    ((method, sent_version, kwargs),) = api._client.sent
    assert (method, sent_version) == ("attach_volume", version)
    assert kwargs.get("recovered", False) is recovered and kwargs["event_started"] is True


@pytest.mark.parametrize("recovered, version", [(False, "1.1"), (True, "1.11")])
def test_the_compute_detach_says_recovered_at_1_11(recovered, version):
    api = _api(compute_rpcapi.ComputeAPI, "compute")
    api.detach_volume(None, host="h", instance={}, bdm={}, attachment_id="a",
                      recovered=recovered)
    ((method, sent_version, kwargs),) = api._client.sent
    assert (method, sent_version) == ("detach_volume", version)
    assert kwargs.get("recovered", False) is recovered


def test_a_compute_pinned_below_1_11_cannot_take_recovered_work():
    assert _api(compute_rpcapi.ComputeAPI, "compute").can_take_recovered()
    assert not _api(compute_rpcapi.ComputeAPI, "compute", "1.10").can_take_recovered()
