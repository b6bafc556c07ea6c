"""``[quota] driver = unified_limits`` against the all-in-one's real Keystone 30.

The limits are made in Keystone through its API (registered limits for the
compute service, a project limit for project demo) by the system-scoped
admin; a volumesvc API configured for unified limits, in this process on a
database of its own, then reads them through oslo.limit with the admin's
system-scoped credentials (the reader on system scope that oslo.limit needs
to see every project's limits). The all-in-one's own API keeps the database
driver, so these limits change nothing for the other tests.
"""

import concurrent.futures
import contextlib
import types

import pytest
from keystoneauth1 import loading as ks_loading

from tests.fixtures import database as db_fixtures
from tests.integration.keystone.conftest import http
from volumesvc import conf as vs_conf
from volumesvc import context as vs_context
from volumesvc import exception, quota
from volumesvc.api.deps import Deps
from volumesvc.api.logic import build
from volumesvc.objects import flavor as flavor_obj
from volumesvc.serving.app import create_app

REGISTERED = {"servers": 2, "class:VCPU": 40, "class:MEMORY_MB": 8192}
DEMO_SERVERS = 3


def _system_token(kaio, password):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": password}}},
        "scope": {"system": {"all": True}}}}
    status, headers, _ = http("POST", kaio.identity_url + "/auth/tokens", body=body)
    assert status == 201, status
    return headers["X-Subject-Token"]


@pytest.fixture(scope="module")
def limits(kaio, password, token):
    """Registered limits for compute and a servers limit for demo; removed at the end."""
    url, admin = kaio.identity_url, _system_token(kaio, password)
    _, _, services = http("GET", url + "/services?type=compute", admin)
    service_id = services["services"][0]["id"]
    _, _, endpoints = http("GET", f"{url}/endpoints?service_id={service_id}"
                                  "&interface=public", admin)
    endpoint = endpoints["endpoints"][0]
    _, _, demo = http("GET", url + "/projects?name=demo", admin)
    demo_id = demo["projects"][0]["id"]
    made = []
    status, _, body = http("POST", url + "/registered_limits", admin, {"registered_limits": [
        {"service_id": service_id, "region_id": endpoint["region_id"],
         "resource_name": name, "default_limit": value}
        for name, value in REGISTERED.items()]})
    assert status == 201, body
    made += [("registered_limits", r["id"]) for r in body["registered_limits"]]
    status, _, body = http("POST", url + "/limits", admin, {"limits": [
        {"service_id": service_id, "region_id": endpoint["region_id"],
         "project_id": demo_id, "resource_name": "servers",
         "resource_limit": DEMO_SERVERS}]})
    assert status == 201, body
    made += [("limits", r["id"]) for r in body["limits"]]
    yield types.SimpleNamespace(endpoint_id=endpoint["id"], demo_id=demo_id,
                                admin=admin, url=url)
    for kind, limit_id in reversed(made):
        http("DELETE", f"{url}/{kind}/{limit_id}", admin)


@contextlib.contextmanager
def _unified_api(kaio, password, endpoint_id, tmp_path):
    conf = vs_conf.get_conf(args=[], default_config_files=[])
    for name, value in (("auth_strategy", "noauth2"), ("response_validation", "error")):
        conf.set_override(name, value, group="api")
    conf.set_override("driver", "unified_limits", group="quota")
    for name, value in (("auth_type", "password"), ("endpoint_id", endpoint_id)):
        conf.set_override(name, value, group="oslo_limit")
    conf.set_override("state_path", str(tmp_path))
    # keystoneauth registers a plugin's own options only when it loads it;
    # register the password plugin's here to set them.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options("password"),
                       group="oslo_limit")
    for name, value in (("auth_url", kaio.identity_url), ("username", "admin"),
                        ("password", password), ("user_domain_name", "Default"),
                        ("system_scope", "all")):
        conf.set_override(name, value, group="oslo_limit")
    with db_fixtures.fresh_sqlite_database(conf) as db:
        yield conf, db, create_app(conf, deps=Deps(conf, db=db))


def test_limits_come_from_keystone_and_a_storm_stops_at_them(kaio, password, limits,
                                                             tmp_path):
    with _unified_api(kaio, password, limits.endpoint_id, tmp_path) as (conf, db, app):
        client = app.test_client()
        headers = {"X-Auth-Token": f"admin:{limits.demo_id}",
                   "OpenStack-API-Version": "compute 2.90"}
        absolute = client.get("/v2.1/limits", headers=headers).json["limits"]["absolute"]
        assert (absolute["maxTotalInstances"], absolute["maxTotalCores"],
                absolute["maxTotalRAMSize"]) == (DEMO_SERVERS, 40, 8192)
        shown = client.get("/v2.1/os-quota-sets/elsewhere/defaults",
                           headers=headers).json["quota_set"]
        assert shown["instances"] == REGISTERED["servers"]
        resp = client.put(f"/v2.1/os-quota-sets/{limits.demo_id}", headers=headers,
                          json={"quota_set": {"instances": 50}})
        assert resp.status_code == 400

        # Concurrent boots of demo (what POST /servers runs after validation).
        ctx = vs_context.RequestContext(user_id="demo", project_id=limits.demo_id,
                                        roles=["member"], overwrite=False)
        flavor = flavor_obj.get_by_flavorid(db, ctx, "42")
        deps = types.SimpleNamespace(db=db, conf=conf, cinder=None,
                                     conductor=types.SimpleNamespace(
                                         build_instances=lambda *a, **k: None))

        def boot(_):
            try:
                build.create_instances(ctx, deps, build.BuildRequest(
                    name="s", flavor=flavor, bdms=[]))
            except exception.TooManyInstances:
                return "refused"
            return "booted"
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(boot, range(8)))
        assert results.count("booted") == DEMO_SERVERS
        assert quota.usage(db, ctx, limits.demo_id)["instances"] == DEMO_SERVERS
