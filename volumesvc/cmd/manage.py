"""volumesvc-manage: operator commands (database, services, volume attachments, units).

``volumesvc-manage [--config-file F] <category> <action> [args]``. Exit codes
follow nova-manage: 0 success, 1 error, higher numbers per command.
"""

import json
import sys

from oslo_config import cfg

from volumesvc.cmd import common, manage_archive, manage_attachments, manage_systemd


class DbCommands:
    """Schema management."""

    def __init__(self, conf):
        self.conf = conf

    def sync(self, args):
        """Upgrade the database schema to the newest revision (or --version)."""
        from volumesvc.db import migration

        migration.upgrade(self.conf, args.version or "head")
        print(f"Database is at revision {migration.version(self.conf)}")
        return 0

    def version(self, args):
        """Print the current schema revision."""
        from volumesvc.db import migration

        print(migration.version(self.conf) or "None")
        return 0

    def archive_deleted_rows(self, args):
        """Move soft-deleted rows into the shadow tables (see cmd/manage_archive.py)."""
        return manage_archive.archive_deleted_rows(self.conf, args, _print_table)

    def purge(self, args):
        """Delete rows from the shadow tables (see cmd/manage_archive.py)."""
        return manage_archive.purge(self.conf, args, _print_table)


class ServiceCommands:
    """Service records and liveness."""

    def __init__(self, conf):
        self.conf = conf

    def list(self, args):
        """List services with state (up/down), version and capabilities."""
        from volumesvc import context, servicegroup
        from volumesvc.db import api as db_api
        from volumesvc.objects import service as service_obj

        db = db_api.Database(self.conf)
        services = service_obj.list_services(
            db, context.get_admin_context(), binary=args.binary_filter, host=args.host_filter)
        rows = []
        for svc in services:
            rows.append({
                "id": svc.uuid, "binary": svc.binary, "host": svc.host,
                # Nova's convention (and our os-services): only computes have a zone.
                "zone": (svc.availability_zone or "nova") if svc.binary.endswith("-compute")
                else "internal",
                "status": "disabled" if svc.disabled else "enabled",
                "state": "up" if servicegroup.is_up(self.conf, svc) else "down",
                "updated_at": svc.updated_at.isoformat() if svc.updated_at else None,
                "version": svc.version,
                "capabilities": svc.capabilities or {},
            })
        if args.json:
            print(json.dumps(rows, indent=2, sort_keys=True))
            return 0
        _print_table(rows, ["id", "binary", "host", "zone", "status", "state",
                            "updated_at", "version", "capabilities"])
        return 0


class ServerCommands:
    """Diagnostics of one server."""

    def __init__(self, conf):
        self.conf = conf

    def domain_xml(self, args):
        """Print the live libvirt domain XML of a server, read by its compute.

        Exit codes: 0 ok, 1 error, 2 server not found, 3 server has no host.
        """
        from volumesvc import context, exception, rpc
        from volumesvc.compute import rpcapi as compute_rpcapi
        from volumesvc.db import api as db_api
        from volumesvc.objects import instance as instance_obj
        from volumesvc.objects import service as service_obj

        db = db_api.Database(self.conf)
        transport = rpc.get_transport(self.conf)
        try:
            instance = instance_obj.get_by_uuid(db, context.get_admin_context(),
                                                args.server_id)
            if not instance.host:
                print(f"Server {args.server_id} has no host", file=sys.stderr)
                return 3
            cap = service_obj.compute_rpc_version_cap(self.conf, db, context.get_admin_context())
            xml = compute_rpcapi.ComputeAPI(
                self.conf, transport, auto_version_cap=cap).get_domain_xml(
                context.get_admin_context(), host=instance.host, instance_uuid=instance.uuid)
        except exception.InstanceNotFound:
            print(f"Server {args.server_id} not found", file=sys.stderr)
            return 2
        finally:
            db.dispose()
            transport.cleanup()
        print(xml)
        return 0


def _print_table(rows, columns):
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    print(line)
    print("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |")
    print(line)
    for r in cells:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |")
    print(line)


def _cell(value):
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
    return "-" if value is None else str(value)


CATEGORIES = {"db": DbCommands, "service": ServiceCommands, "server": ServerCommands,
              "volume_attachment": manage_attachments.VolumeAttachmentCommands,
              "systemd": manage_systemd.SystemdCommands}


def _add_parsers(subparsers):
    db = subparsers.add_parser("db", help=DbCommands.__doc__)
    db_actions = db.add_subparsers(dest="action", required=True)
    sync = db_actions.add_parser("sync", help=DbCommands.sync.__doc__)
    sync.add_argument("--version", default=None, help="target revision")
    db_actions.add_parser("version", help=DbCommands.version.__doc__)
    manage_archive.add_parsers(db_actions)

    svc = subparsers.add_parser("service", help=ServiceCommands.__doc__)
    svc_actions = svc.add_subparsers(dest="action", required=True)
    lst = svc_actions.add_parser("list", help=ServiceCommands.list.__doc__)
    lst.add_argument("--binary", dest="binary_filter", default=None)
    lst.add_argument("--host", dest="host_filter", default=None)
    lst.add_argument("--json", action="store_true", help="machine-readable output")

    srv = subparsers.add_parser("server", help=ServerCommands.__doc__)
    srv_actions = srv.add_subparsers(dest="action", required=True)
    dom = srv_actions.add_parser("domain_xml", aliases=["domain-xml"],
                                 help=ServerCommands.domain_xml.__doc__)
    dom.add_argument("server_id")

    manage_attachments.add_parsers(subparsers)
    manage_systemd.add_parsers(subparsers)


def main(argv=None):
    category_opt = cfg.SubCommandOpt("category", title="Command categories",
                                     handler=_add_parsers)
    try:
        conf = common.parse_config(argv, prog="volumesvc-manage", cli_opts=[category_opt],
                                   operator_tool=True)
    except cfg.Error as exc:
        print(exc, file=sys.stderr)
        return 1
    args = conf.category
    handler = CATEGORIES[args.name](conf)
    try:
        return getattr(handler, args.action.replace("-", "_"))(args)
    except Exception as exc:  # noqa: BLE001 - operators get a message, not a traceback
        print(f"volumesvc-manage: {args.name} {args.action} failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
