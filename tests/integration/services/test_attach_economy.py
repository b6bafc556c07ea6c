"""What one 2.101 attach costs the message bus and the database (real RabbitMQ, Cinder).

api, conductor and compute are separate processes on a PostgreSQL database
and a RabbitMQ vhost of this test's own; Cinder 29 is real (its own vhost),
the hypervisor the fake libvirt. The bus is counted by the broker itself
(the management plugin's statistics of the vhost), the writes of the
attach's block device mapping by the database (a row trigger installed by
the test). The heartbeats and periodic tasks are spaced past the test so
that everything counted is the attach's.
"""

import json
import subprocess
import time
import urllib.parse
import urllib.request
import uuid

import pytest
import sqlalchemy as sa

import volumesvc_aio as harness
from tests.integration.services import helpers

MANAGEMENT = "http://127.0.0.1:15672/api"
# The target of a 2.101 attach (API → conductor → compute → conductor).
MAX_REQUESTS = 3
MAX_MESSAGES = 5
MAX_BDM_WRITES = 2
# oslo.messaging's default control exchange: every call and cast is published to it.
EXCHANGE = "openstack"

QUIET = """
    [DEFAULT]
    report_interval = 3600
    service_down_time = 7200
    running_deleted_instance_poll_interval = 0
    [cinder]
    auth_strategy = noauth
    endpoint_override = {url}
    """

_TRIGGER = """
CREATE TABLE test_bdm_writes (id serial PRIMARY KEY, op text, bdm_uuid text);
CREATE FUNCTION test_log_bdm_write() RETURNS trigger AS $$
BEGIN
    INSERT INTO test_bdm_writes (op, bdm_uuid) VALUES (TG_OP, COALESCE(NEW.uuid, OLD.uuid));
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER test_bdm_writes AFTER INSERT OR UPDATE OR DELETE ON block_device_mappings
    FOR EACH ROW EXECUTE FUNCTION test_log_bdm_write();
"""


def _management(path):
    request = urllib.request.Request(f"{MANAGEMENT}{path}")
    request.add_header("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=")  # guest:guest
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def management():
    """RabbitMQ's management API (the plugin is enabled when it is not)."""
    try:
        _management("/overview")
    except OSError:
        subprocess.run(["rabbitmq-plugins", "enable", "rabbitmq_management"], check=True,
                       capture_output=True, timeout=120)
        harness.wait_for(lambda: _management("/overview"), 60, what="management API")
    return _management


def _counts(management, vhost, exchange):
    """(requests, messages) the broker has seen on ``vhost`` so far.

    Requests: the RPC calls and casts, published to the control exchange
    (replies go to each caller's own reply exchange); messages: everything
    published on the vhost.
    """
    quoted = urllib.parse.quote(vhost, safe="")
    total = management(f"/vhosts/{quoted}").get("message_stats", {}).get("publish", 0)
    stats = management(f"/exchanges/{quoted}/{exchange}").get("message_stats", {})
    return stats.get("publish_in", 0), total


def _settled(management, vhost, exchange):
    """The counts once two readings a statistics interval apart agree."""
    last = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now = _counts(management, vhost, exchange)
        if now == last:
            return now
        last = now
        time.sleep(6)  # the broker refreshes its statistics every 5 s
    pytest.fail(f"the bus of {vhost} did not go quiet: {last}")


def _attached(dep, server_id, volume_id):
    """The attachment as a 2.106 client sees it, once ``attached``; else None."""
    _, body = dep.request("GET", f"/servers/{server_id}/os-volume_attachments",
                          version="2.106")
    for attachment in body["volumeAttachments"]:
        if attachment["volumeId"] == volume_id and attachment["status"] == "attached":
            return attachment
    return None


def test_a_2_101_attach_costs_three_requests_five_messages_and_two_bdm_writes(
        make_deployment, cinder_harness, cinder_api, rabbit_vhost, pg_database_url,
        management):
    from volumesvc.context import RequestContext

    # NOTE: the compute's first calls wait up to report_interval for a
    # conductor, so the conductor serves before the compute starts.
    dep = make_deployment(QUIET.format(url=cinder_harness.url),
                          start=("volumesvc-conductor",))
    conductor_log = dep.tmp_path / "volumesvc-conductor.log"
    harness.wait_for(lambda: "volumesvc-conductor started" in conductor_log.read_text(), 120,
                     what="conductor started")
    dep.spawn("volumesvc-compute")
    dep.spawn("volumesvc-api")
    engine = sa.create_engine(pg_database_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(_TRIGGER))
        harness.wait_for(lambda: dep.compute_state() == "up", 120, what="compute up")
        server_id = helpers.boot(dep, "economy", timeout=120)
        ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True,
                             roles=["admin"])
        volume = cinder_api.create(ctx, 1, f"economy-{uuid.uuid4().hex[:6]}", "")
        harness.wait_for(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available",
                         60, what="volume available")
        vhost = urllib.parse.unquote(urllib.parse.urlsplit(rabbit_vhost).path.lstrip("/"))
        before = _settled(management, vhost, EXCHANGE)

        status, body = dep.request("POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume["id"]}},
                                   version="2.101")
        assert status == 202 and body is None
        attachment = harness.wait_for(lambda: _attached(dep, server_id, volume["id"]), 90,
                                      what="attached (2.106)", interval=0.5)
        after = _settled(management, vhost, EXCHANGE)
        with engine.connect() as conn:
            writes = conn.execute(sa.text(
                "SELECT op FROM test_bdm_writes WHERE bdm_uuid = "
                "(SELECT uuid FROM block_device_mappings WHERE volume_id = :volume "
                "AND deleted = 0) ORDER BY id"), {"volume": volume["id"]}).scalars().all()
    finally:
        engine.dispose()
    requests, messages = after[0] - before[0], after[1] - before[1]
    print(f"one 2.101 attach: {requests} RPC requests, {messages} messages, "
          f"BDM writes {writes}")
    assert attachment["device"]
    assert cinder_api.get(ctx, volume["id"])["status"] == "in-use"
    assert requests <= MAX_REQUESTS, (requests, messages)
    assert messages <= MAX_MESSAGES, (requests, messages)
    assert len(writes) <= MAX_BDM_WRITES and writes[0] == "INSERT", writes
