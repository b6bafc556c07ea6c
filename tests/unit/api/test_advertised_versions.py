"""Every advertised microversion's change is served, checked against the routing and view tables.

``EVIDENCE`` maps each version of ``microversions.VERSIONS`` to claims that a
test can check mechanically:

* ``Row(rep, key)``: the representation table ``rep`` has a row ``key``
  that starts (or ends) at the version;
* ``Starts(method, path)``: the route's handler changes its schemas or its
  versioned window at the version;
* ``BodyKey(method, path, key)``: the request body accepts ``key`` (dotted,
  ``[]`` for list items) from the version and not below it;
* ``Strict(path)``: unknown query keys of the GET route are refused from the
  version;
* ``Branches(module, constant)``: the product module decides on the
  version's constant (behaviour without a schema of its own);
* ``Absent(prefix)`` / ``NoAction(name)``: the resource the version changes
  is not served at all (no route under ``prefix``; the server action is
  refused with a 400), so no client can meet a half-served version;
* ``Pending(prefix or action)``: the same check, for resources another
  branch of this issue adds (keypairs, limits, quotas...): when their
  routes arrive, this fails until the line gives real evidence;
* ``NoEffect()``: the version changes nothing volumesvc could show (no
  cells, no networks...); it must be listed, with why, in
  doc/source/contributor/contract.rst §1.5.

``GAPS`` would list changes of served resources that are not served yet;
it must stay empty (no advertised version may be half served). A new
microversion needs a line in ``EVIDENCE`` (the walk fails without one).
"""

import dataclasses
import pathlib
import re

import pytest

from tests.unit.api.handler_versions import version_starts
from volumesvc.api import microversions as mv
from volumesvc.api import representation, routes, validation
from volumesvc.api.handlers import server_actions
from volumesvc.api.logic import server_filters
from volumesvc.api.views import flavors as flavor_views
from volumesvc.api.views import instance_actions as action_views
from volumesvc.api.views import keypairs as keypair_views
from volumesvc.api.views import migrations as migration_views
from volumesvc.api.views import servers as server_views
from volumesvc.api.views import services as service_views
from volumesvc.api.views import volume_attachments as attachment_views

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONTRACT = ROOT / "doc/source/contributor/contract.rst"

SERVERS = "/v2.1/servers"
SERVER = "/v2.1/servers/<server_id>"
ACTION = SERVER + "/action"
ATTACHMENTS = SERVER + "/os-volume_attachments"
ATTACHMENT = ATTACHMENTS + "/<volume_id>"
EVENTS = "/v2.1/os-server-external-events"
INSTANCE_ACTIONS = SERVER + "/os-instance-actions"

SERVER_REP = server_views.SERVER
VOLUME_REP = server_views.VOLUME
SERVICE_REP = service_views.SERVICE
FLAVOR_REP = flavor_views.FLAVOR
ACTION_REP = action_views.ACTION
EVENT_REP = action_views.EVENT
ATTACHMENT_REP = attachment_views.ATTACHMENT
KEYPAIR_REP = keypair_views.KEYPAIR
MIGRATION_REP = migration_views.MIGRATION
SERVER_MIGRATION_REP = migration_views.SERVER_MIGRATION


def _handler(method, path):
    handler = routes.ROUTES.get(path, {}).get(method)
    assert handler is not None, f"{method} {path} is not in routes.ROUTES"
    return handler


def _has_key(schema, dotted) -> bool:
    """Whether the body schema accepts the dotted key (``a.b[].c``), in any branch."""
    if not schema or not dotted:
        return bool(schema) or not dotted
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        if _has_key(branch, dotted):
            return True
    head, _, rest = dotted.partition(".")
    name, is_list = (head[:-2], True) if head.endswith("[]") else (head, False)
    child = schema.get("properties", {}).get(name)
    if child is None:
        return False
    if is_list:
        child = child.get("items", {})
    return _has_key(child, rest) if rest else True


def _body_schema(method, path, version):
    schema, _ = validation._pick(_handler(method, path), validation.BODY, version)
    return schema


@dataclasses.dataclass(frozen=True)
class Row:
    rep: representation.Representation
    key: str

    def check(self, version):
        rows = [f for f in self.rep.fields if f.name == self.key]
        assert rows, f"{self.rep.name} has no row {self.key}"
        assert any(f.first == version or (f.last is not None and
                                          representation.next_version(f.last) == version)
                   for f in rows), f"no row {self.rep.name}.{self.key} starts or ends at {version}"


@dataclasses.dataclass(frozen=True)
class Starts:
    method: str
    path: str

    def check(self, version):
        assert version in version_starts(_handler(self.method, self.path)), \
            f"{self.method} {self.path} does not change at {version}"


@dataclasses.dataclass(frozen=True)
class BodyKey:
    method: str
    path: str
    key: str

    def check(self, version):
        assert _has_key(_body_schema(self.method, self.path, version), self.key), \
            f"{self.method} {self.path} refuses {self.key} at {version}"
        assert not _has_key(_body_schema(self.method, self.path, mv.before(version)),
                            self.key), f"{self.method} {self.path} takes {self.key} earlier"


@dataclasses.dataclass(frozen=True)
class Strict:
    path: str

    def check(self, version):
        _schema, options = validation._pick(_handler("GET", self.path), validation.QUERY,
                                            version)
        assert options and options["strict_from"] == version, \
            f"GET {self.path} does not become strict at {version}"


@dataclasses.dataclass(frozen=True)
class Branches:
    module: str
    constant: str

    def check(self, version):
        assert getattr(mv, self.constant) == version, self.constant
        source = (ROOT / self.module).read_text()
        assert re.search(rf"\bmv\.{self.constant}\b", source), \
            f"{self.module} never decides on {self.constant}"


def _routes_under(prefix):
    return [path for path in routes.ROUTES if path == prefix or path.startswith(prefix + "/")]


@dataclasses.dataclass(frozen=True)
class Absent:
    prefix: str

    def check(self, version):
        assert not _routes_under(self.prefix), \
            f"{version}: {self.prefix} is served now: give the evidence of its change"


@dataclasses.dataclass(frozen=True)
class NoAction:
    name: str

    def check(self, version):
        assert self.name not in server_actions._ACTIONS, \
            f"{version}: the {self.name} action is served now: give the evidence of its change"
        assert self.name in server_actions.NOVA_ONLY_ACTIONS


@dataclasses.dataclass(frozen=True)
class Pending:
    """A route prefix (``/v2.1/...``) or a server action another branch adds."""

    what: str

    def check(self, version):
        if self.what.startswith("/"):
            Absent(self.what).check(version)
        else:
            NoAction(self.what).check(version)


@dataclasses.dataclass(frozen=True)
class NoMethod:
    method: str
    path: str

    def check(self, version):
        assert self.method not in routes.ROUTES.get(self.path, {}), \
            f"{version}: {self.method} {self.path} is served now: give the evidence"


def _query_keys(path) -> set:
    schema, _ = validation._pick(_handler("GET", path), validation.QUERY, mv.MAX_VERSION)
    return set((schema or {}).get("properties", {}))


@dataclasses.dataclass(frozen=True)
class QueryKey:
    """The list query schema names ``key`` (so the strict schema of 2.75 takes it)."""

    path: str
    key: str

    def check(self, version):
        assert self.key in _query_keys(self.path), f"GET {self.path} does not take {self.key}"


@dataclasses.dataclass(frozen=True)
class QueryKeyAbsent:
    path: str
    key: str

    def check(self, version):
        assert self.key not in _query_keys(self.path), \
            f"{version}: GET {self.path} takes {self.key} now: move the line to EVIDENCE"


@dataclasses.dataclass(frozen=True)
class BodyKeyAbsent(BodyKey):
    """The body refuses ``key`` at every version up to the maximum."""

    def check(self, version):
        schema = _body_schema(self.method, self.path, mv.MAX_VERSION)
        assert not _has_key(schema, self.key), \
            f"{version}: {self.method} {self.path} takes {self.key} now: move it to EVIDENCE"


@dataclasses.dataclass(frozen=True)
class NoRowAt:
    rep: representation.Representation

    def check(self, version):
        assert not [f for f in self.rep.fields if f.first == version], \
            f"{version}: {self.rep.name} has a row at it now: move the line to EVIDENCE"


def _no_effect_versions() -> set:
    text = CONTRACT.read_text()
    match = re.search(r"^§1\.5 .*?\n(.*?)(?=^§)", text, re.S | re.M)
    assert match, "contract §1.5 is missing"
    return set(re.findall(r"^\* (2\.\d+)\b", match.group(1), re.M))


@dataclasses.dataclass(frozen=True)
class NoEffect:
    def check(self, version):
        assert str(version) in _no_effect_versions(), \
            f"{version} is not listed in contract §1.5 with why it changes nothing here"


KEYPAIRS, LIMITS, QUOTAS = "/v2.1/os-keypairs", "/v2.1/limits", "/v2.1/os-quota-sets"
KEYPAIR = KEYPAIRS + "/<keypair_name>"
QUOTA_VIEWS = "volumesvc/api/views/quota_sets.py"
QUOTA_SCHEMAS = "volumesvc/api/schemas/quota_sets.py"
CONSOLES = SERVER + "/remote-consoles"
MIGRATIONS = SERVER + "/migrations"
MIGRATION = MIGRATIONS + "/<migration_id>"
OS_MIGRATIONS = "/v2.1/os-migrations"
GROUPS = "/v2.1/os-server-groups"
HYPERVISORS = "/v2.1/os-hypervisors"
EVENTS_MODULE = "volumesvc/api/schemas/server_external_events.py"
SERVER_FILTERS = "volumesvc/api/logic/server_filters.py"

LIVE_MIGRATE = "volumesvc/api/handlers/server_live_migrate.py"
EVACUATE = "volumesvc/api/handlers/server_evacuate.py"

EVIDENCE = {
    "2.1": [Row(SERVER_REP, "id")],
    "2.2": [Row(KEYPAIR_REP, "type"), Starts("POST", KEYPAIRS)],
    "2.3": [Row(SERVER_REP, "OS-EXT-SRV-ATTR:reservation_id"),
            Row(VOLUME_REP, "delete_on_termination")],
    "2.4": [Absent("/v2.1/os-fixed-ips")],
    "2.5": [Branches("volumesvc/api/handlers/servers.py", "V2_5_IP6_FILTER")],
    "2.6": [Absent(CONSOLES), NoAction("os-getVNCConsole")],
    "2.7": [Absent("/v2.1/flavors/<flavor_id>/os-flavor-access"),
            Absent("/v2.1/flavors/<flavor_id>/action")],
    "2.8": [Absent(CONSOLES)],
    "2.9": [Row(SERVER_REP, "locked")],
    "2.10": [Starts("POST", KEYPAIRS), Starts("GET", KEYPAIRS), Starts("GET", KEYPAIR)],
    "2.11": [Row(SERVICE_REP, "forced_down")],
    "2.12": [Absent(SERVER + "/os-virtual-interfaces")],
    "2.13": [Absent(GROUPS)],
    "2.14": [Branches(EVACUATE, "V2_14_EVACUATE_SHARED")],
    "2.15": [Absent(GROUPS)],
    "2.16": [Row(SERVER_REP, "host_status")],
    "2.17": [NoAction("trigger_crash_dump")],
    "2.18": [NoEffect()],
    "2.19": [Row(SERVER_REP, "description"), BodyKey("POST", SERVERS, "server.description"),
             BodyKey("PUT", SERVER, "server.description"),
             BodyKey("POST", ACTION, "rebuild.description")],
    "2.20": [Branches("volumesvc/api/logic/attach.py", "V2_20_SHELVED_VOLUMES")],
    "2.21": [Branches("volumesvc/api/handlers/instance_actions.py", "V2_21_DELETED_ACTIONS")],
    "2.22": [Starts("POST", MIGRATION + "/action")],
    "2.23": [Row(MIGRATION_REP, "migration_type"), Row(MIGRATION_REP, "links"),
             Starts("GET", MIGRATIONS), Starts("GET", MIGRATION)],
    "2.24": [Starts("DELETE", MIGRATION)],
    "2.25": [Branches(LIVE_MIGRATE, "V2_25_BLOCK_MIGRATION_AUTO")],
    "2.26": [Row(SERVER_REP, "tags"), Starts("GET", SERVER + "/tags"),
             Starts("PUT", SERVER + "/tags/<tag>"),
             Branches("volumesvc/api/handlers/servers.py", "V2_26_TAGS")],
    "2.27": [NoEffect()],
    "2.28": [Absent(HYPERVISORS)],
    "2.29": [Branches(EVACUATE, "V2_29_EVACUATE_FORCE")],
    "2.30": [Branches(LIVE_MIGRATE, "V2_30_LIVE_MIGRATE_FORCE")],
    "2.31": [Absent("/v2.1/os-console-auth-tokens")],
    "2.32": [BodyKey("POST", SERVERS, "server.block_device_mapping_v2[].tag")],
    "2.33": [Absent(HYPERVISORS), Starts("POST", SERVERS)],
    "2.34": [NoEffect()],
    "2.35": [Starts("GET", KEYPAIRS)],
    "2.36": [Branches(QUOTA_VIEWS, "V2_36_NO_PROXY_APIS"),
             Branches(QUOTA_SCHEMAS, "V2_36_NO_PROXY_APIS"), Absent("/v2.1/os-networks"),
             Absent("/v2.1/images"), Absent("/v2.1/os-volumes")],
    "2.37": [Starts("POST", SERVERS)],
    "2.38": [Branches("volumesvc/api/handlers/servers.py", "V2_38_STATUS_FILTER_400")],
    "2.39": [Branches(QUOTA_VIEWS, "V2_39_NO_IMAGE_METADATA_LIMIT")],
    "2.40": [Absent("/v2.1/os-simple-tenant-usage")],
    "2.41": [Absent("/v2.1/os-aggregates")],
    "2.42": [BodyKey("POST", SERVERS, "server.block_device_mapping_v2[].tag")],
    "2.43": [Absent("/v2.1/os-hosts")],
    "2.44": [NoAction("addFixedIp"), Absent(SERVER + "/os-virtual-interfaces")],
    "2.45": [Starts("POST", ACTION)],
    "2.46": [NoEffect()],
    "2.47": [Row(SERVER_REP, "flavor")],
    "2.48": [Absent(SERVER + "/diagnostics")],
    "2.49": [BodyKey("POST", ATTACHMENTS, "volumeAttachment.tag")],
    "2.50": [Absent("/v2.1/os-quota-class-sets")],
    "2.51": [Starts("POST", EVENTS),
             Branches("volumesvc/api/handlers/instance_actions.py", "V2_51_VOLUME_EXTENDED")],
    "2.52": [BodyKey("POST", SERVERS, "server.tags")],
    "2.53": [Row(SERVICE_REP, "id"), Starts("PUT", "/v2.1/os-services/<service_id>")],
    "2.54": [BodyKey("POST", ACTION, "rebuild.key_name"), Starts("POST", ACTION)],
    "2.55": [Row(FLAVOR_REP, "description")],
    "2.56": [Branches("volumesvc/api/handlers/server_resize.py", "V2_56_MIGRATE_HOST")],
    "2.57": [BodyKey("POST", ACTION, "rebuild.user_data"), Starts("POST", ACTION)],
    "2.58": [Row(ACTION_REP, "updated_at"), Starts("GET", INSTANCE_ACTIONS)],
    "2.59": [Row(MIGRATION_REP, "uuid"), Row(SERVER_MIGRATION_REP, "uuid"),
             Starts("GET", OS_MIGRATIONS), Strict(OS_MIGRATIONS)],
    "2.60": [Branches("volumesvc/api/logic/attach.py", "V2_60_MULTIATTACH"),
             Branches("volumesvc/api/logic/bdm.py", "V2_60_MULTIATTACH")],
    "2.61": [Row(FLAVOR_REP, "extra_specs")],
    "2.62": [Row(EVENT_REP, "host")],
    "2.63": [Row(SERVER_REP, "trusted_image_certificates"),
             BodyKey("POST", ACTION, "rebuild.trusted_image_certificates")],
    "2.64": [Absent(GROUPS)],
    "2.65": [Branches("volumesvc/api/handlers/server_migrations.py", "V2_65_ABORT_QUEUED")],
    "2.66": [Starts("GET", INSTANCE_ACTIONS), Branches(SERVER_FILTERS, "V2_66_CHANGES_BEFORE"),
             QueryKey(SERVERS, "changes-before"), Starts("GET", OS_MIGRATIONS),
             QueryKey(OS_MIGRATIONS, "changes-before")],
    "2.67": [BodyKey("POST", SERVERS, "server.block_device_mapping_v2[].volume_type")],
    "2.68": [Branches(EVACUATE, "V2_68_NO_FORCE"), Branches(LIVE_MIGRATE, "V2_68_NO_FORCE")],
    "2.69": [NoEffect()],
    "2.70": [Row(ATTACHMENT_REP, "tag")],
    "2.71": [Row(SERVER_REP, "server_groups")],
    "2.72": [NoEffect()],
    "2.73": [Row(SERVER_REP, "locked_reason"), Branches(SERVER_FILTERS, "V2_73_LOCK_REASON")],
    "2.74": [BodyKey("POST", SERVERS, "server.host"),
             BodyKey("POST", SERVERS, "server.hypervisor_hostname")],
    "2.75": [Strict(SERVERS), Row(FLAVOR_REP, "swap"), Starts("PUT", SERVER)],
    "2.76": [Starts("POST", EVENTS)],
    "2.77": [Starts("POST", ACTION)],
    "2.78": [Absent(SERVER + "/topology")],
    "2.79": [Row(ATTACHMENT_REP, "delete_on_termination"),
             BodyKey("POST", ATTACHMENTS, "volumeAttachment.delete_on_termination")],
    "2.80": [Row(MIGRATION_REP, "user_id"), Row(SERVER_MIGRATION_REP, "project_id"),
             Starts("GET", OS_MIGRATIONS), QueryKey(OS_MIGRATIONS, "user_id")],
    "2.81": [Absent("/v2.1/os-aggregates")],
    "2.82": [Starts("POST", EVENTS)],
    "2.83": [Branches(SERVER_FILTERS, "V2_83_USER_FILTERS"),
             *(QueryKey(SERVERS, key) for key in server_filters.USER_FILTERS_2_83)],
    "2.84": [Row(EVENT_REP, "details")],
    "2.85": [Starts("PUT", ATTACHMENT)],
    "2.86": [NoMethod("POST", "/v2.1/flavors/<flavor_id>/os-extra_specs"),
             NoMethod("PUT", "/v2.1/flavors/<flavor_id>/os-extra_specs/<key>")],
    "2.87": [NoAction("rescue")],
    "2.88": [Absent(HYPERVISORS)],
    "2.89": [Row(ATTACHMENT_REP, "attachment_id")],
    "2.90": [Row(SERVER_REP, "OS-EXT-SRV-ATTR:hostname"),
             BodyKey("POST", SERVERS, "server.hostname"),
             BodyKey("PUT", SERVER, "server.hostname"),
             BodyKey("POST", ACTION, "rebuild.hostname")],
    "2.91": [Starts("POST", ACTION)],
    "2.92": [Starts("POST", KEYPAIRS)],
    "2.93": [Branches("volumesvc/api/handlers/server_rebuild.py", "V2_93_VOLUME_REBUILD"),
             Starts("POST", EVENTS)],
    "2.94": [Starts("POST", SERVERS), Starts("PUT", SERVER), Starts("POST", ACTION)],
    "2.95": [Branches(EVACUATE, "V2_95_EVACUATE_STOPPED")],
    "2.96": [Row(SERVER_REP, "pinned_availability_zone")],
    "2.97": [Absent(SERVER + "/shares")],
    "2.98": [Row(SERVER_REP, "image")],
    "2.99": [Absent(CONSOLES), NoAction("os-getSPICEConsole")],
    "2.100": [Row(SERVER_REP, "scheduler_hints")],
    "2.101": [Starts("POST", ATTACHMENTS)],
    "2.102": [Strict(SERVER)],
    "2.103": [Absent("/v2.1/os-volumes_boot")],
    "2.104": [BodyKey("PUT", SERVER, "server.pinned_availability_zone")],
    "2.105": [Starts("POST", EVENTS)],
    "2.106": [Row(ATTACHMENT_REP, "status")],
    "2.107": [Starts("POST", ATTACHMENTS)],
    "2.108": [Starts("POST", ATTACHMENTS), Row(ATTACHMENT_REP, "read_only")],
}

# Changes of served resources that are not served yet: version → (why, checks
# that hold while it is not). None today; a line here fails
# test_no_advertised_version_is_a_known_gap until the change is served.
GAPS: dict = {}


def _all_versions():
    return [version for version, _name, _summary in mv.VERSIONS]


def test_every_advertised_version_has_a_line():
    lines = set(EVIDENCE) | set(GAPS)
    assert sorted(lines, key=mv.parse) == _all_versions()


@pytest.mark.parametrize("version", sorted(EVIDENCE, key=mv.parse))
def test_the_change_of_each_version_is_served(version):
    claims = EVIDENCE[version]
    assert claims, version
    for claim in claims:
        claim.check(mv.parse(version))


def test_no_advertised_version_is_a_known_gap():
    """Every advertised version's change is served (issue 24's done-when)."""
    assert not GAPS, f"advertised but not served: {sorted(GAPS, key=mv.parse)}"


def test_the_no_effect_versions_are_the_ones_the_contract_explains():
    no_effect = {v for v, claims in EVIDENCE.items()
                 if any(isinstance(c, NoEffect) for c in claims)}
    assert no_effect == _no_effect_versions()


@pytest.mark.parametrize("claim, version", [
    (Row(SERVER_REP, "tags"), mv.V2_25_BLOCK_MIGRATION_AUTO),
    (Starts("GET", SERVER + "/tags"), mv.V2_27_NEW_HEADER),
    (BodyKey("PUT", SERVER, "server.description"), mv.V2_20_SHELVED_VOLUMES),
    (BodyKey("PUT", SERVER, "server.hostname"), mv.V2_19_DESCRIPTION),
    (Strict(SERVERS), mv.V2_102_STRICT_QUERY_ALL),
    (Absent(SERVER + "/tags"), mv.V2_26_TAGS),
    (Pending("lock"), mv.V2_73_LOCK_REASON),
    (NoAction("reboot"), mv.V2_1_BASE),
    (Branches("volumesvc/api/logic/attach.py", "V2_26_TAGS"), mv.V2_26_TAGS),
    (NoMethod("GET", "/v2.1/flavors/<flavor_id>/os-extra_specs"), mv.V2_1_BASE),
    (QueryKeyAbsent(SERVERS, "tags"), mv.V2_26_TAGS),
    (NoEffect(), mv.V2_26_TAGS),
])
def test_a_claim_that_does_not_hold_fails(claim, version):
    with pytest.raises(AssertionError):
        claim.check(version)
