"""volumesvc-status upgrade check: is this deployment ready for the new code?"""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from volumesvc.cmd import common


class Checks(upgradecheck.UpgradeCommands):
    """Each check reads the database only; nothing is changed."""

    def __init__(self, conf):
        self.conf = conf

    def _check_db_version(self):
        """The schema must be at the newest revision this code ships."""
        from volumesvc.db import migration

        try:
            current = migration.version(self.conf)
        except Exception as exc:  # noqa: BLE001 - report, do not crash
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE, f"Cannot read the database: {exc}")
        head = migration.script_directory().get_current_head()
        if current is None:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "The database has no schema. Run 'volumesvc-manage db sync'.")
        if current != head:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                f"The database is at revision {current} but this code needs {head}. "
                "Run 'volumesvc-manage db sync'.")
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_service_versions(self):
        """Warn when computes are older than this code (features stay gated)."""
        from volumesvc import context, version
        from volumesvc.db import api as db_api
        from volumesvc.objects import compute_host

        db = db_api.Database(self.conf)
        ctx = context.get_admin_context()
        try:
            computes = compute_host.list_hosts(self.conf, db, ctx)
        except Exception as exc:  # noqa: BLE001 - no schema yet: report, do not crash
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE, f"Cannot read the service records: {exc}")
        finally:
            db.dispose()
        if not computes:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                "No compute services are registered yet; nothing can be built.")
        def hosts_below(needed):
            return sorted(c.host for c in computes if c.version < needed)

        minimum = min(c.version for c in computes)
        if minimum < version.SERVICE_VERSION:
            old = hosts_below(version.SERVICE_VERSION)
            gated = [f"{what} {', '.join(hosts)}" for needed, what in version.GATED_FEATURES
                     if (hosts := hosts_below(needed))]
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                f"Compute services at version {minimum} (this code is "
                f"{version.SERVICE_VERSION}) on hosts: {', '.join(old)}. Features "
                "that need newer computes stay disabled until they are upgraded"
                + (": " + "; ".join(gated) + "." if gated else "."))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_compute_settings(self):
        """Warn about compute settings that only suit a single test machine."""
        from volumesvc.cmd import checks

        return _as_result(checks.compute_findings(self.conf))

    def _check_shared_database(self):
        """Warn when conductors on several hosts share a SQLite database."""
        from volumesvc.cmd import checks

        try:
            return _as_result(checks.shared_database_findings(self.conf))
        except Exception as exc:  # noqa: BLE001 - no schema yet: the schema check says so
            return upgradecheck.Result(
                upgradecheck.Code.WARNING, f"Cannot read the service records: {exc}")

    def _check_service_user_token(self):
        """Fail unless Cinder gets a service token with volumesvc's requests.

        Cinder deployments fixed for CVE-2023-2088 refuse to delete an
        attachment a server still uses unless the request carries a service
        token, so volumesvc's own detaches would be refused without one.
        """
        service_user = self.conf.service_user
        if not service_user.send_service_user_token:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "[service_user] send_service_user_token is false, so volumesvc's "
                "requests to Cinder carry no service token and Cinder refuses "
                "volumesvc's own detaches of volumes in use (its fix for "
                "CVE-2023-2088). Set it to true and configure [service_user] with "
                "the credentials of a user that has the service role.")
        if self.conf.cinder.auth_strategy == "keystone" and not service_user.auth_type:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "[service_user] send_service_user_token is true but [service_user] "
                "auth_type is not set, so no service token is sent to Cinder. "
                "Configure [service_user] with the credentials of a user that has "
                "the service role.")
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    _upgrade_checks = (
        ("Database schema", _check_db_version),
        ("Service versions", _check_service_versions),
        ("Compute settings", _check_compute_settings),
        ("Shared database", _check_shared_database),
        ("Service user token", _check_service_user_token),
    )


def _as_result(findings):
    """One warning listing every finding (each names its option), else success."""
    if not findings:
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)
    return upgradecheck.Result(
        upgradecheck.Code.WARNING, " ".join(f"{f}." for f in findings))


def main(argv=None):
    common.use_native_threads()
    from volumesvc import conf as vs_conf

    conf = vs_conf.register_all(cfg.ConfigOpts())
    return upgradecheck.main(conf, project="volumesvc", upgrade_command=Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
