"""The cluster deployment with volumesvc's database on MariaDB (issue 22).

The package's other modules run on PostgreSQL; this one brings up a
deployment of its own (``--database mariadb``: a MariaDB server of the
cluster's, its data directory in the state dir, on the bridge address),
after the package's deployment has stopped (``conftest.deployment``). Its
prefix, subnet and port offset differ from that one's too. Through the load
balancer: a boot from volume at 2.67 with a volume type, an attach at 2.101
until attached and its detach, then the attach-and-boot storm with MariaDB
restarted in the middle, nothing lost or stuck.
"""

import signal
import uuid

import pytest
import sqlalchemy as sa

from tests.integration.cluster import storm
from tests.integration.cluster.conftest import Api, deployment, wait_active, wait_until


@pytest.fixture(scope="module")
def mariadb_cluster():
    with deployment(f"/var/tmp/vs-cluster-mdb-{uuid.uuid4().hex[:8]}", "vscm",
                    subnet="10.251.2.0/24", database="mariadb", port_offset=100) as up:
        yield up


@pytest.fixture(scope="module")
def mdb_api(mariadb_cluster):
    return Api(mariadb_cluster)


def _name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _attachment(api, server_id, volume_id):
    return next((a for a in api.attachments(server_id) if a["volumeId"] == volume_id), None)


def _instance_rows(cluster, server_id):
    """Rows for ``server_id`` in volumesvc's database, read from the MariaDB server itself."""
    engine = sa.create_engine(cluster.db_server.url("volumesvc"))
    try:
        with engine.connect() as conn:
            assert conn.dialect.name in ("mysql", "mariadb")
            return conn.execute(sa.text("SELECT uuid, host FROM instances WHERE uuid = :u"),
                                {"u": server_id}).all()
    finally:
        engine.dispose()


def test_boot_attach_detach_through_the_load_balancer(mdb_api, mariadb_cluster):
    api, cluster = mdb_api, mariadb_cluster
    type_name = _name("gold")
    status, body = api.cinder("POST", "/types", {"volume_type": {"name": type_name}})
    assert status == 200, body
    status, body = api.boot(_name("mdb"), volume_type=type_name, version="2.67")
    assert status == 202, body
    server_id = body["server"]["id"]
    try:
        server = wait_active(api, server_id, cluster)
        assert server["OS-EXT-SRV-ATTR:host"] in cluster.hosts
        (root,) = api.attachments(server_id)
        assert api.volume_status(root["volumeId"])["volume_type"] == type_name
        # The server is a row of the cluster's MariaDB database, on its host.
        assert _instance_rows(cluster, server_id) == [
            (server_id, server["OS-EXT-SRV-ATTR:host"])]

        volume_id = api.create_volume(_name("data"))
        wait_until(lambda: api.volume_status(volume_id)["status"] == "available",
                   "available", cluster=cluster)
        status, body = api.attach(server_id, volume_id, version="2.101")
        assert status == 202, body

        def attached():
            entry = _attachment(api, server_id, volume_id)
            assert entry is None or entry.get("status") != "error", entry
            return entry is not None and entry.get("status") == "attached"
        wait_until(attached, "attached", cluster=cluster)
        assert api.volume_status(volume_id)["status"] == "in-use"

        status, body = api.nova(
            "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
            version="2.101")
        assert status == 202, body
        wait_until(lambda: api.volume_status(volume_id)["status"] == "available",
                   "detached volume available", cluster=cluster)
        assert _attachment(api, server_id, volume_id) is None
        assert api.cinder_attachments(volume_id) == []
    finally:
        api.delete_server(server_id)


def test_mariadb_restarted_mid_storm(mdb_api, mariadb_cluster):
    api, cluster = mdb_api, mariadb_cluster
    name = cluster.db_server.name
    assert name == "mariadb"

    def restore():
        cluster.respawn(name)
        wait_until(cluster.api_nodes_healthy, "API nodes healthy after the restart",
                   cluster=cluster)

    # SIGTERM: MariaDB's normal shutdown (connections closed, InnoDB flushed).
    # storm.run checks what "lose nothing" means: each request refused with
    # a clear error or done (or failed with its fault), no volume stuck, a
    # clean audit, the refused work done when asked again. An accepted
    # attach whose conductor task met the database down is run again once
    # it is back, not dropped (doc/source/admin/cluster-faults.rst).
    storm.run(api, cluster, "MariaDB restarted",
              inject=lambda: cluster.kill(name, signal.SIGTERM), restore=restore)
