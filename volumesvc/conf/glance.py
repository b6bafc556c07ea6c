"""Options of the [glance] group: how volumesvc reaches the Image API (v2)."""

import copy

from oslo_config import cfg

from volumesvc.conf import ksa

glance_group = cfg.OptGroup(
    "glance",
    title="Glance options",
    help="Configuration options for the Image service (Glance) client.")

glance_opts = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[("keystone", "The user's keystone token (or the [glance] keystoneauth "
                              "credentials for requests without one)"),
                 ("noauth", "No token: Glance runs the unauthenticated paste pipeline "
                            "(the single-machine setup)")],
        help="""
How requests to Glance are authenticated. Use ``noauth`` only against a Glance
whose ``[paste_deploy] flavor`` is empty (no keystone).

Related options:

* ``endpoint_override``
"""),
    cfg.StrOpt(
        "endpoint_override",
        help="""
Image API root to use instead of the service catalog, for example
``http://127.0.0.1:9292`` (a trailing ``/v2`` is accepted). Required with
``auth_strategy = noauth``. Image URLs given to clients (the ``Location`` of a
createImage below microversion 2.45) are built from it.
"""),
    cfg.StrOpt(
        "catalog_info",
        default="image::public",
        regex=r"^\w+:\w*:.*$",
        help="""
``<service_type>:<service_name>:<interface>`` to find Glance in the service
catalog when ``endpoint_override`` is not set.
"""),
    cfg.StrOpt(
        "region_name",
        help="Region of the Glance endpoint in the service catalog."),
    cfg.IntOpt(
        "num_retries",
        default=3,
        min=0,
        help="Number of times a failed connection to Glance is retried."),
]


def register_opts(conf):
    # A deep copy per ConfigOpts: oslo.config keeps a registered OptGroup's
    # options (and their overrides) on the group object itself.
    group = copy.deepcopy(glance_group)
    conf.register_group(group)
    conf.register_opts(glance_opts, group=group)
    # cafile/insecure/timeout/... and auth_type/auth_url/... come from
    # keystoneauth so they match every other OpenStack service's section.
    ksa.register_group_opts(conf, glance_group.name)


def list_opts():
    return [(glance_group, glance_opts + ksa.group_opts())]
