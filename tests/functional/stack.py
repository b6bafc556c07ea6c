"""The whole service in one process: API app, conductor and compute on fake://.

Real code everywhere except the process boundaries: the API is the real
Flask app (called through its WSGI interface), RPC goes through
oslo.messaging's in-memory ``fake:`` driver, the database is a migrated
SQLite file, Cinder is ``FakeCinder`` (volumes are sparse files) and the
hypervisor is the libvirt driver over the pure-Python fake libvirt.
"""

import json
import time
import uuid

from tests.fixtures import database as db_fixtures
from tests.fixtures.cinder import FakeCinder
from tests.fixtures.glance import FakeGlance
from tests.fixtures.keymgr import FakeKeyManager
from volumesvc import context as vs_context
from volumesvc import keymgr, rpc
from volumesvc.api.deps import Deps
from volumesvc.cmd import compute as compute_cmd
from volumesvc.cmd import conductor as conductor_cmd
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.conf import get_conf
from volumesvc.serving.app import create_app

# A 1 GiB blank root volume deleted with the server: the smallest boot.
BLANK_ROOT = [{"source_type": "blank", "destination_type": "volume", "boot_index": 0,
               "volume_size": 1, "delete_on_termination": True}]


class RecordingNotifier:
    """Collects versioned notifications (event_type, payload) for assertions."""

    def __init__(self):
        self.notifications = []

    def info(self, context, event_type, payload):
        self.notifications.append((event_type, payload))

    def error(self, context, event_type, payload):
        self.notifications.append((event_type, payload))

    def of(self, event_type):
        return [p for e, p in self.notifications if e == event_type]


class Stack:
    """One deployment: ``stack.api(...)`` talks HTTP to it, helpers poll state."""

    def __init__(self, tmp_path, *, hosts=("fn-compute",), conf_overrides=None,
                 cinder_wrapper=None):
        self.conf = get_conf(default_config_files=[])
        conf = self.conf
        conf.set_override("auth_strategy", "noauth2", group="api")
        conf.set_override("response_validation", "error", group="api")
        conf.set_override("transport_url", "fake:/")
        conf.set_override("report_interval", 1)
        conf.set_override("state_path", str(tmp_path))
        conf.set_override("compute_driver", "fake")
        conf.set_override("volume_wait_timeout", 10, group="compute")
        for (group, name), value in (conf_overrides or {}).items():
            conf.set_override(name, value, group=group)
        self.db = db_fixtures.sqlite_database(conf, str(tmp_path))
        self.cinder = FakeCinder(volume_dir=str(tmp_path / "volumes"))
        # Cinder's os-reimage reads the image from Glance and tells us with
        # a volume-reimaged event, as the real one posts it to the API.
        self.cinder.image_data = lambda image_id: self.glance.data.get(image_id)
        self.cinder.reimaged_hook = self._volume_reimaged
        # The key manager Cinder creates encrypted volumes' keys in and the
        # computes read them from (through volumesvc.keymgr).
        self.key_store = FakeKeyManager()
        self.cinder.create_key = self.key_store.create_key
        if cinder_wrapper is not None:
            self.cinder = cinder_wrapper(self.cinder)  # e.g. CountingCinder
        self.glance = FakeGlance()
        self.notifier = RecordingNotifier()
        self.transport = rpc.get_transport(conf)
        self.conductor = conductor_cmd.build_service(conf, self.transport, cinder=self.cinder,
                                                     glance=self.glance)
        self.computes = {}
        self.conductor.start()
        for host in hosts:
            self.add_compute(host)
        self.app = create_app(conf, deps=Deps(
            conf, db=self.db, conductor=conductor_rpcapi.ConductorAPI(conf, self.transport),
            compute=compute_rpcapi.ComputeAPI(conf, self.transport),
            cinder=self.cinder, glance=self.glance))
        self.client = self.app.test_client()

    def add_compute(self, host, overrides=None, driver=None):
        """Start a compute service on ``host`` (own conf copy: own host name).

        ``overrides``: ``{(group, name): value}`` for this compute only, e.g.
        ``{("virt", "disabled_capabilities"): ["supports_multiattach"]}``.
        ``driver``: reuse a stopped compute's driver, whose domains survive
        like QEMU processes outliving a killed compute agent.
        """
        conf = get_conf(default_config_files=[])
        for group in ("api", "compute", "libvirt", "virt", "upgrade_levels"):
            for name, _value in self.conf[group].items():
                conf.set_override(name, self.conf[group][name], group=group)
        for name in ("transport_url", "report_interval", "state_path", "compute_driver",
                     "executor_thread_pool_size", "rpc_response_timeout"):
            conf.set_override(name, self.conf[name])
        conf.set_override("host", host)
        for (group, name), value in (overrides or {}).items():
            conf.set_override(name, value, group=group)
        service = compute_cmd.build_service(conf, self.transport, cinder=self.cinder,
                                            notifier=self.notifier, glance=self.glance,
                                            driver=driver,
                                            keys=keymgr.KeyManager(conf, backend=self.key_store))
        service.start()
        self.computes[host] = service
        return service

    def _volume_reimaged(self, server_uuid, volume_id):
        self.api("POST", "/os-server-external-events", {"events": [
            {"name": "volume-reimaged", "server_uuid": server_uuid, "tag": volume_id}]},
            version="2.93")

    def set_policy(self, rules):
        """Override policy rules ({name: check string}) of the app's enforcer, as a policy file."""
        from oslo_policy import policy as oslo_policy

        enforcer = self.app.extensions["volumesvc"].enforcer
        enforcer.load_rules()
        enforcer.set_rules(oslo_policy.Rules.from_dict(rules), overwrite=False)

    def stop(self):
        for service in self.computes.values():
            service.stop()
        self.conductor.stop()
        self.db.dispose()

    # -- HTTP -----------------------------------------------------------------

    def api(self, method, path, body=None, *, version="2.1", token="admin:admin",
            status=None):
        headers = {"X-Auth-Token": token, "OpenStack-API-Version": f"compute {version}",
                   "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        resp = self.client.open(f"/v2.1{path}", method=method, headers=headers,
                                data=json.dumps(body) if body is not None else None)
        payload = json.loads(resp.data) if resp.data else None
        if status is not None:
            assert resp.status_code == status, (resp.status_code, payload)
        return resp.status_code, payload, resp.headers

    # -- polling -----------------------------------------------------------------

    def wait(self, predicate, timeout=15.0, what="condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def server(self, server_id, version="2.1"):
        status, body, _ = self.api("GET", f"/servers/{server_id}", version=version)
        return body["server"] if status == 200 else None

    def wait_for_server_status(self, server_id, statuses, version="2.1", timeout=15.0):
        statuses = (statuses,) if isinstance(statuses, str) else statuses

        def check():
            server = self.server(server_id, version)
            return server if server and server["status"] in statuses else None
        return self.wait(check, timeout, what=f"server {server_id} in {statuses}")

    def wait_for_server_gone(self, server_id, timeout=15.0):
        self.wait(lambda: self.api("GET", f"/servers/{server_id}")[0] == 404, timeout,
                  what=f"server {server_id} deleted")

    # -- direct rows (for tests of the conductor/compute side alone) ------------

    def boot(self, ctx, bdms, needs=(), flavorid="42", host=None):
        """Create an instance with ``bdms`` as the API would, cast the build, return uuid.

        ``host``: the compute to build it on (as 2.74's ``host``), else the scheduler's.
        """
        from volumesvc.objects import block_device as bdm_obj
        from volumesvc.objects import flavor as flavor_obj
        from volumesvc.objects import instance as instance_obj
        from volumesvc.objects import instance_action as action_obj

        flavor = flavor_obj.get_by_flavorid(self.db, ctx, flavorid)
        inst = instance_obj.create(self.db, ctx, {
            "project_id": ctx.project_id, "user_id": ctx.user_id, "display_name": "s1",
            "vm_state": "building", "task_state": "scheduling", "power_state": 0,
            "flavor": flavor.instance_copy()})
        for values in bdms:
            bdm_obj.create(self.db, ctx, dict(values, instance_uuid=inst.uuid))
        action_obj.action_start(self.db, ctx, inst.uuid, "create", ctx.request_id,
                                ctx.user_id, ctx.project_id)
        spec = {"needs": list(needs), **({"requested_host": host} if host else {})}
        self.conductor_api().build_instances(ctx, instance_uuids=[inst.uuid],
                                             request_spec=spec)
        return inst.uuid

    def populate_attached_servers(self, count, *, host="fn-compute"):
        """``count`` ACTIVE servers on ``host``, each with one attached volume, fast.

        Rows and Cinder records are written directly (no build, no domain):
        what a large deployment looks like to the attachment reconciliation.
        Returns [(server uuid, volume id, attachment id)].
        """
        import uuid as uuidlib

        from oslo_utils import timeutils

        from volumesvc.db import models

        ctx = self.admin_context()
        cinder = getattr(self.cinder, "inner", self.cinder)  # not counted
        made, instances, rows = [], [], []
        for i in range(count):
            server = str(uuidlib.uuid4())
            volume = cinder.create(ctx, 1, f"v{i}", "")
            attachment = cinder.attachment_create(ctx, volume["id"], server)
            info = cinder.attachment_update(ctx, attachment["id"], {"host": host})
            cinder.attachment_complete(ctx, attachment["id"])
            instances.append(models.Instance(
                uuid=server, project_id="p1", user_id="u1", display_name=f"s{i}",
                host=host, vm_state="active", task_state=None, power_state=1,
                launched_at=timeutils.utcnow()))
            rows.append(models.BlockDeviceMapping(
                uuid=str(uuidlib.uuid4()), instance_uuid=server, source_type="volume",
                destination_type="volume", volume_id=volume["id"],
                attachment_id=attachment["id"], device_name="/dev/sdb",
                connection_info=json.dumps(info)))
            made.append((server, volume["id"], attachment["id"]))
        with self.db.writer(ctx) as session:
            session.add_all(instances)
            session.flush()  # the BDMs' foreign key needs the instances first
            session.add_all(rows)
        return made

    def boot_active(self, count=1, bdms=BLANK_ROOT):
        """``count`` servers booted (rows made directly) and waited ACTIVE; their uuids."""
        uuids = [self.boot(self.context(), bdms) for _ in range(count)]
        for server_id in uuids:
            self.wait_instance(server_id, "active")
        return uuids

    def attach_volume(self, server_id, volume_id, *, version="2.60", status=200,
                      token="u1:p1", **fields):
        """POST os-volume_attachments; returns the response body."""
        return self.api("POST", f"/servers/{server_id}/os-volume_attachments",
                        {"volumeAttachment": {"volumeId": volume_id, **fields}},
                        version=version, token=token, status=status)[1]

    def conductor_api(self):
        return conductor_rpcapi.ConductorAPI(self.conf, self.transport)

    def wait_instance(self, uuid, vm_state, task_state=None):
        from volumesvc.objects import instance as instance_obj

        def check():
            inst = instance_obj.get_by_uuid(self.db, self.admin_context(), uuid)
            return inst if inst.vm_state == vm_state and inst.task_state == task_state \
                else None
        return self.wait(check, what=f"{uuid} {vm_state}/{task_state}")

    def events(self, ctx, uuid, request_id=None):
        """Finished events of an action (events close just after the state they report)."""
        from volumesvc import exception
        from volumesvc.objects import instance_action as action_obj

        def check():
            try:
                events = action_obj.get_action(self.db, ctx, uuid,
                                               request_id or ctx.request_id).events
            except exception.NotFound:
                return None  # not recorded yet
            return events if events and all(e.result for e in events) else None
        return self.wait(check, what="action events finished")

    @staticmethod
    def context(project="p1", request_id=None, admin=False):
        return vs_context.RequestContext(
            user_id="u1", project_id=project, roles=["admin"] if admin else ["member"],
            is_admin=admin, request_id=request_id or f"req-{uuid.uuid4()}")

    @staticmethod
    def admin_context():
        return vs_context.get_admin_context()

    @staticmethod
    def new_project():
        return uuid.uuid4().hex
