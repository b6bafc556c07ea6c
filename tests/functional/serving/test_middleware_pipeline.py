"""``[wsgi] middleware``: the API's WSGI pipeline from configuration, CORS included."""

import pytest

from tests.functional.stack import Stack
from volumesvc.conf import get_conf
from volumesvc.serving import app as app_mod

ORIGIN = "https://dashboard.example.org"


def _stack(tmp_path, **overrides):
    return Stack(tmp_path, hosts=(),
                 conf_overrides={tuple(key.split(".")): value
                                 for key, value in overrides.items()})


@pytest.fixture
def with_cors(tmp_path):
    s = _stack(tmp_path, **{"cors.allowed_origin": [ORIGIN]})
    yield s
    s.stop()


def test_a_browser_preflight_is_answered_without_a_token(with_cors):
    response = with_cors.client.options("/v2.1/servers", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "X-Auth-Token,OpenStack-API-Version"})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
    allowed = response.headers["Access-Control-Allow-Headers"].lower()
    assert "x-auth-token" in allowed and "openstack-api-version" in allowed


def test_a_request_from_the_allowed_origin_can_read_the_microversion(with_cors):
    response = with_cors.client.get("/v2.1/servers", headers={
        "Origin": ORIGIN, "X-Auth-Token": "u:p", "OpenStack-API-Version": "compute 2.90"})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "OpenStack-API-Version" in response.headers["Access-Control-Expose-Headers"]


def test_another_origin_gets_no_cors_headers(with_cors):
    response = with_cors.client.get("/v2.1/servers", headers={
        "Origin": "https://evil.example.org", "X-Auth-Token": "u:p"})
    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response.headers


def test_a_pipeline_without_cors_sends_no_cors_headers(tmp_path):
    s = _stack(tmp_path, **{"cors.allowed_origin": [ORIGIN],
                            "wsgi.middleware": ["request_id", "auth"]})
    try:
        response = s.client.get("/v2.1/servers", headers={"Origin": ORIGIN,
                                                          "X-Auth-Token": "u:p"})
        assert response.status_code == 200
        assert "Access-Control-Allow-Origin" not in response.headers
        assert response.headers["X-OpenStack-Request-ID"].startswith("req-")
        # healthcheck is off with the rest: the path is no health answer
        # (the version choices every unknown path outside /v2.1 gets).
        assert s.client.get("/healthcheck").status_code == 300
    finally:
        s.stop()


@pytest.mark.parametrize(("middleware", "message"), [
    (["request_id", "auth", "nope"], "unknown nope"),
    (["request_id"], "auth is required"),
    (["auth", "auth"], "listed twice"),
])
def test_a_wrong_pipeline_is_refused_at_start(middleware, message):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("middleware", middleware, group="wsgi")
    with pytest.raises(ValueError, match=message):
        app_mod.pipeline(conf)


SITE = "tests.fixtures.site_middleware:filter_factory"


def test_an_operators_middleware_listed_first_wraps_every_path(tmp_path):
    s = _stack(tmp_path, **{"wsgi.middleware": [SITE, "request_id", "auth"],
                            "wsgi.middleware_options": [f"{SITE} greeting = hello there"]})
    try:
        for path in ("/", "/v2.1/servers"):
            response = s.client.get(path, headers={"X-Auth-Token": "u:p"})
            assert response.status_code == 200, path
            assert response.headers["X-Site-Middleware"] == "seen", path
            # Outside auth: no caller yet.
            assert response.headers["X-Site-Caller"] == "-", path
        # Its own option, and one it read from volumesvc's configuration.
        assert response.headers["X-Site-Greeting"] == "hello there"
        assert response.headers["X-Site-Auth-Strategy"] == "noauth2"
    finally:
        s.stop()


def test_an_operators_middleware_listed_after_auth_sees_the_caller(tmp_path):
    s = _stack(tmp_path, **{"wsgi.middleware": ["request_id", "auth", SITE]})
    try:
        response = s.client.get("/v2.1/servers", headers={"X-Auth-Token": "u:p"})
        assert response.status_code == 200
        assert response.headers["X-Site-Caller"] == "u"
        assert response.headers["X-Site-Greeting"] == "-"
        assert response.headers["X-OpenStack-Request-ID"].startswith("req-")
        # The version document is outside the API paths, so outside it.
        assert "X-Site-Middleware" not in s.client.get("/").headers
    finally:
        s.stop()


@pytest.mark.parametrize(("entry", "message"), [
    ("tests.fixtures.no_such_module:filter_factory", "cannot import tests.fixtures.no_such"),
    ("tests.fixtures.site_middleware:missing", "site_middleware has no missing"),
    ("tests.fixtures.site_middleware:NOT_CALLABLE", "NOT_CALLABLE is not callable"),
    ("tests.fixtures.site_middleware", "unknown tests.fixtures.site_middleware"),
])
def test_an_operators_entry_that_cannot_be_loaded_is_refused_at_start(entry, message):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("middleware", ["request_id", "auth", entry], group="wsgi")
    with pytest.raises(ValueError, match=f"\\[wsgi\\] middleware: .*{message}"):
        app_mod.pipeline(conf)


@pytest.mark.parametrize(("line", "message"), [
    ("tests.fixtures.site_middleware:other greeting=hi", "'tests.fixtures.site_middleware:"
                                                        "other' is not a package.module"),
    ("auth greeting=hi", "'auth' is not a package.module:factory entry"),
    (f"{SITE} greeting", "is not '<entry> <key>=<value>'"),
])
def test_options_for_no_listed_entry_are_refused_at_start(line, message):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("middleware", ["request_id", "auth", SITE], group="wsgi")
    conf.set_override("middleware_options", [line], group="wsgi")
    with pytest.raises(ValueError, match=f"\\[wsgi\\] middleware_options: .*{message}"):
        app_mod.pipeline(conf)


def test_keystonemiddlewares_audit_middleware_runs_in_the_pipeline(tmp_path):
    """The example of doc/source/admin/middleware.rst, with its audit map."""
    audit_map = tmp_path / "api_audit_map.conf"
    audit_map.write_text("[DEFAULT]\ntarget_endpoint_type = compute\n"
                         "[path_keywords]\nservers = server\n"
                         "[service_endpoints]\ncompute = service/compute\n")
    audit = "keystonemiddleware.audit:filter_factory"
    s = _stack(tmp_path, **{"wsgi.middleware": ["request_id", "auth", audit],
                            "wsgi.middleware_options": [f"{audit} audit_map_file={audit_map}"]})
    try:
        response = s.client.get("/v2.1/servers", headers={"X-Auth-Token": "u:p"})
        assert response.status_code == 200
        assert response.get_json() == {"servers": []}
    finally:
        s.stop()


def test_an_operators_middleware_that_fails_to_build_is_refused_at_start():
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("middleware", ["request_id", "auth",
                                     "tests.fixtures.site_middleware:broken_factory"],
                      group="wsgi")
    with pytest.raises(ValueError, match="site_middleware:broken_factory: "
                                         r"\[site\] endpoint is not set"):
        app_mod.create_app(conf)
