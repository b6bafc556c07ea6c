"""The versioned notifier's configuration and the envelope helpers."""

import datetime
import time

from volumesvc import context
from volumesvc.conf import get_conf
from volumesvc.notifications import base


def _conf(**notifications):
    conf = get_conf(default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    for name, value in notifications.items():
        conf.set_override(name, value, group="oslo_messaging_notifications")
    return conf


def test_nothing_is_sent_without_a_driver():
    conf = _conf()
    base.emit(base.get_notifier(conf, "volumesvc-compute:h1"), context.RequestContext(),
              "instance.create.end", {})
    assert _received(conf, "versioned_notifications", wait=1) == []


def _received(conf, topic, wait=10):
    """Notifications on ``topic`` of the fake transport: [(publisher, event_type, payload)]."""
    import oslo_messaging as messaging

    got = []

    class Endpoint:
        def info(self, ctxt, publisher_id, event_type, payload, metadata):
            got.append((publisher_id, event_type, payload))

    transport = messaging.get_notification_transport(conf)
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=topic)], [Endpoint()])
    listener.start()
    try:
        deadline = time.monotonic() + wait
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        listener.stop()
        listener.wait()
    return got


def test_a_driver_turns_them_on_on_nova_s_topic():
    conf = _conf(driver=["messagingv2"])
    notifier = base.get_notifier(conf, "volumesvc-compute:h1")
    base.emit(notifier, context.RequestContext(), "instance.create.end", {"k": "v"})
    assert _received(conf, "versioned_notifications") == [
        ("volumesvc-compute:h1", "instance.create.end", {"k": "v"})]
    conf.set_override("versioned_notifications_topics", ["audit"], group="notifications")
    base.emit(base.get_notifier(conf, "volumesvc-compute:h1"), context.RequestContext(),
              "instance.create.start", {})
    assert [e for _, e, _ in _received(conf, "audit")] == ["instance.create.start"]


def test_timestamps_are_written_as_nova_s():
    assert base.isotime(None) is None
    assert base.isotime("2026-12-05T14:20:53.123456") == "2026-12-05T14:20:53Z"
    assert base.isotime("2026-12-05T15:20:53+01:00") == "2026-12-05T14:20:53Z"
    assert base.isotime(datetime.datetime(2026, 12, 5, 14, 20, 53)) == "2026-12-05T14:20:53Z"


def test_exception_payload_names_where_it_was_raised():
    def attach_step():
        raise ValueError("no room")

    try:
        attach_step()
    except ValueError as exc:
        payload = base.exception_payload(exc)
    data = payload["nova_object.data"]
    assert (payload["nova_object.name"], payload["nova_object.version"]) == (
        "ExceptionPayload", "1.1")
    assert (data["function_name"], data["module_name"]) == ("attach_step", __name__)
    assert (data["exception"], data["exception_message"]) == ("ValueError", "no room")
    assert "attach_step" in data["traceback"]


def test_a_broken_notifier_never_breaks_the_work(caplog):
    class Broken:
        def info(self, context, event_type, payload):
            raise ConnectionError("broker gone")

    base.emit(Broken(), None, "instance.volume_attach.end", {})
    assert "instance.volume_attach.end not sent: broker gone" in caplog.text
