"""GET /healthcheck on a real volumesvc-api (gunicorn workers, PostgreSQL, RabbitMQ)."""

import json
import urllib.error
import urllib.parse
import urllib.request

from volumesvc.conf import get_conf
from volumesvc.serving.app import create_app


def _health(deployment, accept="text/plain"):
    req = urllib.request.Request(f"{deployment.api}/healthcheck", headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_healthy_then_drained_by_the_disable_file(make_deployment, tmp_path):
    drain = tmp_path / "drain"
    deployment = make_deployment(f"""\
        [healthcheck]
        disable_by_file_path = {drain}
        """, start=("volumesvc-api",))
    assert _health(deployment) == (200, "OK\nOK")
    drain.write_text("")
    status, body = _health(deployment)
    assert status == 503 and "DISABLED BY FILE" in body, body
    drain.unlink()
    assert _health(deployment)[0] == 200


def test_unreachable_rabbitmq_is_named_in_the_detailed_check(make_deployment):
    deployment = make_deployment("""\
        [healthcheck]
        detailed = true
        allowed_source_ranges = 127.0.0.0/8
        [DEFAULT]
        transport_url = rabbit://guest:guest@127.0.0.1:1/
        """, start=("volumesvc-api",))
    status, body = _health(deployment, "application/json")
    assert status == 503, body
    reasons = {r["reason"]: r["details"] for r in json.loads(body)["reasons"]}
    assert set(reasons) == {"OK", "UNREACHABLE: message queue"}, reasons
    assert "127.0.0.1:1" in reasons["UNREACHABLE: message queue"]


def _probe(tmp_path, transport_url, **rabbit_options):
    """GET /healthcheck (detailed) from an in-process API: (status, {reason: details})."""
    conf = get_conf(default_config_files=[])
    sqlite = tmp_path / "db.sqlite"
    sqlite.write_bytes(b"")
    for group, name, value in (("api", "auth_strategy", "noauth2"),
                               (None, "state_path", str(tmp_path)),
                               (None, "transport_url", transport_url),
                               ("database", "connection", f"sqlite:///{sqlite}"),
                               ("healthcheck", "detailed", True),
                               ("api", "healthcheck_timeout", 10.0)):
        conf.set_override(name, value, group=group)
    client = create_app(conf).test_client()
    # The broker options exist once the transport's driver has registered them.
    for name, value in rabbit_options.items():
        conf.set_override(name, value, group="oslo_messaging_rabbit")
    resp = client.get("/healthcheck", headers={"Accept": "application/json",
                                               "X-Auth-Token": "admin:admin"})
    return resp.status_code, {r["reason"]: r["details"] for r in resp.get_json()["reasons"]}


def _with_hosts(url, *hostports):
    """``url`` (one host) with ``hostports`` as its hosts, the same login for each."""
    parsed = urllib.parse.urlsplit(url)
    login = parsed.netloc.rsplit("@", 1)[0]
    netloc = ",".join(f"{login}@{hostport}" for hostport in hostports)
    return urllib.parse.urlunsplit(parsed._replace(netloc=netloc))


def test_the_broker_probe_fails_over_between_the_transport_urls_hosts(rabbit_vhost, tmp_path):
    """A dead host beside the live broker is fine, as it is for RPC; only all dead is not."""
    live = urllib.parse.urlsplit(rabbit_vhost).netloc.rsplit("@", 1)[1]
    for order in (("127.0.0.1:1", live), (live, "127.0.0.1:1")):
        status, reasons = _probe(tmp_path, _with_hosts(rabbit_vhost, *order))
        assert status == 200, reasons
    status, reasons = _probe(tmp_path, _with_hosts(rabbit_vhost, "127.0.0.1:1", "127.0.0.1:2"))
    assert status == 503, reasons
    details = reasons["UNREACHABLE: message queue"]
    assert "127.0.0.1:1" in details and "127.0.0.1:2" in details, details
    assert "guest" not in details


def test_the_broker_probe_uses_oslo_messagings_tls_settings(rabbit_vhost, tmp_path):
    """With [oslo_messaging_rabbit] ssl on, a plain-AMQP broker is unreachable, as for RPC."""
    assert _probe(tmp_path, rabbit_vhost)[0] == 200
    status, reasons = _probe(tmp_path, rabbit_vhost, ssl=True)
    assert status == 503, reasons
    assert "SSL" in reasons["UNREACHABLE: message queue"], reasons
