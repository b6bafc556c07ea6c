"""Claiming, recovering and giving up accepted volume requests, on SQLite.

The conductor's side only: a recording double stands in for the compute
RPC client (the functional tier runs the real computes), Cinder is the
in-memory ``FakeCinder``.
"""

import datetime

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from tests.fixtures import database as db_fixtures
from tests.fixtures.cinder import FakeCinder
from volumesvc import binaries, exception, version
from volumesvc import context as vs_context
from volumesvc.conductor import attach_watch, volume_requests
from volumesvc.conductor.tasks import attach as attach_task
from volumesvc.conductor.tasks import base as task_base
from volumesvc.conductor.tasks import detach as detach_task
from volumesvc.conf import get_conf
from volumesvc.db import models
from volumesvc.objects import attachment_status
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import service as service_obj
from volumesvc.objects import volume_request as request_obj
from volumesvc.states import attach_states

COMPUTE_HOST = "cmp-1"


class RecordingCompute:
    """Compute RPC client double: records every cast (the conductor makes the BDMs)."""

    def __init__(self, db):
        self.db = db
        self.casts = []
        self.before_cast = None  # called once before the next cast

    def ping(self, ctxt, *, host, timeout=None):
        return {"host": host}

    def _cast(self, name, kwargs):
        hook, self.before_cast = self.before_cast, None
        if hook is not None:
            hook()
        self.casts.append((name, kwargs))

    def attach_volume(self, ctxt, **kwargs):
        self._cast("attach_volume", kwargs)

    def detach_volume(self, ctxt, **kwargs):
        self._cast("detach_volume", kwargs)


def _bdm(db, instance_uuid, volume_id, **values):
    return bdm_obj.create(db, vs_context.get_admin_context(), {
        "instance_uuid": instance_uuid, "source_type": "volume",
        "destination_type": "volume", "volume_id": volume_id, "device_name": "/dev/sdb",
        "attach_status": attach_states.ATTACHING, **values})


class World:
    def __init__(self, tmp_path, **overrides):
        self.conf = get_conf(default_config_files=[])
        self.conf.set_override("host", "me")
        for name, value in overrides.items():
            self.conf.set_override(name, value, group="conductor")
        self.db = db_fixtures.sqlite_database(self.conf, str(tmp_path / "db"))
        self.cinder = FakeCinder(volume_dir=str(tmp_path / "volumes"))
        self.compute = RecordingCompute(self.db)
        self.requests = volume_requests.VolumeRequests(task_base.TaskDeps(
            self.conf, self.db, self.compute, self.cinder))
        self.admin = vs_context.get_admin_context()
        self.ctx = vs_context.RequestContext(user_id="u1", project_id="p1", roles=["member"],
                                             request_id="req-attach", overwrite=False)
        service_obj.heartbeat(self.db, self.admin, host=COMPUTE_HOST,
                              binary=binaries.COMPUTE, topic="compute",
                              version=version.SERVICE_VERSION)
        self.instance = self.server()
        self.volume = self.cinder.create(self.ctx, 1, "data", "")
        self._volumes = {}

    def server(self, **values):
        return instance_obj.create(self.db, self.admin, {
            "project_id": "p1", "user_id": "u1", "vm_state": "active",
            "host": COMPUTE_HOST, "launched_at": models.utcnow(), **values})

    def record(self, kind=request_obj.ATTACH, instance=None, **params):
        """A request for the world's volume (another server: a volume of its own)."""
        volume_id = self.volume["id"] if instance is None else self.volume_of(instance)
        instance = instance or self.instance
        params = {"instance_uuid": instance.uuid, "volume_id": volume_id,
                  "multiattach": False, **params}
        return request_obj.create(self.db, self.ctx, kind=kind, instance_uuid=instance.uuid,
                                  volume_id=volume_id, params=params)

    def volume_of(self, instance):
        """A volume for ``instance`` (the world's volume for the world's server)."""
        if instance.uuid == self.instance.uuid:
            return self.volume["id"]
        if instance.uuid not in self._volumes:
            self._volumes[instance.uuid] = self.cinder.create(self.ctx, 1, "more", "")["id"]
        return self._volumes[instance.uuid]

    def set_row(self, request, **values):
        model = models.VolumeRequest
        with self.db.writer(self.admin) as session:
            session.execute(sa.update(model).where(model.uuid == request.uuid).values(**values))

    def aged(self, request, seconds, **values):
        past = models.utcnow() - datetime.timedelta(seconds=seconds)
        self.set_row(request, created_at=past, **values)
        return request_obj.get_by_uuid(self.db, self.admin, request.uuid)

    def rows(self):
        with self.db.reader(self.admin) as session:
            return session.scalars(sa.select(models.VolumeRequest.uuid)).all()

    def bdms(self, instance=None):
        instance = instance or self.instance
        return [b for b in bdm_obj.list_by_instance(self.db, self.admin, instance.uuid)
                if b.volume_id == self.volume_of(instance)]

    def conductor_service(self, host, *, up):
        service_obj.heartbeat(self.db, self.admin, host=host, binary=binaries.CONDUCTOR,
                              topic="conductor", version=version.SERVICE_VERSION)
        if not up:
            model = models.Service
            with self.db.writer(self.admin) as session:
                session.execute(sa.update(model).where(model.host == host).values(
                    last_seen_up=models.utcnow() - datetime.timedelta(hours=1)))


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.db.dispose()


# -- the cast arrives -------------------------------------------------------------------

def test_a_cast_claims_runs_and_forgets_its_request(world):
    request = world.record()
    ran = []
    assert world.requests.run_cast(world.ctx, request.uuid, lambda: ran.append(1) or "bdm") \
        == "bdm"
    assert ran == [1] and world.rows() == []


def test_a_duplicate_delivery_does_nothing(world):
    request = world.record()
    request_obj.claim(world.db, world.ctx, request.uuid, "other-conductor")
    ran = []
    assert world.requests.run_cast(world.ctx, request.uuid, lambda: ran.append(1)) is None
    assert ran == [] and world.rows() == [request.uuid]
    # Settled and forgotten: a late delivery does nothing either.
    request_obj.delete(world.db, world.ctx, request.uuid)
    assert world.requests.run_cast(world.ctx, request.uuid, lambda: ran.append(1)) is None
    assert ran == []


def test_a_failed_task_forgets_its_request_too(world):
    request = world.record()

    def fail():
        raise exception.VolumeAlreadyAttached(volume_id="v", instance_uuids="i")
    with pytest.raises(exception.VolumeAlreadyAttached):
        world.requests.run_cast(world.ctx, request.uuid, fail)
    assert world.rows() == []


def test_a_task_that_met_the_database_down_is_run_again_by_the_next_pass(world):
    request = world.record()

    def database_gone():
        raise db_exc.DBConnectionError("server closed the connection")
    with pytest.raises(db_exc.DBConnectionError):
        world.requests.run_cast(world.ctx, request.uuid, database_gone)
    assert world.rows() == [request.uuid]
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == [] and len(world.bdms()) == 1


def test_a_request_whose_row_could_not_be_deleted_is_checked_again(world, monkeypatch):
    request = world.record()
    real_delete = request_obj.delete

    def unreachable(*args):
        raise RuntimeError("database unreachable")
    monkeypatch.setattr(request_obj, "delete", unreachable)
    world.requests.run_cast(world.ctx, request.uuid, lambda: None)
    monkeypatch.setattr(request_obj, "delete", real_delete)
    assert world.rows() == [request.uuid]
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == []


def test_a_remote_database_failure_counts_too():
    import oslo_messaging as messaging

    # (A cause of an adapter's error counts too: tests/unit/common/test_outage.py.)
    assert volume_requests.database_down(messaging.RemoteError("DBConnectionError", "x"))
    assert not volume_requests.database_down(ValueError("x"))


def test_a_database_failure_a_compute_met_calling_back_counts_too():
    """Regression: MariaDB restarted mid-storm, a compute's bdm_list call to a
    conductor (inside the conductor's reserve_block_device_name call to it) met
    the database down, and the accepted attach was dropped: the conductor saw a
    RemoteError of a RemoteError and did not take it for the database. RPC
    servers now send it as ``DatabaseUnavailable`` at every hop
    (tests/unit/common/test_outage.py), which is what the conductor gets."""
    import oslo_messaging as messaging

    assert volume_requests.database_down(exception.DatabaseUnavailable())
    # A class named only in the text is not read.
    inner = messaging.RemoteError(
        "DBConnectionError", "(pymysql.err.OperationalError) (2003, \"Can't connect\")", "tb")
    relayed = messaging.RemoteError("RemoteError", str(inner), "tb")
    assert not volume_requests.database_down(relayed)
    assert not volume_requests.database_down(
        messaging.RemoteError("DeviceNameUnavailable", "DBConnectionError in a name", "tb"))


# -- recovery: what is owed, to whom ----------------------------------------------------------

def test_a_lost_cast_is_run_after_the_grace_period_only(world):
    young = world.record()
    assert world.requests.recover(world.admin) == 0
    assert world.compute.casts == [] and world.rows() == [young.uuid]
    world.aged(young, 120)
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == []
    (bdm,) = world.bdms()
    assert bdm.attachment_id and world.compute.casts[0][0] == "attach_volume"
    # The replay acts as the user who asked, under the request's id.
    action = action_obj.get_action(world.db, world.admin, world.instance.uuid, "req-attach")
    assert (action.user_id, action.project_id) == ("u1", "p1")


def test_a_recovered_read_only_attach_is_still_read_only(world):
    """The 2.108 ``read_only`` is a recorded parameter: a re-run asks Cinder for ``ro``."""
    world.aged(world.record(read_only=True), 120)
    assert world.requests.recover(world.admin) == 1
    (bdm,) = world.bdms()
    assert bdm.read_only is True
    assert world.cinder.attachments[bdm.attachment_id]["attach_mode"] == "ro"
    assert world.compute.casts[0][1]["bdm"]["read_only"] is True


def test_a_request_claimed_by_a_dead_conductor_is_recovered(world):
    on_dead = world.record()
    request_obj.claim(world.db, world.ctx, on_dead.uuid, "dead-conductor")
    world.conductor_service("dead-conductor", up=False)
    world.conductor_service("live-conductor", up=True)
    other = world.server()
    on_live = world.record(instance=other)
    request_obj.claim(world.db, world.ctx, on_live.uuid, "live-conductor")
    never_seen = world.server()
    on_unknown = world.record(instance=never_seen)
    request_obj.claim(world.db, world.ctx, on_unknown.uuid, "gone-conductor")
    assert world.requests.recover(world.admin) == 2
    assert world.rows() == [on_live.uuid]
    assert len(world.bdms()) == 1 and len(world.bdms(never_seen)) == 1
    assert world.bdms(other) == []


def test_a_recovery_logs_under_its_own_request_and_leaves_the_pass_context(world):
    from oslo_context import context as oslo_context

    request = world.record()
    request_obj.claim(world.db, world.ctx, request.uuid, "dead-conductor")
    world.conductor_service("dead-conductor", up=False)
    seen = []
    world.compute.before_cast = lambda: seen.append(oslo_context.get_current())
    pass_context = vs_context.get_admin_context()
    pass_context.update_store()
    assert world.requests.recover(pass_context) == 1
    # The compute was asked (and the lines logged) under the accepted request.
    assert [c.request_id for c in seen] == ["req-attach"]
    assert oslo_context.get_current() is pass_context


def test_an_elevated_copy_does_not_become_the_threads_context(world):
    from oslo_context import context as oslo_context

    world.ctx.update_store()
    elevated = world.ctx.elevated()
    assert elevated.is_admin and oslo_context.get_current() is world.ctx


def test_requests_of_this_hosts_previous_process_are_recovered(world):
    before = world.record()
    request_obj.claim(world.db, world.ctx, before.uuid, "me")
    world.set_row(before, claimed_at=world.requests.started_at - datetime.timedelta(seconds=5))
    other = world.server()
    mine = world.record(instance=other)
    request_obj.claim(world.db, world.ctx, mine.uuid, "me")  # this process: in flight
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == [mine.uuid]
    assert len(world.bdms()) == 1 and world.bdms(other) == []


def test_the_startup_pass_runs_once_soon_after_start(world, monkeypatch):
    monkeypatch.setattr(volume_requests, "STARTUP_DELAY", 0.01)
    request = world.record()
    request_obj.claim(world.db, world.ctx, request.uuid, "me")
    world.set_row(request, claimed_at=world.requests.started_at - datetime.timedelta(seconds=1))
    world.requests.start()
    world.requests._thread.join(10)
    assert world.rows() == [] and len(world.bdms()) == 1


# -- giving up --------------------------------------------------------------------------------

def test_an_attach_that_keeps_losing_its_conductor_is_given_up(world):
    request = world.record()
    attachment = world.cinder.attachment_create(world.ctx, world.volume["id"],
                                                world.instance.uuid)
    bdm = _bdm(world.db, world.instance.uuid, world.volume["id"],
               attachment_id=attachment["id"])
    request_obj.claim(world.db, world.ctx, request.uuid, "dead-conductor")
    world.set_row(request, attempts=3)
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == [] and world.bdms() == [] and world.compute.casts == []
    assert world.cinder.attachments == {}
    (failed,) = attachment_status.list_failed(world.db, world.admin, world.instance.uuid, 600)
    assert failed.uuid == bdm.uuid and failed.attach_status == attach_states.ERROR
    assert "given up after 3 attempts" in failed.fault_message
    events = action_obj.get_action(world.db, world.admin, world.instance.uuid,
                                   "req-attach").events
    assert [(e.event, e.result) for e in events] == [(attach_task.EVENT, "Error")]


def _detaching(world):
    """The world's volume attached, then accepted for detach as the API leaves it."""
    attachment = world.cinder.attachment_create(world.ctx, world.volume["id"],
                                                world.instance.uuid)
    world.cinder.attachment_complete(world.ctx, attachment["id"])
    bdm = _bdm(world.db, world.instance.uuid, world.volume["id"],
               attachment_id=attachment["id"], connection_info="{}",
               attach_status=attach_states.DETACHING)
    world.cinder.begin_detaching(world.ctx, world.volume["id"])
    action_obj.action_start(world.db, world.ctx, world.instance.uuid, "detach_volume",
                            "req-attach", "u1", "p1")
    request = world.record(request_obj.DETACH, attachment_id=attachment["id"])
    task = detach_task.DetachTask(world.requests.deps, world.ctx,
                                  instance_uuid=world.instance.uuid,
                                  volume_id=world.volume["id"],
                                  attachment_id=attachment["id"])
    return bdm, request, task


def _assert_put_back(world, bdm, reason):
    """The detach undone: settled, volume in-use, BDM attached with ``reason``, Error event."""
    assert world.rows() == [] and world.compute.casts == []
    assert world.cinder.get(world.ctx, world.volume["id"])["status"] == "in-use"
    (kept,) = world.bdms()
    assert kept.uuid == bdm.uuid and kept.attach_status == attach_states.ATTACHED
    assert kept.fault_code == 500 and reason in kept.fault_message
    events = action_obj.get_action(world.db, world.admin, world.instance.uuid,
                                   "req-attach").events
    assert [(e.event, e.result) for e in events] == [(detach_task.EVENT, "Error")]


def test_a_detach_that_keeps_losing_its_conductor_puts_the_volume_back(world):
    bdm, request, _ = _detaching(world)
    request_obj.claim(world.db, world.ctx, request.uuid, "dead-conductor")
    world.set_row(request, attempts=3)
    assert world.requests.recover(world.admin) == 1
    _assert_put_back(world, bdm, "given up")


# -- re-running an attach from where it stopped -------------------------------------------------

def _rerun(world, request=None):
    request = request or world.record()
    world.requests.rerun(request_obj.get_by_uuid(world.db, world.admin, request.uuid))


def test_a_rerun_with_nothing_done_attaches(world):
    _rerun(world)
    (bdm,) = world.bdms()
    assert bdm.attachment_id and bdm.device_name == "/dev/sda"
    (cast,) = world.compute.casts
    assert cast[1]["bdm"]["uuid"] == bdm.uuid and cast[1]["recovered"] is False


def test_a_rerun_replaces_the_dead_runs_reservation(world):
    orphan = _bdm(world.db, world.instance.uuid, world.volume["id"])
    _rerun(world)
    (bdm,) = world.bdms()
    assert bdm.uuid != orphan.uuid and bdm.attachment_id
    assert len(world.compute.casts) == 1


def test_a_rerun_deletes_the_attachment_its_first_run_never_recorded(world):
    # The first run made the Cinder attachment, then died before the BDM.
    unrecorded = world.cinder.attachment_create(world.ctx, world.volume["id"],
                                                world.instance.uuid)
    other_server = world.server()
    elsewhere = world.cinder.attachment_create(world.ctx, world.volume_of(other_server),
                                               other_server.uuid)
    _rerun(world)
    (bdm,) = world.bdms()
    assert bdm.attachment_id and bdm.attachment_id != unrecorded["id"]
    assert unrecorded["id"] not in world.cinder.attachments
    # Only this volume's reservations on this server are the dead run's.
    assert elsewhere["id"] in world.cinder.attachments
    assert [a["id"] for a in world.cinder.attachment_get_all(
        world.admin, instance_id=world.instance.uuid, all_tenants=True)] == [bdm.attachment_id]


class _LaterReleases(attach_watch.AttachWatch):
    """The conductor's watch, with the releases it was asked for kept instead of timed."""

    def __init__(self, world):
        super().__init__(world.conf, db=world.db, compute_rpcapi=world.compute)
        self.later = []

    def release_later(self, task, attempt=1):
        self.later.append(task)


def test_a_rerun_looks_again_for_an_attachment_the_dead_runs_slow_cinder_made_late(world):
    """Regression (cluster, conductor SIGKILL mid-storm, under load): the dead run's
    attachment create was still inside cinder-api when the re-run released the
    unrecorded reservations; Cinder made it just after, and the volume stayed
    ``reserved`` with no BDM. The re-run now looks again once it would be stale."""
    watch = _LaterReleases(world)
    world.requests = volume_requests.VolumeRequests(task_base.TaskDeps(
        world.conf, world.db, world.compute, world.cinder, watch=watch))
    _rerun(world)
    (bdm,) = world.bdms()
    late = world.cinder.attachment_create(world.ctx, world.volume["id"], world.instance.uuid)
    (task,) = watch.later
    assert watch.release(task, 1)
    assert late["id"] not in world.cinder.attachments
    assert [a["id"] for a in world.cinder.attachment_get_all(
        world.admin, instance_id=world.instance.uuid, all_tenants=True)] == [bdm.attachment_id]


def test_an_admins_rerun_finds_the_unrecorded_attachment_in_the_servers_project(world):
    """An admin of project ``ops`` attached p1's volume: Cinder lists ``ops`` by default."""
    admin = vs_context.RequestContext(user_id="root", project_id="ops", roles=["admin"],
                                      is_admin=True, request_id="req-admin", overwrite=False)
    unrecorded = world.cinder.attachment_create(world.ctx, world.volume["id"],
                                                world.instance.uuid)
    params = {"instance_uuid": world.instance.uuid, "volume_id": world.volume["id"],
              "multiattach": False}
    request = request_obj.create(world.db, admin, kind=request_obj.ATTACH,
                                 instance_uuid=world.instance.uuid,
                                 volume_id=world.volume["id"], params=params)
    _rerun(world, request)
    assert unrecorded["id"] not in world.cinder.attachments
    (bdm,) = world.bdms()
    assert bdm.attachment_id in world.cinder.attachments


def test_a_rerun_after_the_attachment_tells_the_compute_again(world):
    attachment = world.cinder.attachment_create(world.ctx, world.volume["id"],
                                                world.instance.uuid)
    bdm = _bdm(world.db, world.instance.uuid, world.volume["id"],
               attachment_id=attachment["id"])
    _rerun(world)
    (cast,) = world.compute.casts
    assert cast[0] == "attach_volume" and cast[1]["recovered"] is True
    assert cast[1]["bdm"]["uuid"] == bdm.uuid
    assert len(world.cinder.attachments) == 1


def test_a_rerun_of_a_done_attach_does_nothing(world):
    _bdm(world.db, world.instance.uuid, world.volume["id"], attachment_id="a-1",
         connection_info="{}")
    _rerun(world)
    assert world.compute.casts == []


def test_an_offloaded_attach_rerun_completes_what_is_there(world):
    offloaded = world.server(host=None, vm_state="shelved_offloaded")
    attachment = world.cinder.attachment_create(world.ctx, world.volume_of(offloaded),
                                                offloaded.uuid)
    _bdm(world.db, offloaded.uuid, world.volume_of(offloaded), attachment_id=attachment["id"],
         device_name=None)
    request = world.record(instance=offloaded)
    _rerun(world, request)
    _rerun(world, request)  # and again: still one of each
    assert len(world.bdms(offloaded)) == 1 and len(world.cinder.attachments) == 1
    assert world.cinder.get(world.ctx, world.volume_of(offloaded))["status"] == "in-use"
    assert world.compute.casts == []
    (action,) = action_obj.list_actions(world.db, world.admin, offloaded.uuid)
    assert action.action == attach_task.ACTION


def test_an_offloaded_attach_rerun_with_nothing_done_attaches(world):
    offloaded = world.server(host=None, vm_state="shelved_offloaded")
    _rerun(world, world.record(instance=offloaded))
    (bdm,) = world.bdms(offloaded)
    assert bdm.attachment_id
    assert world.cinder.get(world.ctx, world.volume_of(offloaded))["status"] == "in-use"


# -- re-running a detach ------------------------------------------------------------------------

def test_a_detach_rerun_whose_bdm_is_gone_does_nothing(world):
    _rerun(world, world.record(request_obj.DETACH, attachment_id="a-1"))
    assert world.compute.casts == []


def test_a_detach_rerun_tells_the_compute_again(world):
    bdm = _bdm(world.db, world.instance.uuid, world.volume["id"], attachment_id="a-1",
               connection_info="{}")
    _rerun(world, world.record(request_obj.DETACH, attachment_id="a-1"))
    (cast,) = world.compute.casts
    assert cast[0] == "detach_volume" and cast[1]["recovered"] is True
    assert cast[1]["bdm"]["uuid"] == bdm.uuid and cast[1]["attachment_id"] == "a-1"


def test_an_offloaded_detach_rerun_finishes_here(world):
    offloaded = world.server(host=None, vm_state="shelved_offloaded")
    attachment = world.cinder.attachment_create(world.ctx, world.volume_of(offloaded),
                                                offloaded.uuid)
    _bdm(world.db, offloaded.uuid, world.volume_of(offloaded), attachment_id=attachment["id"])
    request = world.record(request_obj.DETACH, instance=offloaded,
                           attachment_id=attachment["id"])
    _rerun(world, request)
    _rerun(world, request)
    assert world.bdms(offloaded) == [] and world.cinder.attachments == {}
    assert world.compute.casts == []


def test_a_detach_cast_tells_the_compute_once_and_settles(world):
    bdm, request, task = _detaching(world)
    world.requests.run_cast(world.ctx, request.uuid, task.execute)
    (cast,) = world.compute.casts
    assert cast[0] == "detach_volume" and cast[1]["recovered"] is False
    assert cast[1]["bdm"]["uuid"] == bdm.uuid
    assert world.rows() == []


def _detach_meeting(world, error):
    """A detach cast run while casting to the compute raises ``error``."""
    bdm, request, task = _detaching(world)

    def fail():
        raise error

    world.compute.before_cast = fail
    with pytest.raises(type(error)):
        world.requests.run_cast(world.ctx, request.uuid, task.execute)
    return bdm, request


def test_a_detach_whose_cast_failed_puts_the_volume_back(world):
    """Regression: the BDM stayed ``detaching`` (and the volume too) for ever."""
    bdm, _ = _detach_meeting(world, exception.VolumesvcException("the bus refused the cast"))
    _assert_put_back(world, bdm, "refused the cast")


def test_a_detach_that_met_the_database_down_is_left_for_its_rerun(world):
    _, request = _detach_meeting(world, db_exc.DBConnectionError("gone"))
    (kept,) = world.bdms()
    assert kept.attach_status == attach_states.DETACHING and kept.fault_code is None
    assert world.cinder.get(world.ctx, world.volume["id"])["status"] == "detaching"
    assert world.rows() == [request.uuid]


def test_an_offloaded_detach_cinder_refused_keeps_the_bdm_and_says_why(world, monkeypatch):
    offloaded = world.server(host=None, vm_state="shelved_offloaded")
    attachment = world.cinder.attachment_create(world.ctx, world.volume_of(offloaded),
                                                offloaded.uuid)
    bdm = _bdm(world.db, offloaded.uuid, world.volume_of(offloaded),
               attachment_id=attachment["id"], attach_status=attach_states.ATTACHED)
    action_obj.action_start(world.db, world.ctx, offloaded.uuid, "detach_volume",
                            "req-attach", "u1", "p1")

    def refused(ctxt, attachment_id):
        raise exception.CinderConnectionFailed(reason="refused")

    monkeypatch.setattr(world.cinder, "attachment_delete", refused)
    task = detach_task.DetachTask(world.requests.deps, world.ctx, instance_uuid=offloaded.uuid,
                                  volume_id=world.volume_of(offloaded),
                                  attachment_id=attachment["id"])
    with pytest.raises(exception.CinderConnectionFailed):
        task.execute()
    (kept,) = world.bdms(offloaded)
    assert kept.uuid == bdm.uuid and kept.attach_status == attach_states.ATTACHED
    events = action_obj.get_action(world.db, world.admin, offloaded.uuid, "req-attach").events
    assert [(e.event, e.result) for e in events] == [(detach_task.EVENT, "Error")]
    assert "refused" in events[0].details


def test_a_rerun_for_a_deleted_server_is_settled(world):
    request = world.record()
    request_obj.claim(world.db, world.ctx, request.uuid, "dead-conductor")
    instance_obj.destroy(world.db, world.admin, world.instance.uuid)
    assert world.requests.recover(world.admin) == 1
    assert world.rows() == []


def test_every_conductor_runs_the_recovery_on_its_interval():
    from volumesvc import periodic
    from volumesvc.conductor.manager import ConductorManager

    conf = get_conf(default_config_files=[])
    manager = ConductorManager(conf, db=None, compute_rpcapi=None, cinder=None)
    (task,) = [t for t in periodic.tasks_of(manager, conf) if "volume_requests" in t.name]
    assert (task.interval, task.option) == (
        15.0, "[conductor] volume_request_recovery_interval")
