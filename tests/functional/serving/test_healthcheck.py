"""GET /healthcheck: oslo.middleware's health check with the drain file and our backend."""

import json

from tests.functional.stack import Stack
from volumesvc.conf import get_conf
from volumesvc.serving.app import create_app

# Nothing listens on port 1 of the loopback: a real, refused connection.
CLOSED_DB = "postgresql+psycopg2://volumesvc@127.0.0.1:1/volumesvc"
CLOSED_RABBIT = "rabbit://guest:guest@127.0.0.1:1/"
JSON = {"Accept": "application/json"}


def _app(tmp_path, overrides):
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("detailed", True, group="healthcheck")
    for (group, name), value in overrides.items():
        conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    return create_app(conf).test_client()


def _reasons(resp):
    return {r["reason"]: r["details"] for r in resp.get_json()["reasons"]}


def test_healthy_stack_answers_200_without_a_token(stack):
    resp = stack.client.get("/healthcheck")
    assert resp.status_code == 200
    assert resp.get_data(as_text=True).split() == ["OK", "OK"]
    assert stack.client.head("/healthcheck").status_code == 204


def test_disable_file_drains_the_node(tmp_path):
    drain = tmp_path / "drain"
    s = Stack(tmp_path, conf_overrides={("healthcheck", "disable_by_file_path"): str(drain)})
    try:
        assert s.client.get("/healthcheck").status_code == 200
        drain.write_text("")
        resp = s.client.get("/healthcheck")
        assert resp.status_code == 503
        assert "DISABLED BY FILE" in resp.get_data(as_text=True)
        # The API itself keeps serving: only the probe says "take me out".
        assert s.client.get("/v2.1/flavors", headers={"X-Auth-Token": "a:p"}).status_code == 200
        drain.unlink()
        assert s.client.get("/healthcheck").status_code == 200
    finally:
        s.stop()


def test_default_drain_file_lives_under_state_path(tmp_path):
    client = _app(tmp_path, {("DEFAULT", "transport_url"): "fake:/"})
    (tmp_path / "healthcheck_disable").write_text("")
    assert client.get("/healthcheck").status_code == 503


def test_unreachable_database_is_named_to_admins_only(tmp_path):
    client = _app(tmp_path, {("database", "connection"): CLOSED_DB,
                               ("DEFAULT", "transport_url"): "fake:/"})
    admin = client.get("/healthcheck", headers=dict(JSON, **{"X-Auth-Token": "admin:admin"}))
    assert admin.status_code == 503
    details = _reasons(admin)["UNREACHABLE: database"]
    assert details.startswith("database: OperationalError"), details
    assert "message queue" not in details
    member = client.get("/healthcheck", headers=dict(JSON, **{"X-Auth-Token": "bob:p"}))
    assert member.status_code == 503
    assert member.get_json() == {"detailed": False,
                                 "reasons": ["OK", "UNREACHABLE: database"]}
    anonymous = client.get("/healthcheck", headers=JSON)
    assert anonymous.get_json()["detailed"] is False


def test_unreachable_rabbitmq_is_named(tmp_path):
    sqlite = tmp_path / "db.sqlite"
    sqlite.write_bytes(b"")
    client = _app(tmp_path, {("database", "connection"): f"sqlite:///{sqlite}",
                               ("DEFAULT", "transport_url"): CLOSED_RABBIT})
    resp = client.get("/healthcheck", headers=dict(JSON, **{"X-Auth-Token": "admin:admin"}))
    assert resp.status_code == 503
    details = _reasons(resp)["UNREACHABLE: message queue"]
    assert details.startswith("message queue: ") and "127.0.0.1:1" in details, details
    assert "guest" not in json.dumps(resp.get_json()["reasons"])


def test_allowed_source_ranges_see_details_without_a_token(tmp_path):
    client = _app(tmp_path, {("database", "connection"): CLOSED_DB,
                               ("DEFAULT", "transport_url"): "fake:/",
                               ("healthcheck", "allowed_source_ranges"): ["10.0.0.0/8"]})
    inside = client.get("/healthcheck", headers=JSON,
                        environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert inside.get_json()["detailed"] is True
    outside = client.get("/healthcheck", headers=JSON,
                         environ_base={"REMOTE_ADDR": "192.0.2.1"})
    assert outside.status_code == 503
    assert outside.get_json()["detailed"] is False


def test_no_details_when_not_configured(tmp_path):
    client = _app(tmp_path, {("database", "connection"): CLOSED_DB,
                               ("DEFAULT", "transport_url"): "fake:/",
                               ("healthcheck", "detailed"): False})
    resp = client.get("/healthcheck", headers=dict(JSON, **{"X-Auth-Token": "admin:admin"}))
    assert resp.get_json()["detailed"] is False


def test_a_silent_broker_is_reported_within_the_timeout(tmp_path):
    """A broker that accepts TCP but never speaks AMQP: 503 after healthcheck_timeout."""
    import socket
    import time

    sqlite = tmp_path / "db.sqlite"
    sqlite.write_bytes(b"")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # never accepted: the kernel completes the handshake only
        port = silent.getsockname()[1]
        client = _app(tmp_path, {("database", "connection"): f"sqlite:///{sqlite}",
                                 ("DEFAULT", "transport_url"): f"rabbit://g:g@127.0.0.1:{port}/",
                                 ("api", "healthcheck_timeout"): 0.5})
        started = time.monotonic()
        resp = client.get("/healthcheck", headers=dict(JSON, **{"X-Auth-Token": "admin:admin"}))
        assert time.monotonic() - started < 5
    assert resp.status_code == 503
    assert "UNREACHABLE: message queue" in _reasons(resp)
