"""Domains of deleted servers left running on a compute: which count, and each action."""

import contextlib
import datetime
import json

import pytest
from oslo_utils import timeutils

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.compute import attach, running_deleted
from volumesvc.compute import bdm as bdm_mod
from volumesvc.conf import get_conf
from volumesvc.states import power_state

HOST = "cmp"
# The reaper reads the clock itself; an hour leaves room for a slow run.
NOW = timeutils.utcnow()
LONG_AGO = (NOW - datetime.timedelta(hours=1)).isoformat()


def _record(uuid, *, host=HOST, deleted_at=None):
    return {"uuid": uuid, "host": host, "instance_name": f"instance-{uuid}",
            "deleted": deleted_at is not None, "deleted_at": deleted_at,
            "vm_state": "deleted" if deleted_at else "active"}


def _bdm(uuid, volume_id, *, deleted_at, delete_on_termination=True, multiattach=False):
    info = {"driver_volume_type": "iscsi", "data": {"target_lun": 1},
            "serial": volume_id, "multiattach": multiattach}
    return {"uuid": f"bdm-{volume_id}", "instance_uuid": uuid, "volume_id": volume_id,
            "destination_type": "volume", "source_type": "volume", "boot_index": 0,
            "device_name": "/dev/sda", "connection_info": json.dumps(info),
            "delete_on_termination": delete_on_termination,
            "deleted": deleted_at is not None, "deleted_at": deleted_at}


class _Driver:
    def __init__(self, domains):
        self.domains = dict(domains)  # uuid -> power state
        self.calls = []

    def list_instance_uuids(self):
        return list(self.domains)

    def get_info(self, instance):
        return self.domains[instance["uuid"]]

    def power_off(self, instance):
        self.calls.append(("power_off", instance["uuid"]))
        self.domains[instance["uuid"]] = power_state.SHUTDOWN

    def destroy(self, instance, block_device_info=None):
        disks = [m["connection_info"]["serial"]
                 for m in (block_device_info or {}).get("block_device_mapping", [])]
        self.calls.append(("destroy", instance["uuid"], disks))
        self.domains.pop(instance["uuid"], None)

    def disconnect_volume(self, connection_info):
        self.calls.append(("disconnect", connection_info["serial"]))


class _Conductor:
    """Records by uuid; reads honour the context's read_deleted as the conductor's do."""

    def __init__(self, records, bdms=()):
        self.records = {r["uuid"]: r for r in records}
        self.bdms = list(bdms)

    def instance_list_by_host(self, ctxt, *, host, timeout=None):
        return [r for r in self.records.values() if r["host"] == host and not r["deleted"]]

    def instance_get(self, ctxt, *, instance_uuid):
        record = self.records.get(instance_uuid)
        if record is None or (record["deleted"] and ctxt.read_deleted == "no"):
            raise exception.InstanceNotFound(instance_id=instance_uuid)
        return record

    def bdm_list(self, ctxt, *, instance_uuid):
        return [b for b in self.bdms if b["instance_uuid"] == instance_uuid
                and (ctxt.read_deleted == "yes" or not b["deleted"])]


class _Cinder:
    def __init__(self, volumes):
        self.volumes = volumes  # id -> {"status": ..., "attachments": [...]}
        self.deleted = []

    def get(self, context, volume_id):
        if volume_id not in self.volumes:
            raise exception.VolumeNotFound(volume_id=volume_id)
        return dict(self.volumes[volume_id], id=volume_id)

    def delete(self, context, volume_id):
        self.deleted.append(volume_id)
        del self.volumes[volume_id]


class _Locks:
    def __init__(self):
        self.taken = []

    @contextlib.contextmanager
    def __call__(self, uuid):
        self.taken.append(uuid)
        yield


def _reaper(records, domains, *, action="reap", timeout=0, bdms=(), volumes=None):
    conf = get_conf(default_config_files=[])
    conf.set_override("host", HOST)
    conf.set_override("state_path", "/nonexistent-state")
    conf.set_override("running_deleted_instance_action", action)
    conf.set_override("running_deleted_instance_timeout", timeout)
    driver, conductor, cinder = _Driver(domains), _Conductor(records, bdms), _Cinder(volumes or {})
    # The compute's own attacher: a reaped domain goes the way a delete's does.
    attacher = attach.VolumeAttacher(conf, driver, conductor, cinder, keys=object())
    return running_deleted.RunningDeletedReaper(
        conf, host=HOST, driver=driver, conductor=conductor, cinder=cinder,
        attacher=attacher, lock=_Locks())


def _ctx():
    return vs_context.get_admin_context()


# -- the verdict ---------------------------------------------------------------------


@pytest.mark.parametrize(("record", "timeout", "verdict"), [
    (None, 0, running_deleted.Verdict.UNKNOWN),
    (_record("a"), 0, running_deleted.Verdict.LIVE_HERE),
    (_record("a", host="other"), 0, running_deleted.Verdict.ELSEWHERE),
    (_record("a", host=None), 0, running_deleted.Verdict.ELSEWHERE),
    (_record("a", deleted_at=LONG_AGO), 0, running_deleted.Verdict.RUNNING_DELETED),
    (_record("a", deleted_at=LONG_AGO), 3599, running_deleted.Verdict.RUNNING_DELETED),
    (_record("a", deleted_at=LONG_AGO), 3601, running_deleted.Verdict.TOO_RECENT),
    (_record("a", host="other", deleted_at=LONG_AGO), 0,
     running_deleted.Verdict.RUNNING_DELETED),
    (dict(_record("a", deleted_at=LONG_AGO), deleted_at=None), 0,
     running_deleted.Verdict.RUNNING_DELETED),
    (dict(_record("a", deleted_at=LONG_AGO), deleted_at=None), 10,
     running_deleted.Verdict.TOO_RECENT),
], ids=["no-record", "live-here", "live-elsewhere", "live-no-host", "deleted",
        "deleted-past-timeout", "deleted-within-timeout", "deleted-on-another-host",
        "deleted-no-stamp", "deleted-no-stamp-timeout"])
def test_verdict(record, timeout, verdict):
    assert running_deleted.judge(record, host=HOST, now=NOW, timeout=timeout) is verdict


def test_only_bdms_deleted_with_the_server_count():
    server = _record("a", deleted_at=LONG_AGO)
    earlier = (NOW - datetime.timedelta(days=1)).isoformat()
    def bdm(volume_id, deleted_at):
        return bdm_mod.BDM.from_wire(_bdm("a", volume_id, deleted_at=deleted_at))

    assert running_deleted.deleted_with(bdm("v1", LONG_AGO), server)
    assert not running_deleted.deleted_with(bdm("v2", earlier), server)
    assert not running_deleted.deleted_with(bdm("v3", None), server)


# -- finding -------------------------------------------------------------------------


def test_only_domains_of_deleted_servers_are_found(caplog):
    records = [_record("live"), _record("building"), _record("gone", deleted_at=LONG_AGO),
               _record("moved", host="other")]
    records[1]["vm_state"] = "building"
    reaper = _reaper(records, {u: power_state.RUNNING
                               for u in ("live", "building", "gone", "moved", "foreign")})
    caplog.set_level("INFO")
    assert [r["uuid"] for r in reaper.find(_ctx())] == ["gone"]
    # One line per kind left alone; the server's own domains are not mentioned.
    left = [r.getMessage() for r in caplog.records if "Left alone" in r.getMessage()]
    assert len(left) == 2
    assert any("moved" in m and "another host" in m for m in left)
    assert any("foreign" in m and "no server" in m for m in left)
    assert not any("live" in m.split(": ")[-1] for m in left)


def test_no_domain_asks_the_conductor_nothing():
    reaper = _reaper([], {})
    reaper.conductor = None  # any call would fail
    assert reaper.run(_ctx()) == []


# -- acting --------------------------------------------------------------------------


def test_noop_does_not_even_look():
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO)], {"gone": power_state.RUNNING},
                     action="noop")
    reaper.driver = None  # any call would fail
    assert reaper.run(_ctx()) == []


def test_log_leaves_the_domain_running(caplog):
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO)], {"gone": power_state.RUNNING},
                     action="log")
    assert reaper.run(_ctx()) == ["gone"]
    assert reaper.driver.domains == {"gone": power_state.RUNNING}
    assert reaper.driver.calls == []
    assert any("gone" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_shutdown_powers_off_once_and_keeps_the_definition():
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO)], {"gone": power_state.RUNNING},
                     action="shutdown")
    reaper.run(_ctx())
    reaper.run(_ctx())
    assert reaper.driver.calls == [("power_off", "gone")]
    assert reaper.driver.domains == {"gone": power_state.SHUTDOWN}


def test_a_domain_within_the_timeout_is_left():
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO)], {"gone": power_state.RUNNING},
                     timeout=7200)
    assert reaper.run(_ctx()) == []
    assert reaper.driver.domains == {"gone": power_state.RUNNING}


def test_reap_destroys_disconnects_and_deletes_what_the_server_owned():
    earlier = (NOW - datetime.timedelta(days=1)).isoformat()
    bdms = [_bdm("gone", "root", deleted_at=LONG_AGO),
            _bdm("gone", "keep", deleted_at=LONG_AGO, delete_on_termination=False),
            # Detached a day before the delete; the volume is now another server's.
            _bdm("gone", "old", deleted_at=earlier)]
    volumes = {"root": {"status": "available", "attachments": []},
               "keep": {"status": "available", "attachments": []},
               "old": {"status": "in-use", "attachments": [{"server_id": "live"}]}}
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO), _record("live")],
                     {"gone": power_state.RUNNING, "live": power_state.RUNNING},
                     bdms=bdms, volumes=volumes)
    assert reaper.run(_ctx()) == ["gone"]
    assert reaper.driver.calls == [("destroy", "gone", ["root", "keep"]),
                                   ("disconnect", "root"), ("disconnect", "keep")]
    assert reaper.cinder.deleted == ["root"]
    assert set(reaper.driver.domains) == {"live"}
    assert reaper._lock.taken == ["gone"]


def test_reap_keeps_a_connection_another_server_here_uses_and_an_attached_volume():
    bdms = [_bdm("gone", "shared", deleted_at=LONG_AGO, multiattach=True)]
    volumes = {"shared": {"status": "in-use", "multiattach": True,
                          "attachments": [{"server_id": "live"}]}}
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO), _record("live")],
                     {"gone": power_state.RUNNING, "live": power_state.RUNNING},
                     bdms=bdms, volumes=volumes)
    reaper.run(_ctx())
    assert reaper.driver.calls == [("destroy", "gone", ["shared"])]
    assert reaper.cinder.deleted == []


def test_reap_keeps_the_connection_of_a_volume_attached_here_since_it_was_released():
    """Not multiattach, yet in use here: the local delete released it, another server took it.

    A delete's own disconnect asks Cinder only about multiattach volumes; a
    reaped server's volumes were released while the domain still ran.
    """
    bdms = [_bdm("gone", "taken", deleted_at=LONG_AGO)]
    volumes = {"taken": {"status": "in-use", "attachments": [{"server_id": "live"}]}}
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO), _record("live")],
                     {"gone": power_state.RUNNING, "live": power_state.RUNNING},
                     bdms=bdms, volumes=volumes)
    assert reaper.run(_ctx()) == ["gone"]
    assert reaper.driver.calls == [("destroy", "gone", ["taken"])]
    assert reaper.cinder.deleted == []


def test_a_domain_destroyed_meanwhile_is_left_to_whoever_did_it():
    """The delete or build undo that held the lock already destroyed the domain."""
    reaper = _reaper([_record("gone", deleted_at=LONG_AGO)], {"gone": power_state.RUNNING})
    found = reaper.find(_ctx())
    reaper.find = lambda context: found
    reaper.driver.domains.clear()
    assert reaper.run(_ctx()) == []
    assert reaper.driver.calls == []


def test_one_failing_domain_does_not_stop_the_others():
    reaper = _reaper([_record("a", deleted_at=LONG_AGO), _record("b", deleted_at=LONG_AGO)],
                     {"a": power_state.RUNNING, "b": power_state.RUNNING})
    destroy = reaper.driver.destroy

    def failing(instance, block_device_info=None):
        if instance["uuid"] == "a":
            raise exception.VirtDriverError(reason="stuck")
        destroy(instance, block_device_info)
    reaper.driver.destroy = failing
    assert reaper.run(_ctx()) == ["b"]
    assert set(reaper.driver.domains) == {"a"}
