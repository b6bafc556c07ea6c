"""The steps of one reconciliation pass, run as plain functions on a ``Pass``.

Doubles stand in for Cinder, the conductor and the driver (the functional
tier runs the real ones): what is checked is which step runs, what it asks
and what the report says.
"""

import dataclasses

import pytest

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import reconcile
from volumesvc.conf import get_conf
from volumesvc.states import attach_states
from volumesvc.volume import reconciliation


class RecordingCinder:
    """Answers reads from ``attachments``/``volumes``; records every write."""

    def __init__(self, attachments=(), volumes=(), fail=None):
        self.attachments = {a["id"]: a for a in attachments}
        self.volumes = {v["id"]: v for v in volumes}
        self.fail = dict(fail or {})  # method -> exception
        self.writes = []

    def _maybe_fail(self, method):
        if method in self.fail:
            raise self.fail[method]

    def attachment_get(self, ctxt, attachment_id):
        self._maybe_fail("attachment_get")
        if attachment_id not in self.attachments:
            raise exception.VolumeAttachmentNotFound(attachment_id=attachment_id)
        return self.attachments[attachment_id]

    def get(self, ctxt, volume_id):
        self._maybe_fail("get")
        if volume_id not in self.volumes:
            raise exception.VolumeNotFound(volume_id=volume_id)
        return self.volumes[volume_id]

    def attachment_delete(self, ctxt, attachment_id):
        self._maybe_fail("attachment_delete")
        self.writes.append(("attachment_delete", attachment_id))


class RecordingConductor:
    def __init__(self):
        self.destroyed = []

    def bdm_destroy(self, ctxt, *, bdm_uuid, values=None):
        self.destroyed.append((bdm_uuid, values))


class View:
    """A Cinder view double: every listed volume may have changed since the listing."""

    listed_under_lock = True

    def suspect_volume(self, volume_id):
        return True


def _pass(cinder, *, dry_run=False):
    ctxt = vs_context.get_admin_context()
    return reconcile.Pass(
        context=ctxt, admin=ctxt, uuid="server-1", driver_instance=None,
        report=reconciliation.Report(instance_uuid="server-1", dry_run=dry_run),
        dry_run=dry_run, timeout=600, host="cmp-1", driver=None,
        conductor=RecordingConductor(), cinder=cinder, attacher=None, keys=None)


def _bdm(volume_id, attachment_id):
    # No connection_info: nothing for the driver to detach.
    return bdm_mod.BDM.from_wire({"uuid": f"bdm-{volume_id}", "volume_id": volume_id,
                                  "attachment_id": attachment_id, "device_name": "/dev/vdb"})


def _work(**lists):
    return reconcile.Plan(**lists)


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_dry_run_reports_what_a_real_run_does(dry_run):
    cinder = RecordingCinder(volumes=[{"id": "v-kept", "status": "in-use"}])
    p = _pass(cinder, dry_run=dry_run)
    orphan = {"id": "a-orphan", "volume_id": "v-orphan", "status": "attached"}

    reconcile.apply(p, _work(unlisted=[_bdm("v-gone", "a-gone")],
                             attached=[(_bdm("v-kept", "a-kept"), {"id": "a-kept"})],
                             orphans=[orphan]), View())

    assert [e["volume_id"] for e in p.report.removed_bdms] == ["v-gone"]
    assert [e["attachment_id"] for e in p.report.deleted_attachments] == ["a-orphan"]
    assert p.report.errors == []
    if dry_run:
        assert cinder.writes == [] and p.conductor.destroyed == []
    else:
        assert cinder.writes == [("attachment_delete", "a-orphan")]
        assert p.conductor.destroyed == [("bdm-v-gone", None)]


def test_a_failed_step_is_reported_by_name_and_the_others_go_on():
    refused = exception.CinderAPIError(code=403, reason="policy")
    cinder = RecordingCinder(fail={"attachment_get": refused})
    p = _pass(cinder)
    orphan = {"id": "a-orphan", "volume_id": "v-orphan", "status": "attached"}

    reconcile.apply(p, _work(unlisted=[_bdm("v-1", "a-1")], orphans=[orphan]), View())

    assert p.report.errors == [f"check_unlisted: {refused}"]
    assert p.report.removed_bdms == []
    assert cinder.writes == [("attachment_delete", "a-orphan")]


def test_cinder_unreachable_ends_the_pass():
    down = exception.CinderConnectionFailed(reason="no route")
    cinder = RecordingCinder(fail={"attachment_get": down})
    p = _pass(cinder)
    orphan = {"id": "a-orphan", "volume_id": "v-orphan", "status": "attached"}

    with pytest.raises(exception.CinderConnectionFailed):
        reconcile.apply(p, _work(unlisted=[_bdm("v-1", "a-1")], orphans=[orphan]), View())
    assert cinder.writes == []


def test_a_stale_reservation_is_kept_as_the_attachs_error():
    p = _pass(RecordingCinder())

    reconcile.apply(p, _work(stale_reservations=[_bdm("v-1", None)]), View())

    (entry,) = p.report.removed_bdms
    assert entry["reason"] == "reservation without a Cinder attachment for more than 600s"
    ((bdm_uuid, values),) = p.conductor.destroyed
    assert bdm_uuid == "bdm-v-1"
    assert values["attach_status"] == attach_states.ERROR
    assert values["fault_code"] == 500


class DetachingConductor(RecordingConductor):
    """Knows the server's BDMs as they are now (read again by the detach step)."""

    def __init__(self, bdms):
        super().__init__()
        self.bdms = bdms

    def bdm_list(self, ctxt, *, instance_uuid):
        return bdm_mod.to_wire_list(self.bdms)  # the conductor answers with wire dicts


class RecordingAttacher:
    def __init__(self, fail=None):
        self.fail = fail
        self.calls = []

    def detach(self, context, driver_instance, bdm, attachment_id):
        self.calls.append(("detach", bdm.uuid, attachment_id))
        if self.fail is not None:
            raise self.fail

    def detach_failed(self, context, bdm, exc):
        self.calls.append(("detach_failed", bdm.uuid, str(exc)))


def _detach_pass(bdms, attacher, dry_run=False):
    p = _pass(RecordingCinder(), dry_run=dry_run)
    return dataclasses.replace(p, conductor=DetachingConductor(bdms), attacher=attacher)


def _detaching(volume_id, attachment_id):
    return _bdm(volume_id, attachment_id).replace(attach_status=attach_states.DETACHING)


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_interrupted_detach_is_finished_by_the_detach_itself(dry_run):
    bdm = _detaching("v-1", "a-1")
    attacher = RecordingAttacher()
    p = _detach_pass([bdm], attacher, dry_run)

    reconcile.apply(p, _work(interrupted_detaches=[(bdm, {"id": "a-1"})]), View())

    assert [(e["volume_id"], e["work"]) for e in p.report.finished] == [("v-1", "detach")]
    assert attacher.calls == ([] if dry_run else [("detach", "bdm-v-1", "a-1")])
    assert "finish interrupted detach of volume v-1" in p.report.summary()


@pytest.mark.parametrize("now", [[], [_bdm("v-1", "a-1").replace(
                                     attach_status=attach_states.ATTACHED)]],
                         ids=["gone", "attached-again"])
def test_a_detach_that_settled_since_the_listing_is_left_alone(now):
    attacher = RecordingAttacher()
    p = _detach_pass(now, attacher)

    reconcile.apply(p, _work(interrupted_detaches=[(_detaching("v-1", "a-1"),
                                                    {"id": "a-1"})]), View())

    assert attacher.calls == [] and not p.report.changed


def test_a_detach_that_cannot_be_finished_puts_the_bdm_back_with_the_reason():
    bdm = _detaching("v-1", "a-1")
    attacher = RecordingAttacher(fail=exception.CinderAPIError(code=500, reason="boom"))
    p = _detach_pass([bdm], attacher)

    reconcile.apply(p, _work(interrupted_detaches=[(bdm, {"id": "a-1"})]), View())

    assert [c[0] for c in attacher.calls] == ["detach", "detach_failed"]
    (entry,) = p.report.rolled_back
    assert entry["work"] == "detach" and "boom" in entry["reason"]
    assert p.report.remaining([bdm]) == [bdm]  # the BDM stays, attached again


def test_a_detach_cinder_cannot_answer_stays_detaching_for_a_later_pass():
    bdm = _detaching("v-1", "a-1")
    attacher = RecordingAttacher(fail=exception.CinderConnectionFailed(reason="no route"))
    p = _detach_pass([bdm], attacher)

    with pytest.raises(exception.CinderConnectionFailed):
        reconcile.apply(p, _work(interrupted_detaches=[(bdm, {"id": "a-1"})]), View())
    assert [c[0] for c in attacher.calls] == ["detach"]


# -- a root volume a rebuild released -------------------------------------------------


class RootCinder(RecordingCinder):
    """The root's attachment is ``reserved``; updating it gives this host's connection."""

    def __init__(self):
        super().__init__(volumes=[{"id": "v-root", "status": "reserved"}])

    def attachments_of(self):
        return [{"id": "a-root", "volume_id": "v-root", "status": "reserved"}]

    def attachment_update(self, ctxt, attachment_id, connector, mountpoint=None):
        self.writes.append(("attachment_update", attachment_id))
        return {"driver_volume_type": "iscsi", "data": {"target_lun": 1}}

    def attachment_complete(self, ctxt, attachment_id):
        self.writes.append(("attachment_complete", attachment_id))


class RootDriver:
    def get_volume_connector(self):
        return {"host": "cmp-1"}

    def connect_volume(self, connection_info):
        connection_info["data"]["device_path"] = "/dev/sdb"


class SavingConductor(RecordingConductor):
    def __init__(self):
        super().__init__()
        self.saved = []

    def bdm_update(self, ctxt, *, bdm_uuid, values):
        self.saved.append((bdm_uuid, values))


class RootView(View):
    def __init__(self, cinder):
        self.cinder = cinder

    def attachments(self, uuid):
        return self.cinder.attachments_of()


def test_a_root_connected_again_is_in_the_callers_listing_as_saved():
    """A reboot defines its domain from the listing it handed the reconciliation.

    The root's connection made by the pass must be in that list (as the
    dict updated in place once was), or the domain would lose its boot disk.
    """
    conf = get_conf(default_config_files=[])
    conf.set_override("host", "cmp-1")
    cinder, conductor = RootCinder(), SavingConductor()
    reconciler = reconcile.Reconciler(conf, driver=RootDriver(), conductor=conductor,
                                      cinder=cinder, attacher=None, keys=object())
    root = bdm_mod.BDM.from_wire({
        "uuid": "bdm-root", "destination_type": "volume", "volume_id": "v-root",
        "attachment_id": "a-root", "boot_index": 0, "device_name": "/dev/vda",
        "connection_info": None})
    listing = [root]

    report, remaining = reconciler.run(vs_context.get_admin_context(),
                                       {"uuid": "server-1"}, None,
                                       view=RootView(cinder), bdms=listing)

    assert [e["volume_id"] for e in report.finished] == ["v-root"]
    (connected,) = listing
    assert connected.connection_info == {"driver_volume_type": "iscsi", "serial": "v-root",
                                         "data": {"target_lun": 1,
                                                  "device_path": "/dev/sdb"}}
    assert remaining == [connected]
    (bdm_uuid, values), = conductor.saved
    assert bdm_uuid == "bdm-root" and values == {
        "connection_info": connected.connection_info_json}
    assert ("attachment_complete", "a-root") in cinder.writes
