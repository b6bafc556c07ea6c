"""Dangling volume attachments on an operator's request: route each server to its compute.

Why through the computes: only the compute can take a server's instance
lock (so no attach in progress is mistaken for a dangling one) and remove a
stale disk from the running domain. The conductor only finds each server's
host, skips those no compute can serve now, and keeps the answer in the
order asked.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from volumesvc.conductor.tasks import base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj

LOG = logging.getLogger(__name__)


def _skipped(instance_uuid, reason, dry_run):
    return {"instance_uuid": instance_uuid, "dry_run": dry_run, "removed_bdms": [],
            "deleted_attachments": [], "finished": [], "rolled_back": [], "busy": [],
            "errors": [], "skipped": reason}


class ReconcileTask(base.TaskBase):
    """Route each asked server to its compute; one report per server, in the order asked.

    Built as every task is, ``ReconcileTask(deps, context, instance_uuids=...,
    <the request's fields>)``. It serves a list of servers rather than one,
    so its ``instance_uuid`` is None. Nothing here changes a record: there is
    nothing to roll back (``TaskBase.rollback``'s default).
    """

    def __init__(self, deps, context, *, instance_uuids, dry_run=False, attachments=None,
                 available_volume_ids=None):
        super().__init__(deps, context, instance_uuid=None)
        self.instance_uuids = list(instance_uuids)
        self.dry_run = dry_run
        self.attachments = attachments
        self.available_volume_ids = available_volume_ids

    def _execute(self):
        """One report dict per asked server, in the order asked."""
        found = {i.uuid: i for i in instance_obj.list_instances(
            self.db, self.context, uuids=self.instance_uuids)}
        reports = {}
        by_host: dict[str, list[instance_obj.Instance]] = {}
        for uuid in self.instance_uuids:
            instance = found.get(uuid)
            if instance is None:
                reports[uuid] = _skipped(uuid, "server not found", self.dry_run)
            elif not instance.host:
                reports[uuid] = _skipped(uuid, "server has no host", self.dry_run)
            else:
                by_host.setdefault(instance.host, []).append(instance)
        for host, instances in by_host.items():
            for report in self._on_host(host, instances):
                reports[report["instance_uuid"]] = report
        return [reports[uuid] for uuid in self.instance_uuids]

    def _on_host(self, host, instances):
        uuids = {i.uuid for i in instances}
        # NOTE: the conductor's one answer to "is this compute up?" (an up
        # view read moments ago is reused, as for an attach).
        if not compute_host.get(self.conf, self.db, self.context, host,
                                cache=self.deps.up_cache).up:
            return [_skipped(u, f"compute host {host} is down", self.dry_run) for u in uuids]
        attachments = None
        payload = [i.to_dict() for i in instances]
        if self.attachments is not None:
            attachments = [a for a in self.attachments if a.get("instance") in uuids]
            # NOTE: with a listing made before this read, BDMs read here are
            # as good as BDMs read under the instance lock (a BDM always
            # exists before its attachment), and the compute saves two calls
            # per server: what makes a walk over thousands of servers cheap.
            bdms = bdm_obj.list_by_instances(self.db, self.context, uuids)
            for item in payload:
                item["bdms"] = [b.to_dict() for b in bdms[item["uuid"]]]
        try:
            return self.compute.reconcile_volume_attachments(
                self.context, host=host, instances=payload,
                dry_run=self.dry_run, attachments=attachments,
                available_volume_ids=self.available_volume_ids)
        except messaging.MessagingTimeout:
            LOG.warning("Compute %s did not answer the attachment reconciliation", host)
            return [_skipped(u, f"compute host {host} did not answer", self.dry_run)
                    for u in uuids]
