"""TLS on every link: RabbitMQ, PostgreSQL and the API, with the real services.

The api, conductor and compute run as separate processes against a
RabbitMQ node and a PostgreSQL server of the test's own that accept TLS
only (tests/fixtures/tls_services.py); the API serves HTTPS itself. Every
client verifies the server against the test's CA: oslo.messaging through
``[oslo_messaging_rabbit] ssl_ca_file``, oslo.db through libpq's
``sslmode=verify-full`` and ``sslrootcert``, the test through an SSL
context with only that CA. Each link is also shown to refuse a plain
client, so the tests cannot pass over an unencrypted link.
"""

import http.client
import json
import ssl
import urllib.error
import urllib.request

import amqp
import psycopg2
import pytest

import volumesvc_aio as harness
from tests.integration.services.helpers import bdm_volume_ids, server_and_volume, wait


@pytest.fixture
def rabbit_vhost(tls_rabbit):
    """make_deployment's broker in this module: the TLS-only node."""
    return tls_rabbit.transport_url()


@pytest.fixture
def pg_database_url(tls_postgres):
    """make_deployment's database in this module: on the TLS-only server."""
    return tls_postgres.url("volumesvc")


def _tls_ini(authority, *, cinder_url=None):
    cert, key = authority.issue("api.test", ip="127.0.0.1")
    cinder = (f"""
        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_url}
        """ if cinder_url else "")
    return f"""
        [wsgi]
        ssl_cert_file = {cert}
        ssl_key_file = {key}
        [oslo_messaging_rabbit]
        ssl = true
        ssl_ca_file = {authority.ca_file}
        [healthcheck]
        detailed = true
        allowed_source_ranges = 127.0.0.0/8
        {cinder}"""


def _health(deployment):
    """(status, {reason: details}) of the detailed health check, over https."""
    req = urllib.request.Request(f"{deployment.api}/healthcheck",
                                 headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30, context=deployment.tls) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    return status, {r["reason"]: r["details"] for r in json.loads(body)["reasons"]}


def _plain_http_refused(deployment):
    """The API's port answers no plain HTTP request (no status at all)."""
    plain = deployment.api.replace("https://", "http://", 1)
    try:
        with urllib.request.urlopen(f"{plain}/", timeout=10) as resp:
            return f"plain HTTP answered {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"plain HTTP answered {exc.code}"
    except (OSError, http.client.HTTPException):
        return None


def _assert_plain_links_refused(deployment, rabbit_node, postgres):
    assert deployment.api.startswith("https://")
    assert _plain_http_refused(deployment) is None
    # The default trust store does not know the test's CA: the context the
    # requests use is what verifies the API's certificate.
    with pytest.raises(urllib.error.URLError) as raised:
        urllib.request.urlopen(f"{deployment.api}/", timeout=10,
                               context=ssl.create_default_context())
    assert isinstance(raised.value.reason, ssl.SSLCertVerificationError), raised.value
    # The broker's only listener: AMQP over TLS with the CA works, plain
    # AMQP does not.
    broker = {"host": f"{rabbit_node.address}:{rabbit_node.port}", "userid": "guest",
              "password": "guest", "connect_timeout": 5}
    with amqp.Connection(**broker, ssl={"ca_certs": rabbit_node.authority.ca_file,
                                        "cert_reqs": ssl.CERT_REQUIRED}) as over_tls:
        assert over_tls.connected
    plain_amqp = amqp.Connection(**broker)
    with pytest.raises(Exception):  # noqa: B017 - whatever the broken handshake raises
        plain_amqp.connect()
    plain_amqp.collect()
    # libpq without TLS: no pg_hba entry lets it in.
    with pytest.raises(psycopg2.OperationalError, match="no encryption"):
        psycopg2.connect(host=postgres.address, port=postgres.port, user="postgres",
                         dbname="volumesvc", sslmode="disable", connect_timeout=5)


def test_boot_attach_detach_with_every_link_on_tls(
        make_deployment, tls_authority, tls_rabbit, tls_postgres, cinder_harness, cinder_api):
    dep = make_deployment(_tls_ini(tls_authority, cinder_url=cinder_harness.url),
                          api_ca_file=tls_authority.ca_file)
    _assert_plain_links_refused(dep, tls_rabbit, tls_postgres)

    # The compute reports over RPC to the conductor, which writes the database.
    server_id, ctx, volume = server_and_volume(dep, cinder_api, "tls-links")
    status, body = dep.request("POST", f"/servers/{server_id}/os-volume_attachments",
                               {"volumeAttachment": {"volumeId": volume["id"]}},
                               version="2.101")
    assert status == 202, body
    wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "in-use", "in-use")
    assert volume["id"] in bdm_volume_ids(dep, server_id)

    status, body = dep.request("DELETE",
                               f"/servers/{server_id}/os-volume_attachments/{volume['id']}")
    assert status == 202, body
    wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available", "detached")
    wait(lambda: volume["id"] not in bdm_volume_ids(dep, server_id), "BDM gone")
    assert dep.request("DELETE", f"/servers/{server_id}")[0] == 204


def test_healthcheck_follows_the_tls_broker(make_deployment, tls_authority, tls_rabbit,
                                            tls_postgres):
    dep = make_deployment(_tls_ini(tls_authority), start=("volumesvc-api",),
                          api_ca_file=tls_authority.ca_file)
    _assert_plain_links_refused(dep, tls_rabbit, tls_postgres)
    status, reasons = _health(dep)
    assert status == 200 and set(reasons) == {"OK"}, reasons

    tls_rabbit.stop()
    status, reasons = _health(dep)
    assert status == 503, reasons
    assert set(reasons) == {"OK", "UNREACHABLE: message queue"}, reasons
    assert "database" not in reasons["UNREACHABLE: message queue"]
    assert f"127.0.0.1:{tls_rabbit.port}" in reasons["UNREACHABLE: message queue"]

    tls_rabbit.start()
    harness.wait_for(lambda: _health(dep)[0] == 200, 60, what="healthy again")
    status, reasons = _health(dep)
    assert status == 200 and set(reasons) == {"OK"}, reasons
