"""Whole-app guarantees: every route is schematized, policies are enforced."""

import pytest

from volumesvc.api import app as app_mod
from volumesvc.api import policies, validation
from volumesvc.api.handlers import versions
from volumesvc.conf import get_conf
from volumesvc.serving.app import create_app


@pytest.fixture
def app():
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    return create_app(conf)


def test_every_route_and_method_declares_its_schemas(app):
    missing = []
    for rule in app.url_map.iter_rules():
        handler = app.view_functions[rule.endpoint].handler
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            lacking = validation.missing_kinds(handler, method)
            if lacking:
                missing.append((rule.rule, method, lacking))
    assert missing == []


def test_every_route_exists_with_and_without_project_id(app):
    rules = {rule.rule for rule in app.url_map.iter_rules()}
    assert "/v2.1/os-services" in rules
    assert "/v2.1/<project_id>/os-services" in rules
    assert "/v2.1/<project_id>/" not in rules


def test_handler_without_policy_check_fails(app):
    @validation.query_schema(validation.object_({}))
    @validation.response_body_schema(validation.object_({}))
    def list_things(req):
        return {}, 200

    app.add_url_rule("/v2.1/things", endpoint="things",
                     view_func=app_mod._make_view(list_things, "GET"), methods=["GET"])
    response = app.test_client().get("/v2.1/things", headers={"X-Auth-Token": "admin:p"})
    assert response.status_code == 500
    assert response.json["computeFault"]["code"] == 500
    assert "Traceback" not in response.get_data(as_text=True)


def test_public_handlers_are_only_the_version_documents(app):
    public = {app.view_functions[r.endpoint].handler for r in app.url_map.iter_rules()
              if getattr(app.view_functions[r.endpoint].handler, "_policy_exempt", False)}
    assert public == {versions.list_versions, versions.show_version_v2,
                      versions.show_version_v2_1}


def test_root_document_reports_max(app):
    from volumesvc.api import microversions as mv

    body = app.test_client().get("/").json
    assert body["versions"][1]["version"] == str(mv.MAX_VERSION)


def test_policy_rules_are_unique_and_resolve():
    rules = policies.list_rules()
    names = [rule.name for rule in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        for ref in rule.check_str.split():
            if ref.startswith("rule:"):
                assert ref[5:] in names, (rule.name, ref)


def _enforcer():
    from volumesvc.api import policy

    return policy.make_enforcer(get_conf(args=[], default_config_files=[]))


def test_noauth2_roles():
    from volumesvc.api import auth

    seen = {}

    def inner(environ, start_response):
        seen["ctx"] = environ.get(auth.ENV_CONTEXT)
        return []

    auth.NoAuth2(inner, _enforcer())({"HTTP_X_AUTH_TOKEN": "admin:p1"}, None)
    assert seen["ctx"].is_admin and set(seen["ctx"].roles) == {"admin", "member", "reader"}
    auth.NoAuth2(inner, _enforcer())({"HTTP_X_AUTH_TOKEN": "bob:p2"}, None)
    assert not seen["ctx"].is_admin and seen["ctx"].project_id == "p2"
    assert set(seen["ctx"].roles) == {"member", "reader"}
    auth.NoAuth2(inner, _enforcer())({}, None)
    assert seen["ctx"] is None


def test_keystone_context_from_auth_token_headers():
    from volumesvc.api import auth

    seen = {}

    def inner(environ, start_response):
        seen["ctx"] = environ.get(auth.ENV_CONTEXT)
        return []

    environ = {"HTTP_X_IDENTITY_STATUS": "Confirmed", "HTTP_X_USER_ID": "u1",
               "HTTP_X_PROJECT_ID": "p1", "HTTP_X_ROLES": "admin,reader",
               "HTTP_X_SERVICE_CATALOG": '[{"type": "volumev3"}]'}
    auth.KeystoneContext(inner, _enforcer())(environ, None)
    ctx = seen["ctx"]
    assert (ctx.user_id, ctx.project_id, ctx.is_admin) == ("u1", "p1", True)
    assert ctx.service_catalog == [{"type": "volumev3"}]
    auth.KeystoneContext(inner, _enforcer())({"HTTP_X_IDENTITY_STATUS": "Invalid"}, None)
    assert seen["ctx"] is None


def test_keystone_strategy_answers_401_fault_with_www_authenticate():
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "keystone", group="api")
    conf.set_override("www_authenticate_uri", "http://keystone:5000/v3",
                      group="keystone_authtoken")
    client = create_app(conf).test_client()
    response = client.get("/v2.1/os-services")
    assert response.status_code == 401
    assert response.json["unauthorized"]["code"] == 401
    assert response.headers["WWW-Authenticate"] == 'Keystone uri="http://keystone:5000/v3"'
    assert client.get("/v2.1/").status_code == 200


@pytest.mark.parametrize("path", ["/v2foo", "/v2.1foo", "/v2.10/servers", "/v21"])
def test_a_path_that_only_starts_like_an_api_root_gets_the_choices(app, path):
    # Not below /v2 or /v2.1: the 300 choices of any other unknown path, with
    # no request id and no token needed (it used to take the API's 404).
    response = app.test_client().get(path)
    assert response.status_code == 300, response.get_data(as_text=True)
    assert "x-openstack-request-id" not in response.headers
    assert response.json["choices"]


@pytest.mark.parametrize("path", ["/v2/nothing", "/v2.1/nothing"])
def test_an_unknown_path_below_an_api_root_is_a_404_fault(app, path):
    response = app.test_client().get(path, headers={"X-Auth-Token": "admin:p"})
    assert response.status_code == 404
    assert response.json["itemNotFound"]["code"] == 404
    assert response.headers["x-openstack-request-id"].startswith("req-")


@pytest.mark.parametrize("headers", [
    {"X-OpenStack-Nova-API-Version": "2.1\xa0"},
    {"X-OpenStack-Nova-API-Version": "\u20032.60"},
    {"X-OpenStack-Nova-API-Version": "2.\u0661"},
    {"OpenStack-API-Version": "compute 2.1\xa0"},
    {"OpenStack-API-Version": "compute\xa02.60"},
    {"OpenStack-API-Version": "compute 2.60\u2028"},
], ids=["legacy-nbsp", "legacy-em-space", "legacy-arabic-digit", "new-nbsp",
        "new-nbsp-separator", "new-line-separator"])
def test_a_version_header_with_non_ascii_characters_is_the_malformed_400(app, headers):
    response = app.test_client().get(
        "/v2.1/", headers=dict(headers, **{"X-Auth-Token": "admin:p"}))
    assert response.status_code == 400, response.get_data(as_text=True)
    assert "is of invalid format" in response.json["badRequest"]["message"]
    assert "openstack-api-version" not in response.headers
    assert "x-openstack-nova-api-version" not in response.headers
