"""[notifications]: where the versioned notifications go.

Whether they are sent at all, and through which transport, is
oslo.messaging's ``[oslo_messaging_notifications]`` (``driver``,
``transport_url``), registered by ``conf/messaging.py``; as in Nova, only the
topics are ours.
"""

from oslo_config import cfg

notifications_group = cfg.OptGroup(
    "notifications", title="Notifications options",
    help="Options for the versioned notifications volumesvc-compute sends.")

notifications_opts = [
    cfg.ListOpt(
        "versioned_notifications_topics",
        default=["versioned_notifications"],
        help="""
Topics the versioned notifications (``instance.volume_attach.end`` and the
like, with payloads in Nova's format) are sent to. Nova's default, so
consumers written for Nova (billing, audit, Ceilometer-style tools) read
them unchanged. Nothing is sent unless
``[oslo_messaging_notifications] driver`` names a driver (``messagingv2``
to send them on the message bus).

Possible values:

* A list of topic names; each notification goes to every topic, on queue
  ``<topic>.<priority>`` (``versioned_notifications.info``,
  ``versioned_notifications.error``).

Related options:

* ``[oslo_messaging_notifications] driver``
* ``[oslo_messaging_notifications] transport_url``
"""),
]


def register_opts(conf):
    conf.register_group(notifications_group)
    conf.register_opts(notifications_opts, group=notifications_group)


def list_opts():
    return [(notifications_group, notifications_opts)]
