"""The pure part of the dangling-attachment reconciliation: what counts as dangling."""

import datetime

import oslo_messaging
import pytest

from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import reconcile
from volumesvc.volume import cinder, reconciliation

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)
OLD = (NOW - datetime.timedelta(seconds=700)).isoformat()
NEW = (NOW - datetime.timedelta(seconds=5)).isoformat()


def _bdm(volume_id, attachment_id=None, updated=NEW, connected=True):
    return {"uuid": f"bdm-{volume_id}", "destination_type": "volume", "volume_id": volume_id,
            "attachment_id": attachment_id, "created_at": updated, "updated_at": None,
            "connection_info": "{}" if connected else None}


def _att(attachment_id, volume_id, status="attached"):
    return {"id": attachment_id, "volume_id": volume_id, "status": status, "instance": "i"}


def _plan(bdms, atts, recovering=False):
    return reconcile.plan(bdm_mod.from_wire_list(bdms), atts, now=NOW, timeout=600,
                          recovering=recovering)


def test_matched_pairs_are_kept_and_strays_sorted():
    p = _plan([_bdm("v1", "a1"), _bdm("v2", "a2")],
              [_att("a1", "v1"), _att("a3", "v3"), _att("a4", "v4", "reserved")])
    assert [b.volume_id for b, _ in p.attached] == ["v1"]
    assert [b.volume_id for b in p.unlisted] == ["v2"]
    assert [a["id"] for a in p.orphans] == ["a3"]
    assert [a["id"] for a in p.orphans_in_progress] == ["a4"]


def test_a_reservation_is_busy_until_it_is_stale():
    young = _plan([_bdm("v1")], [_att("a1", "v1", "reserved")])
    assert [b["volume_id"] for b in young.busy] == ["v1", "v1"]  # the BDM and its attachment
    assert young.orphans == young.orphans_in_progress == young.stale_reservations == []
    old = _plan([_bdm("v1", updated=OLD)], [_att("a1", "v1", "reserved")])
    assert [b.volume_id for b in old.stale_reservations] == ["v1"]
    assert [a["id"] for a in old.orphans_in_progress] == ["a1"]


def test_pending_attaches_wait_for_the_timeout_unless_the_compute_restarted():
    bdms = [_bdm("v1", "a1", connected=False), _bdm("v2", "a2", connected=False)]
    atts = [_att("a1", "v1", "reserved"), _att("a2", "v2", "attaching")]
    assert [b["volume_id"] for b in _plan(bdms, atts).busy] == ["v1", "v2"]
    recovering = _plan(bdms, atts, recovering=True)
    assert [b.volume_id for b, _ in recovering.interrupted] == ["v2"]
    old = [dict(b, created_at=OLD) for b in bdms]
    assert [b.volume_id for b, _ in _plan(old, atts).interrupted] == ["v1", "v2"]


def test_a_detach_is_interrupted_once_the_compute_restarted_or_it_went_stale():
    """Regression: a detach whose compute died in it stayed ``detaching`` for ever."""
    bdms = [dict(_bdm("v1", "a1"), attach_status="detaching"),
            dict(_bdm("v2", "a2"), attach_status="attached")]
    atts = [_att("a1", "v1"), _att("a2", "v2")]
    live = _plan(bdms, atts)
    assert [b.volume_id for b, _ in live.attached] == ["v1", "v2"]
    assert live.interrupted_detaches == []
    recovering = _plan(bdms, atts, recovering=True)
    assert [(b.volume_id, a["id"]) for b, a in recovering.interrupted_detaches] == \
        [("v1", "a1")]
    assert [b.volume_id for b, _ in recovering.attached] == ["v2"]
    old = [dict(b, created_at=OLD) for b in bdms]
    assert [b.volume_id for b, _ in _plan(old, atts).interrupted_detaches] == ["v1"]


def test_a_finished_detach_leaves_the_remaining_bdms_and_a_failed_one_does_not():
    report = reconciliation.Report(instance_uuid="i")
    report.finished.append({"volume_id": "v1", "bdm_uuid": "b1", "work": "detach"})
    report.finished.append({"volume_id": "v2", "bdm_uuid": "b2"})
    report.rolled_back.append({"volume_id": "v3", "bdm_uuid": "b3", "work": "detach",
                               "reason": "r"})
    report.rolled_back.append({"volume_id": "v4", "bdm_uuid": "b4", "reason": "r"})
    bdms = [{"uuid": f"b{i}"} for i in range(1, 5)]
    assert [b.uuid for b in report.remaining(bdm_mod.from_wire_list(bdms))] == ["b2", "b3"]
    assert "finish interrupted detach of volume v1" in report.summary()
    assert "roll back detach of volume v3: r" in report.summary()


def test_a_root_volume_a_rebuild_released_is_never_taken_for_an_abandoned_attach():
    root = dict(_bdm("v1", "a1", updated=OLD, connected=False), boot_index=0)
    data = dict(_bdm("v2", "a2", updated=OLD, connected=False), boot_index=None)
    atts = [_att("a1", "v1", "reserved"), _att("a2", "v2", "reserved")]
    for recovering in (False, True):
        p = _plan([root, data], atts, recovering=recovering)
        assert [b.volume_id for b, _ in p.released_roots] == ["v1"]
        assert [b.volume_id for b, _ in p.interrupted] == ["v2"]
    # Nor one the rebuild had given Cinder the connector for: no domain to attach it into.
    for connected in (False, True):
        attaching = _plan([dict(root, connection_info="{}" if connected else None)],
                          [_att("a1", "v1", "attaching")], recovering=True)
        assert attaching.interrupted == [] and len(attaching.released_roots) == 1


def test_unknown_age_is_never_stale():
    assert not reconcile.is_stale({"updated_at": None, "created_at": None}, NOW, 1)
    assert reconcile.is_stale({"updated_at": "2026-11-30T11:00:00.000000"}, NOW, 1)


def test_snapshot_view_serves_many_servers_from_one_listing():
    view = reconciliation.SnapshotView([dict(_att("a1", "v1"), instance="s1"),
                                   dict(_att("a2", "v2"), instance="s2")], ["v2"])
    assert [a["id"] for a in view.attachments("s2")] == ["a2"]
    assert view.attachments("s3") == []
    assert view.suspect_volume("v2") and not view.suspect_volume("v1")


def test_list_all_pages_until_a_short_page():
    items = [{"id": str(i)} for i in range(25)]
    calls = []

    def page(marker=None, limit=None):
        calls.append(marker)
        start = 0 if marker is None else int(marker) + 1
        return items[start:start + limit]
    assert cinder.list_all(page, 10) == items
    assert calls == [None, "9", "19"]


@pytest.mark.parametrize("error,reason", [
    (exception.CinderConnectionFailed(reason="refused"), reconciliation.Reason.CINDER_UNAVAILABLE),
    (exception.CinderAPIError(code=503, reason="busy"), reconciliation.Reason.CINDER_UNAVAILABLE),
    (exception.CinderAPIError(code=413, reason="limit"), reconciliation.Reason.CINDER_REFUSED),
    (exception.Forbidden(), reconciliation.Reason.CINDER_REFUSED),
    (oslo_messaging.MessagingTimeout("no conductor"), reconciliation.Reason.CONDUCTOR_UNAVAILABLE),
    (exception.InstanceNotFound(instance_id="x"), reconciliation.Reason.NOT_FOUND),
    (exception.VolumeNotFound(volume_id="v"), reconciliation.Reason.FAILED),
    (TypeError("a bug"), reconciliation.Reason.BUG),
    (KeyError("status"), reconciliation.Reason.BUG)])
def test_reason_of_an_exception_is_decided_by_its_class(error, reason):
    assert reconciliation.reason_of(error) is reason
    report = reconciliation.Report(instance_uuid="x", skipped=str(error), reason=reason)
    assert report.retry == (reason in {reconciliation.Reason.CINDER_UNAVAILABLE,
                                       reconciliation.Reason.CONDUCTOR_UNAVAILABLE})
    assert "reason" not in report.to_dict()  # stays on the compute: the RPC reply is unchanged
