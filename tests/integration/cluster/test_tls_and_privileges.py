"""The cluster deployment's links of volumesvc's are TLS only; its services are not root.

RabbitMQ (every node of the cluster), volumesvc's PostgreSQL and the API
(HAProxy and each API node) each take a client that verifies them against
the deployment's CA, and refuse a plain one: nothing of the spec flows
(test_spec_flows.py, on the same deployment) can have passed over an
unencrypted link of volumesvc's. ``ps`` shows every process of volumesvc's
(API nodes and their workers, conductors, computes) as the ``volumesvc``
user; the computes' privsep daemons, and they only, are root, with their
context's capabilities.
"""

import http.client
import json
import os
import pwd
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid

import amqp
import psycopg2
import pytest

from tests.integration.cluster.conftest import wait_active, wait_until
from volumesvc_aio import rabbit, system

#: The capabilities (CapEff) of volumesvc's own privsep daemon: CAP_DAC_OVERRIDE.
DAC_OVERRIDE_CAPS = 1 << 1


def _plain_http_answer(url):
    """What a plain HTTP request to ``url`` (an https one) gets: None when no answer at all."""
    plain = url.replace("https://", "http://", 1)
    try:
        with urllib.request.urlopen(plain, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, http.client.HTTPException):
        return None


def _api_urls(cluster):
    return [cluster.lb_url, *(f"https://{cluster.address}:{port}" for port in cluster.api_ports)]


def test_the_api_serves_https_only(cluster):
    for url in _api_urls(cluster):
        assert url.startswith("https://")
        with urllib.request.urlopen(f"{url}/healthcheck", timeout=30,
                                    context=cluster.ssl_context()) as resp:
            assert resp.status == 200, url
        assert _plain_http_answer(f"{url}/healthcheck") is None, url
        # The machine's trust store does not know the deployment's CA: the
        # context above is what verified the certificate.
        with pytest.raises(urllib.error.URLError) as raised:
            urllib.request.urlopen(f"{url}/", timeout=10, context=ssl.create_default_context())
        assert isinstance(raised.value.reason, ssl.SSLCertVerificationError), raised.value


def test_the_catalog_and_cinder_reach_the_api_over_https(cluster):
    """Cinder calls back (volume events, extend completion) through the catalog's endpoint,
    verifying it against the CA; it reaches RabbitMQ over TLS as well."""
    req = urllib.request.Request(f"{cluster.keystone.url}/auth/catalog",
                                 headers={"X-Auth-Token": cluster.token(),
                                          "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        catalog = json.load(resp)["catalog"]
    compute = {e["url"] for s in catalog if s["type"] == "compute" for e in s["endpoints"]}
    assert compute == {f"{cluster.lb_url}/v2.1"}
    assert cluster.lb_url.startswith("https://")
    with open(cluster.cinder.config_file) as f:
        cinder_conf = f.read()
    assert f"cafile = {cluster.ca_file}" in cinder_conf
    assert f"ssl_ca_file = {cluster.ca_file}" in cinder_conf


def test_every_rabbitmq_node_takes_amqp_over_tls_only(cluster):
    with open(os.path.join(cluster.state_dir, "rabbit-password")) as f:
        password = f.read().strip()
    for node in cluster.rabbit_nodes:
        broker = {"host": f"{node.address}:{node.port}", "userid": rabbit.CLUSTER_USER,
                  "password": password, "virtual_host": "volumesvc", "connect_timeout": 5}
        with amqp.Connection(**broker, ssl={"ca_certs": cluster.ca_file,
                                            "cert_reqs": ssl.CERT_REQUIRED}) as over_tls:
            assert over_tls.connected, node.nodename
        plain = amqp.Connection(**broker)
        with pytest.raises(Exception):  # noqa: B017 - whatever the broken handshake raises
            plain.connect()
        plain.collect()


def test_volumesvc_database_takes_postgresql_over_tls_only(cluster):
    server = cluster.db_server
    connect = {"host": server.address, "port": server.port, "user": "postgres",
               "dbname": "volumesvc", "connect_timeout": 5}
    with psycopg2.connect(**connect, sslmode="verify-full",
                          sslrootcert=cluster.ca_file) as conn, conn.cursor() as cur:
        cur.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        assert cur.fetchone() == (True,)
    with pytest.raises(psycopg2.OperationalError, match="no encryption"):
        psycopg2.connect(**connect, sslmode="disable")


def _service_names(cluster):
    return [name for name in cluster.procs if name.startswith(("api-", "conductor-", "compute-"))]


def _ps(cluster):
    """``[(uid, pid, argv)]`` of volumesvc's processes of the deployment as ``ps`` lists them.

    Those started as its services and those with its configuration on
    their command line (the privsep daemons), and every process below them:
    gunicorn renames the API's master and workers (``gunicorn: master
    [volumesvc-api]``).
    """
    out = subprocess.run(["ps", "-e", "-ww", "-o", "uid=,pid=,ppid=,args="],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    table = {}
    for line in out.splitlines():
        uid, pid, ppid, *args = line.split(None, 3)
        table[int(pid)] = (int(uid), int(ppid), (args[0] if args else "").split())
    found = {pid for pid, (_, _, argv) in table.items() if cluster.conf_path in argv}
    found |= {cluster.procs[name].pid for name in _service_names(cluster)} & set(table)
    grown = True
    while grown:
        below = {pid for pid, (_, ppid, _) in table.items() if ppid in found} - found
        found |= below
        grown = bool(below)
    return [(table[pid][0], pid, table[pid][2]) for pid in sorted(found)]


def _is_privsep(argv):
    """A privsep daemon or the sudo that started it."""
    return "oslo_privsep.daemon" in argv


def _cap_eff(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("CapEff:")).split()[1], 16)


def test_no_volumesvc_process_is_root_but_the_privsep_daemons(api, cluster):
    """A guest's console log is root's (virtlogd's): a compute reads it through its
    privsep daemon, which is root with CAP_DAC_OVERRIDE alone; every other process of
    volumesvc's is the ``volumesvc`` user."""
    status, body = api.boot(f"privsep-{uuid.uuid4().hex[:6]}")
    assert status == 202, body
    server_id = body["server"]["id"]
    try:
        wait_active(api, server_id, cluster)
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"os-getConsoleOutput": {"length": 5}})
        assert status == 200 and "output" in body, body

        rows = _ps(cluster)
        service_uid = pwd.getpwnam(system.SERVICE_USER).pw_uid
        services = [(uid, pid, argv) for uid, pid, argv in rows if not _is_privsep(argv)]
        names = _service_names(cluster)
        # Two API nodes, two conductors, three computes; the API nodes' workers.
        assert len(names) == 7, names
        assert {cluster.procs[name].pid for name in names} <= {pid for _, pid, _ in services}
        assert len(services) > len(names), rows
        assert [row for row in services if row[0] != service_uid] == []

        daemons = {argv[argv.index("--privsep_context") + 1]: (uid, pid)
                   for uid, pid, argv in rows
                   if _is_privsep(argv) and os.path.basename(argv[0]) != "sudo"}
        assert "volumesvc.privsep.dac_override_pctxt" in daemons, rows
        assert set(daemons) <= set(system.PRIVSEP_CONTEXTS), rows
        for context, (uid, _pid) in daemons.items():
            assert uid == 0, (context, rows)
        uid, pid = daemons["volumesvc.privsep.dac_override_pctxt"]
        assert _cap_eff(pid) == DAC_OVERRIDE_CAPS
    finally:
        api.delete_server(server_id)
        wait_until(lambda: api.server(server_id) is None, f"server {server_id} deleted",
                   cluster=cluster)
