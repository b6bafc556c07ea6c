"""A compute waits out its conductor's database outage instead of undoing a done attach.

Regression (MariaDB restarted in the middle of a 2.101 storm): the disk was
in the guest when the conductor call saving its connection information met
the database down; the compute undid the attach, could not record why
either, and the compute's reconciliation later removed the BDM: an accepted
attach with no trace.
"""

import oslo_messaging as messaging
import pytest

from volumesvc import context as vs_context
from volumesvc.common import outage
from volumesvc.compute import attach as attach_mod
from volumesvc.compute import bdm as bdm_mod
from volumesvc.conf import get_conf

DOWN = messaging.RemoteError(
    "DBConnectionError", "(pymysql.err.OperationalError) (2003, \"Can't connect\")", "tb")


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds

    def __call__(self):
        return self.now


class _Conductor:
    """Fails every call with the database down until ``down`` calls have failed."""

    def __init__(self, down):
        self.down = down
        self.calls = []

    def _answer(self, name, values):
        self.calls.append((name, values))
        if self.down > 0:
            self.down -= 1
            raise DOWN

    def bdm_update(self, ctxt, *, bdm_uuid, values, **kwargs):
        self._answer("bdm_update", values)

    def bdm_destroy(self, ctxt, *, bdm_uuid, values=None):
        self._answer("bdm_destroy", values)


class _Driver:
    def __init__(self):
        self.disks = []

    def get_volume_connector(self):
        return {"host": "cmp", "ip": "10.0.0.2"}

    def forget_volume_connector(self):
        pass

    def connect_volume(self, info):
        pass

    def disconnect_volume(self, info, **kwargs):
        pass

    def has_volume_disk(self, instance, volume_id):
        return volume_id in self.disks

    def attach_volume(self, info, instance, device, **kwargs):
        self.disks.append(info["serial"])

    def detach_volume(self, info, instance, device):
        self.disks.remove(info["serial"])


class _Cinder:
    def __init__(self):
        self.done = []

    def attachment_update(self, context, attachment_id, connector, mountpoint=None):
        return {"driver_volume_type": "local", "data": {"device_path": "/dev/x"}}

    def get(self, context, volume_id):
        return {"multiattach": False}

    def attachment_complete(self, context, attachment_id):
        self.done.append(("complete", attachment_id))

    def attachment_delete(self, context, attachment_id):
        self.done.append(("delete", attachment_id))


BDM = {"uuid": "bdm-1", "volume_id": "vol-1", "attachment_id": "att-1",
       "device_name": "/dev/vdb"}


def _attacher(down, wait=120):
    conf = get_conf(default_config_files=[])
    conf.set_override("database_outage_wait", wait, group="compute")
    attacher = attach_mod.VolumeAttacher(conf, _Driver(), _Conductor(down), _Cinder())
    clock = _Clock()
    attacher.patience = outage.Patience(wait, sleep=clock.sleep, clock=clock)
    return attacher, clock


def _ctx():
    return vs_context.RequestContext(request_id="req-1", overwrite=False)


def test_an_attach_whose_save_meets_the_database_down_finishes_once_it_is_back():
    attacher, clock = _attacher(down=3)
    attacher.attach(_ctx(), {"uuid": "srv-1"}, bdm_mod.BDM.from_wire(BDM))
    assert attacher.driver.disks == ["vol-1"]
    assert attacher.cinder.done == [("complete", "att-1")]
    saves = [values for name, values in attacher.conductor.calls if name == "bdm_update"]
    assert len(saves) == 4  # three refused, then the one report
    assert "connection_info" in saves[3] and saves[3]["attach_status"] == "attached"
    assert clock.slept == [1.0, 2.0, 4.0]


def test_an_outage_longer_than_the_wait_undoes_the_attach_and_records_why_when_it_can():
    attacher, clock = _attacher(down=3, wait=5)
    with pytest.raises(messaging.RemoteError):
        attacher.attach(_ctx(), {"uuid": "srv-1"}, bdm_mod.BDM.from_wire(BDM))
    assert attacher.driver.disks == []
    assert attacher.cinder.done == [("complete", "att-1"), ("delete", "att-1")]
    # Three tries of the save within 5 s (at 0, 1 and 3 s), then the record of
    # the failure: the database is back by then, and the ``error`` kept says why.
    (name, values), = [c for c in attacher.conductor.calls if c[0] == "bdm_destroy"]
    assert values["attach_status"] == "error" and "DBConnectionError" in values["fault_message"]
    assert clock.slept == [1.0, 2.0]


def test_a_detach_whose_last_step_meets_the_database_down_forgets_the_bdm_once_it_is_back():
    attacher, clock = _attacher(down=2)
    attacher.driver.disks.append("vol-1")
    info = '{"driver_volume_type": "local", "serial": "vol-1", "data": {}}'
    bdm = bdm_mod.BDM.from_wire(dict(BDM, connection_info=info))
    attacher.detach(_ctx(), {"uuid": "srv-1"}, bdm, "att-1")
    assert attacher.cinder.done == [("delete", "att-1")]
    assert [name for name, _ in attacher.conductor.calls] == ["bdm_destroy"] * 3


def test_other_failures_are_not_retried():
    refused = messaging.RemoteError("InstanceNotFound", "Instance srv-1 could not be found.")
    calls = []

    def call():
        calls.append(1)
        raise refused

    with pytest.raises(messaging.RemoteError):
        outage.Patience(120, sleep=lambda s: None).call("x", call)
    assert calls == [1]
    with pytest.raises(messaging.RemoteError):
        outage.Patience(0, sleep=lambda s: None).call("x", lambda: (_ for _ in ()).throw(DOWN))
