"""Options of the [cinder] group: how volumesvc reaches the Block Storage API."""

import copy

from oslo_config import cfg

from volumesvc.conf import ksa

cinder_group = cfg.OptGroup(
    "cinder",
    title="Cinder options",
    help="Configuration options for the Block Storage service (Cinder) client.")

cinder_opts = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[("keystone", "Real keystone tokens: the user's token, plus a service "
                              "token for attachment work"),
                 ("noauth", "Cinder's noauth mode: X-Auth-Token is '<user>:<project>' "
                            "and X-Service-Roles: service marks compute-service calls")],
        help="""
How requests to Cinder are authenticated. Use ``noauth`` only against a Cinder
running with ``[DEFAULT] auth_strategy = noauth`` (the single-machine setup).

Related options:

* ``endpoint_override``
"""),
    cfg.StrOpt(
        "endpoint_override",
        help="""
Volume API v3 endpoint to use instead of the service catalog, for example
``http://127.0.0.1:8776/v3``. ``%(project_id)s`` in it is replaced by the
request's project. Required with ``auth_strategy = noauth``.
"""),
    cfg.StrOpt(
        "catalog_info",
        default="volumev3::publicURL",
        regex=r"^\w+:\w*:.*$",
        help="""
``<service_type>:<service_name>:<interface>`` to find Cinder in the service
catalog when ``endpoint_override`` is not set.
"""),
    cfg.StrOpt(
        "os_region_name",
        help="Region of the Cinder endpoint in the service catalog."),
    cfg.IntOpt(
        "http_retries",
        default=3,
        min=0,
        help="""
Number of times a failed connection to Cinder is retried. An attachment
create is retried only when the connection was refused: one that broke
after the request was sent may have made the attachment already.
"""),
    cfg.IntOpt(
        "list_page_size",
        default=1000,
        min=1,
        help="""
Items per request when volumesvc lists Cinder attachments or volumes (the
dangling attachment reconciliation). Keep it at or below Cinder's
``osapi_max_limit`` (1000 by default): Cinder never returns more per page.
"""),
    cfg.BoolOpt(
        "cross_az_attach",
        default=True,
        help="""
Allow attaching a volume to a server in a different availability zone. When
false, volumes created at boot are placed in the server's zone and attaching
a volume from another zone is refused.
"""),
    cfg.IntOpt(
        "attachment_reserve_retries",
        default=10,
        min=0,
        help="""
How many times an attachment of a multiattach volume is asked for again when
Cinder refuses it because the volume is busy with another server's attach
(Cinder reserves no second attachment while the volume is ``reserved`` or
``attaching``). Two attaches sent together then both succeed instead of one
failing. 0 turns the retry off. A refusal for a volume that is not
multiattach is never retried: it is final.

Related options:

* ``attachment_reserve_interval``
"""),
    cfg.FloatOpt(
        "volume_type_cache_seconds",
        default=10.0,
        min=0.0,
        help="""
How long an API worker reuses Cinder's list of volume types to check the
``volume_type`` of a boot's block device mappings (microversion 2.67). A type
not in the list is always looked up again, so a type created a moment ago is
found at once; a type deleted within this time still passes the check and the
build then fails in Cinder (the server goes ERROR with Cinder's message).
Without the reuse every such boot asks Cinder, which in a boot storm queues
the requests behind each other in cinder-api. 0 asks Cinder on every request.
"""),
    cfg.FloatOpt(
        "attachment_reserve_interval",
        default=0.5,
        min=0.0,
        help="""
Seconds before the first retry of a refused multiattach reservation. Each
further retry waits twice as long, up to eight times this value, with 25 per cent
jitter so that racing requests do not retry in step; the defaults bound the
whole wait to about half a minute.

Related options:

* ``attachment_reserve_retries``
"""),
    cfg.FloatOpt(
        "begin_detaching_timeout",
        default=60.0,
        min=0.0,
        help="""
Seconds a detach of a multiattach volume may wait, inside its API request,
while Cinder refuses to begin detaching the volume because another server's
detach (or attach) of the same volume is running: Cinder detaches one
attachment of a volume at a time. Several detaches of one volume sent
together then all succeed, one after the other, instead of all but the first
failing with 400. The refusal is asked again with the backoff of
``attachment_reserve_interval``. A refusal for a volume that is not
multiattach is never retried. 0 turns the wait off (the 400 at once, as
Nova).

Related options:

* ``attachment_reserve_interval``
"""),
    cfg.IntOpt(
        "max_concurrent_calls",
        default=16,
        min=0,
        help="""
Most calls to Cinder that change an attachment or create a volume one
volumesvc process (a compute or a conductor) has in flight at once. The
bound the process actually uses starts at 4 and follows Cinder's latency:
it grows while calls answer quickly and shrinks as they slow down or as
Cinder answers with a 5xx, so that a storm queues inside volumesvc (the
attachment shows ``attaching``) instead of inside Cinder, whose API gives up
on its volume service after its own RPC timeout. 0 sends every call at once.
The ``volumesvc_cinder_pacing_*`` metrics show the bound, the calls in
flight and those waiting (doc/source/admin/monitoring.rst).

Related options:

* ``pacing_wait_timeout``
"""),
    cfg.IntOpt(
        "pacing_wait_timeout",
        default=600,
        min=1,
        help="""
Seconds a call to Cinder may wait for its turn under ``max_concurrent_calls``
before it fails as a Cinder connection failure (the attach or boot then
fails and is undone as when Cinder does not answer). Keep it above the time
the largest expected storm needs to pass through Cinder.

Related options:

* ``max_concurrent_calls``
"""),
    cfg.FloatOpt(
        "snapshot_undo_timeout",
        default=60.0,
        min=0.0,
        help="""
Seconds a createImage request that failed after it snapshotted the server's
volumes (Glance refused the image, for example) waits for those Cinder
snapshots to leave ``creating`` so that it can delete them again: Cinder only
deletes a snapshot that is ``available`` or ``error``. The wait holds the API
request, so it is the longest such a refusal takes to answer. A snapshot
still not deletable when the time is up is marked in Cinder (metadata
``volumesvc_undo = delete``) and deleted later by the conductors' periodic
cleanup.

Related options:

* ``[conductor] abandoned_snapshot_cleanup_interval``
"""),
]


def register_opts(conf):
    # A deep copy per ConfigOpts: oslo.config keeps a registered OptGroup's
    # options (and their overrides) on the group object itself.
    group = copy.deepcopy(cinder_group)
    conf.register_group(group)
    conf.register_opts(cinder_opts, group=group)
    # auth_type/auth_url/... and cafile/insecure/timeout/... (timeout is the
    # per-request HTTP timeout) come from keystoneauth so they match every
    # other OpenStack service's [cinder] section.
    ksa.register_group_opts(conf, cinder_group.name)


def list_opts():
    return [(cinder_group, cinder_opts + ksa.group_opts())]
