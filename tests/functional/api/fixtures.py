"""Gabbi fixtures: each YAML file gets a fresh ConfigOpts, noauth2 and database.

gabbi 4 builds its WSGI transport from the ``intercept`` factory when a test
runs, but the app depends on config the fixture creates; :class:`LazyApp`
therefore forwards to whatever app the currently running fixture built.
"""

import datetime
import uuid

from gabbi import fixture

from tests.fixtures import database as db_fixtures
from volumesvc import context as vs_context
from volumesvc.api.app import create_app
from volumesvc.api.deps import Deps
from volumesvc.conf import get_conf
from volumesvc.objects import service as service_obj

# The app of the file being run (one file at a time, in order).
_CURRENT = {}

# Fixed ids the YAML files refer to (no env vars: the fixture owns its data).
COMPUTE_UP_HOST = "compute-up"
COMPUTE_DOWN_HOST = "compute-down"


class LazyApp:
    def __call__(self, environ, start_response):
        return _CURRENT["app"](environ, start_response)


def setup_app():
    return LazyApp()


def _conf():
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("response_validation", "error", group="api")
    return conf


class APIFixture(fixture.GabbiFixture):
    """Fresh config, noauth2 and a migrated SQLite database for one YAML file."""

    def start_fixture(self):
        self.conf = _conf()
        self._db_cm = db_fixtures.fresh_sqlite_database(self.conf)
        self.db = self._db_cm.__enter__()
        self.seed(self.db, vs_context.get_admin_context())
        _CURRENT["app"] = create_app(self.conf, deps=Deps(self.conf, db=self.db))

    def seed(self, db, ctx):
        """Nothing by default; subclasses add rows."""

    def stop_fixture(self):
        _CURRENT.clear()
        self._db_cm.__exit__(None, None, None)


class ServicesFixture(APIFixture):
    """Two computes (one up, one long silent), a conductor, fixed uuids."""

    def seed(self, db, ctx):
        for host in (COMPUTE_UP_HOST, COMPUTE_DOWN_HOST):
            service_obj.heartbeat(db, ctx, host=host, binary="volumesvc-compute",
                                  topic="compute", version=1, capabilities={})
        service_obj.heartbeat(db, ctx, host="controller", binary="volumesvc-conductor",
                              topic="conductor", version=1, capabilities={})
        # Age the down compute's last heartbeat past service_down_time.
        down = service_obj.get_by_host_and_binary(db, ctx, COMPUTE_DOWN_HOST,
                                                  "volumesvc-compute")
        old = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - \
            datetime.timedelta(hours=1)
        with db.writer(ctx) as session:
            from volumesvc.db import models

            row = session.get(models.Service, down.id)
            row.last_seen_up = old
            row.updated_at = old
            row.created_at = old


def random_uuid():
    return str(uuid.uuid4())


# The /servers journeys' fixtures live beside their tests (test_servers_fixtures.py).
from tests.functional.api import test_servers_fixtures as _servers  # noqa: E402

ServersFixture = _servers.servers_fixture_class(APIFixture, _servers.version.SERVICE_VERSION)
# A deployment whose computes predate BDM volume_type (version 0 → minimum 0).
ServersOldComputeFixture = _servers.servers_fixture_class(APIFixture, 0)

# Server actions, flavors and instance actions (test_server_actions_fixtures.py).
from tests.functional.api import test_server_actions_fixtures as _actions  # noqa: E402

ServerActionsFixture = _actions.actions_fixture_class(APIFixture)

# Volume attachments (test_volume_attachments_fixtures.py); the second one has
# [upgrade_levels] conductor = 1.0, too old for attach (503).
from tests.functional.api import test_volume_attachments_fixtures as _attachments  # noqa: E402

VolumeAttachmentsFixture = _attachments.attachments_fixture_class(APIFixture)
VolumeAttachmentsOldConductorFixture = _attachments.attachments_fixture_class(
    APIFixture, conductor_cap="1.0")
