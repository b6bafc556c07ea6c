"""``volumesvc-manage volume_attachment``: look at and repair dangling volume attachments.

``show <server> <volume> [--json]``
    The BDM of the volume on the server and what Cinder says about it.
    Exit codes: 0 ok, 1 error, 2 server not found, 3 volume not attached.

``cleanup <server> [--dry-run] [--json]`` and ``cleanup --all-servers
[--batch-size N] [--dry-run] [--json]``
    The reconciliation a reboot runs (doc/source/contributor/contract.rst §10), without the reboot:
    through the conductor to each server's compute, which holds the server's
    lock and removes a stale disk from the running domain too. ``--dry-run``
    reports without changing anything. ``--all-servers`` walks every server
    of every host in batches; Cinder is listed once for the whole walk (its
    requests grow with pages of attachments, not with servers), shows
    progress on a terminal and ends with a summary line.
    A Cinder attachment no BDM knows is deleted at once, in any status, for
    ``cleanup <server>`` (Cinder is listed under the server's lock); with
    ``--all-servers`` one still in progress (``reserved``, ``attaching``,
    ``detaching``) is left alone until its volume has not changed for
    ``[compute] attachment_reservation_timeout`` (the listing predates the
    lock, so it may be an attach that has just begun).
    Exit codes: 0 done (whether or not anything dangled), 1 error, 2 server
    not found, 3 server skipped (no host, host down, busy in a task, never
    launched, Cinder unreachable; the reason is printed), 4 done but some
    items could not be repaired (printed; run it again).
"""

import contextlib
import json
import sys

EXIT_OK, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_SKIPPED, EXIT_PARTIAL = 0, 1, 2, 3, 4
DEFAULT_BATCH = 100


def add_parsers(subparsers):
    va = subparsers.add_parser("volume_attachment", help=VolumeAttachmentCommands.__doc__)
    actions = va.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help=VolumeAttachmentCommands.show.__doc__)
    show.add_argument("server_id")
    show.add_argument("volume_id")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    clean = actions.add_parser("cleanup", help=VolumeAttachmentCommands.cleanup.__doc__)
    clean.add_argument("server_id", nargs="?", default=None)
    clean.add_argument("--all-servers", action="store_true",
                       help="every server of every host, in batches (for cron jobs)")
    clean.add_argument("--batch-size", type=int, default=DEFAULT_BATCH,
                       help=f"servers per compute call with --all-servers ({DEFAULT_BATCH})")
    clean.add_argument("--dry-run", action="store_true", help="report, change nothing")
    clean.add_argument("--json", action="store_true", help="machine-readable output")


class VolumeAttachmentCommands:
    """Dangling volume attachments (BDMs and Cinder attachments that disagree)."""

    def __init__(self, conf, *, db=None, cinder=None, conductor=None):
        """``db``/``cinder``/``conductor`` are built from ``conf`` unless given (tests)."""
        self.conf = conf
        self._db = db
        self._cinder = cinder
        self._conductor = conductor

    @contextlib.contextmanager
    def _database(self):
        if self._db is not None:
            yield self._db
            return
        from volumesvc.db import api as db_api

        db = db_api.Database(self.conf)
        try:
            yield db
        finally:
            db.dispose()

    def _cinder_api(self):
        if self._cinder is None:
            from volumesvc.volume import cinder as cinder_api

            self._cinder = cinder_api.CinderAPI(self.conf)
        return self._cinder

    # -- show ----------------------------------------------------------------------------
    def show(self, args):
        """Show the BDM of a volume on a server, with Cinder's view of it."""
        from volumesvc import context, exception
        from volumesvc.objects import block_device as bdm_obj
        from volumesvc.objects import instance as instance_obj

        ctx = context.get_admin_context()
        try:
            with self._database() as db:
                instance_obj.get_by_uuid(db, ctx, args.server_id)
                bdm = bdm_obj.get_by_volume_and_instance(db, ctx, args.volume_id,
                                                         args.server_id)
        except exception.InstanceNotFound:
            print(f"Server {args.server_id} not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except exception.VolumeBDMNotFound:
            print(f"Volume {args.volume_id} is not attached to server {args.server_id}",
                  file=sys.stderr)
            return EXIT_SKIPPED
        changed = bdm.updated_at or bdm.created_at
        row = {"server_id": args.server_id, "volume_id": bdm.volume_id, "bdm_uuid": bdm.uuid,
               "device_name": bdm.device_name, "attachment_id": bdm.attachment_id,
               "connected": bool(bdm.connection_info),
               "delete_on_termination": bool(bdm.delete_on_termination),
               "updated_at": changed.isoformat() if changed else None}
        row.update(self._cinder_view(ctx, bdm))
        if args.json:
            print(json.dumps(row, indent=2, sort_keys=True))
        else:
            width = max(len(k) for k in row)
            for key, value in row.items():
                print(f"{key.ljust(width)}  {'-' if value is None else value}")
        return EXIT_OK

    def _cinder_view(self, ctx, bdm):
        from volumesvc import exception

        cinder = self._cinder_api()
        view: dict[str, str | None] = {"cinder_attachment_status": None,
                                       "cinder_volume_status": None}
        try:
            view["cinder_volume_status"] = cinder.get(ctx, bdm.volume_id)["status"]
            if bdm.attachment_id:
                view["cinder_attachment_status"] = cinder.attachment_get(
                    ctx, bdm.attachment_id)["status"]
        except exception.VolumeNotFound:
            view["cinder_volume_status"] = "gone"
        except exception.VolumeAttachmentNotFound:
            view["cinder_attachment_status"] = "gone"
        except exception.VolumesvcException as exc:
            view["cinder_error"] = str(exc)
        return view

    # -- cleanup -------------------------------------------------------------------------
    def cleanup(self, args):
        """Remove dangling BDMs and Cinder attachments of one server (or --all-servers)."""
        if bool(args.server_id) == bool(args.all_servers):
            print("give a server id or --all-servers (not both)", file=sys.stderr)
            return EXIT_ERROR
        if args.all_servers:
            return self._all_servers(args)
        from volumesvc import context, exception
        from volumesvc.objects import instance as instance_obj

        try:
            with self._database() as db:
                instance_obj.get_by_uuid(db, context.get_admin_context(), args.server_id)
        except exception.InstanceNotFound:
            print(f"Server {args.server_id} not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        reports = self._reconcile([args.server_id], args.dry_run)
        report = reports[0]
        if args.json:
            print(json.dumps(report, indent=2, sort_keys=True))
        else:
            _print_report(report)
        if report["skipped"]:
            return EXIT_SKIPPED
        return EXIT_PARTIAL if report["errors"] else EXIT_OK

    def _reconcile(self, uuids, dry_run, attachments=None, available=None):
        from volumesvc import context, rpc
        from volumesvc.conductor import rpcapi as conductor_rpcapi

        if self._conductor is not None:
            return self._conductor.reconcile_volume_attachments(
                context.get_admin_context(), instance_uuids=uuids, dry_run=dry_run,
                attachments=attachments, available_volume_ids=available)
        transport = rpc.get_transport(self.conf)
        try:
            return conductor_rpcapi.ConductorAPI(self.conf, transport) \
                .reconcile_volume_attachments(
                    context.get_admin_context(), instance_uuids=uuids, dry_run=dry_run,
                    attachments=attachments, available_volume_ids=available)
        finally:
            transport.cleanup()

    def _all_servers(self, args):
        from volumesvc import context
        from volumesvc.objects import instance as instance_obj
        from volumesvc.volume import reconciliation

        ctx = context.get_admin_context()
        with self._database() as db:
            instances = [(i.uuid, i.host) for i in instance_obj.list_instances(db, ctx)
                         if i.host]
        snapshot = reconciliation.SnapshotView.fetch(self._cinder_api(), ctx,
                                                self.conf.cinder.list_page_size)
        batches = _batches(instances, max(1, args.batch_size))
        progress = _Progress(len(instances), enabled=sys.stderr.isatty() and not args.json)
        reports = []
        for batch in batches:
            attachments, available = snapshot.for_instances(batch)
            held = {a["volume_id"] for a in attachments}
            reports.extend(self._reconcile(batch, args.dry_run, attachments,
                                           [v for v in available if v in held]))
            progress.update(len(reports))
        progress.done()
        summary = _summary(reports, args.dry_run)
        if args.json:
            print(json.dumps({"servers": reports, "summary": summary}, indent=2,
                             sort_keys=True))
        else:
            for report in reports:
                if _changed(report) or report["errors"]:
                    _print_report(report)
            print(_summary_line(summary))
        return EXIT_PARTIAL if summary["errors"] else EXIT_OK


def _batches(instances, size):
    """uuids grouped by host (one compute call per batch), at most ``size`` each."""
    by_host: dict[str, list[str]] = {}
    for uuid, host in instances:
        by_host.setdefault(host, []).append(uuid)
    return [uuids[i:i + size] for _host, uuids in sorted(by_host.items())
            for i in range(0, len(uuids), size)]


class _Progress:
    """``servers done/total`` on one terminal line (stderr), only on a terminal."""

    def __init__(self, total, enabled):
        self.total = total
        self.enabled = enabled

    def update(self, done):
        if self.enabled:
            sys.stderr.write(f"\rreconciling: {done}/{self.total} servers")
            sys.stderr.flush()

    def done(self):
        if self.enabled:
            sys.stderr.write("\n")


_COUNTED = ("removed_bdms", "deleted_attachments", "finished", "rolled_back", "busy",
            "errors")


def _changed(report):
    return any(report[key] for key in _COUNTED[:4])


def _summary(reports, dry_run):
    summary = {key: sum(len(r[key]) for r in reports) for key in _COUNTED}
    summary.update(servers=len(reports), dry_run=dry_run,
                   changed_servers=sum(1 for r in reports if _changed(r)),
                   skipped_servers=sum(1 for r in reports if r["skipped"]))
    return summary


def _summary_line(s):
    verb = "would change" if s["dry_run"] else "changed"
    return (f"{s['servers']} servers: {verb} {s['changed_servers']} "
            f"({s['removed_bdms']} BDMs removed, {s['deleted_attachments']} Cinder "
            f"attachments deleted, {s['finished']} attaches finished, {s['rolled_back']} "
            f"rolled back), {s['busy']} in progress left alone, {s['skipped_servers']} "
            f"servers skipped, {s['errors']} errors")


def _print_report(report):
    from volumesvc.volume import reconciliation

    uuid = report["instance_uuid"]
    if report["skipped"]:
        print(f"{uuid}: skipped: {report['skipped']}")
        return
    lines = reconciliation.Report(**report).summary().splitlines()
    lines += [f"left alone (in progress): volume {b['volume_id']}: {b['reason']}"
              for b in report["busy"]]
    lines += [f"error: {e}" for e in report["errors"]]
    for line in lines or ["nothing dangling"]:
        print(f"{uuid}: {line}")
