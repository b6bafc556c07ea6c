"""GET /healthcheck on a real volumesvc-api (gunicorn workers, PostgreSQL, RabbitMQ)."""

import json
import urllib.error
import urllib.request


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
