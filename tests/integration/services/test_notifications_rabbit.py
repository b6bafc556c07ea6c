"""Nova's versioned notifications on a real RabbitMQ, read back as consumers read them.

api, conductor and compute are separate processes (PostgreSQL, a RabbitMQ
vhost of the test's own, the fake libvirt, a real Cinder 29 with
file-backed volumes) with ``[oslo_messaging_notifications] driver =
messagingv2``. A boot, an attach, a swap and a detach later, the test takes
every message off the ``versioned_notifications.info`` queue with a plain
AMQP client and compares each, envelope and payload, with the sample Nova 34
publishes for its event type (``tests/fixtures/nova_samples.py``).

The swap is Cinder's call-back during a migration: the test marks the two
volumes in Cinder's database as Cinder does when it starts one (the old
volume ``migrating``, the new one ``target:<old id>``), which a file-only
Cinder cannot do by itself; Cinder then completes the migration as usual.
"""

import json
import time

import kombu
import pytest
import sqlalchemy as sa

import volumesvc_aio as harness
from tests.fixtures import nova_samples
from tests.integration.services.helpers import boot, wait
from volumesvc.context import RequestContext

EVENTS = [f"instance.{action}.{phase}" for action in
          ("create", "volume_attach", "volume_swap", "volume_detach")
          for phase in ("start", "end")]
QUEUE = "versioned_notifications.info"


@pytest.fixture
def deployment(make_deployment, cinder_harness):
    return make_deployment(f"""
        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_harness.url}
        [oslo_messaging_notifications]
        driver = messagingv2
        """)


def _messages(transport_url, wanted, timeout=120):
    """The notifications on QUEUE (``oslo.message`` decoded) until ``wanted`` event types came."""
    found = []
    url = transport_url.replace("rabbit://", "amqp://", 1)
    deadline = time.monotonic() + timeout
    with kombu.Connection(url) as conn:
        channel = conn.default_channel
        while time.monotonic() < deadline:
            raw = channel.basic_get(QUEUE, no_ack=True) if _queue_exists(conn) else None
            if raw is None:
                if set(wanted) <= {m["event_type"] for m in found}:
                    return found
                time.sleep(0.5)
                continue
            body = json.loads(raw.body)
            assert body["oslo.version"] == "2.0"
            found.append(json.loads(body["oslo.message"]))
    pytest.fail(f"notifications seen: {[m['event_type'] for m in found]}, wanted {wanted}")


def _queue_exists(conn):
    # The publisher declares the queue with its first message.
    channel = conn.channel()
    try:
        channel.queue_declare(QUEUE, passive=True)
        return True
    except Exception:  # noqa: BLE001 - amqp's NotFound (the broker closes the channel)
        return False
    finally:
        try:
            channel.close()
        except Exception:  # noqa: BLE001 - already closed by the broker
            pass


def _idle(dep, server_id):
    _, show = dep.request("GET", f"/servers/{server_id}")
    return show["server"]["status"] == "ACTIVE" and not show["server"]["OS-EXT-STS:task_state"]


def _mark_migration(cinder_harness, old_id, new_id):
    """What Cinder's migrate does to the two volumes before it calls the swap."""
    engine = sa.create_engine(cinder_harness.database_connection)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE volumes SET migration_status = 'migrating', "
                                 "previous_status = 'in-use' WHERE id = :id"), {"id": old_id})
            conn.execute(sa.text("UPDATE volumes SET migration_status = :s WHERE id = :id"),
                         {"s": f"target:{old_id}", "id": new_id})
    finally:
        engine.dispose()


def test_boot_attach_swap_detach_notifications_match_nova_s_samples(
        deployment, cinder_api, cinder_harness, rabbit_vhost):
    dep = deployment
    samples = nova_samples.samples()
    harness.wait_for(lambda: dep.compute_state() == "up", 60, what="compute up")
    server_id = boot(dep)
    ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True, roles=["admin"])
    volume = cinder_api.create(ctx, 1, "notified", "")
    new = cinder_api.create(ctx, 1, "notified-new", "")
    for vol in (volume, new):
        wait(lambda v=vol: cinder_api.get(ctx, v["id"])["status"] == "available", "available")

    status, body = dep.request("POST", f"/servers/{server_id}/os-volume_attachments",
                               {"volumeAttachment": {"volumeId": volume["id"]}},
                               version="2.101")
    assert status == 202, body
    wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "in-use", "in-use")

    _mark_migration(cinder_harness, volume["id"], new["id"])
    status, body = dep.request(
        "PUT", f"/servers/{server_id}/os-volume_attachments/{volume['id']}",
        {"volumeAttachment": {"volumeId": new["id"]}})
    assert status == 202, body
    wait(lambda: cinder_api.get(ctx, volume["id"]).get("migration_status") == "success",
         "Cinder's migration completed")
    wait(lambda: _idle(dep, server_id), "swap done")

    status, body = dep.request("DELETE",
                               f"/servers/{server_id}/os-volume_attachments/{volume['id']}")
    assert status == 202, body
    wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available", "detached")

    messages = _messages(rabbit_vhost, EVENTS)
    assert [m["event_type"] for m in messages] == EVENTS, dep.logs()
    for message in messages:
        assert samples.problems(message) == [], message["event_type"]
        assert message["publisher_id"] == "volumesvc-compute:it-compute-1"
        assert message["payload"]["nova_object.data"]["uuid"] == server_id
    by_type = {m["event_type"]: m["payload"]["nova_object.data"] for m in messages}
    assert by_type["instance.create.end"]["state"] == "active"
    for event in ("instance.volume_attach.end", "instance.volume_detach.end"):
        assert by_type[event]["volume_id"] == volume["id"]
    assert (by_type["instance.volume_swap.end"]["old_volume_id"],
            by_type["instance.volume_swap.end"]["new_volume_id"]) == (volume["id"], new["id"])
