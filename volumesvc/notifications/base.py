"""The envelope of a versioned notification and the notifier that sends it.

A payload is what oslo.versionedobjects' ``obj_to_primitive`` would give
for Nova's object of the same name and version, built directly: the object
names and versions are the contract with consumers, so they are written
here once per payload class (``instance.py``) and a test compares them with
Nova's published samples.
"""

import datetime
import traceback

from oslo_log import log as logging

from volumesvc import rpc

LOG = logging.getLogger(__name__)

#: The namespace consumers check: the payloads are Nova's objects.
NAMESPACE = "nova"
#: oslo.messaging priorities, as Nova's event types end.
INFO, ERROR = "INFO", "ERROR"


def versioned(name, version, data):
    """``data`` wrapped as the primitive of versioned object ``name`` ``version``."""
    return {"nova_object.name": name, "nova_object.namespace": NAMESPACE,
            "nova_object.version": version, "nova_object.data": data}


def isotime(value):
    """A timestamp as Nova's DateTimeField sends it (``2026-12-05T14:20:53Z``), or None.

    Our instance dicts carry ISO strings (they crossed RPC), the database
    gives datetimes; both are UTC.
    """
    if not value:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def exception_payload(exc):
    """ExceptionPayload 1.1 of ``exc``: where it was raised, what, and its traceback."""
    tb = exc.__traceback__
    frame = None
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
    message = (exc.format_message() if hasattr(exc, "format_message")
               else str(exc)) or type(exc).__name__
    return versioned("ExceptionPayload", "1.1", {
        # The innermost frame: where the failure happened, as Nova reports it.
        "module_name": frame.f_globals.get("__name__", "") if frame else type(exc).__module__,
        "function_name": frame.f_code.co_name if frame else "",
        "exception": type(exc).__name__,
        "exception_message": message,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    })


def get_notifier(conf, publisher_id, transport=None):
    """The versioned notifier of a service: ``[notifications]`` topics, oslo.messaging's driver.

    With no ``[oslo_messaging_notifications] driver`` configured,
    oslo.messaging sends nothing; that is the default, as in Nova.
    """
    transport = transport or rpc.get_notification_transport(conf)
    return rpc.get_notifier(transport, publisher_id,
                            topics=conf.notifications.versioned_notifications_topics)


def emit(notifier, context, event_type, payload, priority=INFO):
    """Send one notification; a broken notifier is logged, never raised.

    Notifications are a report on work already done (or failed): losing
    one must not fail the attach or boot it describes.
    """
    try:
        if priority == ERROR:
            notifier.error(context, event_type, payload)
        else:
            notifier.info(context, event_type, payload)
    except Exception as err:  # noqa: BLE001 - notifications are best effort
        LOG.warning("Notification %s not sent: %s", event_type, err)
