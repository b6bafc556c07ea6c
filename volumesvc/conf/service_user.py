"""Options of the [service_user] group: the service token volumesvc sends to Cinder.

Why: Cinder refuses to delete (or update) an attachment that a compute
still uses unless the request carries an ``X-Service-Token`` of a user with
the ``service`` role (its guard against CVE-2023-2088 asks the compute API
at 2.89 otherwise, with the caller's token). As in Nova, the compute's own
attachment work therefore goes out with the user's token *and* a service
token from these credentials.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

service_user_group = cfg.OptGroup(
    "service_user",
    title="Service token options",
    help="""
Credentials of volumesvc's own service user, sent as ``X-Service-Token`` with
requests to other services when ``send_service_user_token`` is true.
""")

service_user_opts = [
    cfg.BoolOpt(
        "send_service_user_token",
        default=True,
        help="""
Send a service token (from this group's keystoneauth credentials) along with
the user's token on volumesvc's requests to Cinder.

Cinder's attachment-delete guard lets a request that carries a service token
whose roles include ``service`` delete an attachment the compute still uses;
without it volumesvc's own detach of such a volume is refused. The user must
have the ``service`` role. On by default, as Cinder deployments fixed for
CVE-2023-2088 expect: configure this group's credentials (``auth_type``,
``auth_url``, ``username``, ...); ``volumesvc-status upgrade check`` fails
while it is off, or on without an ``auth_type`` while ``[cinder]
auth_strategy`` is ``keystone``. With ``[cinder] auth_strategy = noauth`` no
token of any kind is sent and this option has no effect.

Related options:

* ``[cinder] auth_strategy`` (only ``keystone`` sends tokens)
"""),
]


def register_opts(conf):
    # A deep copy per ConfigOpts: oslo.config keeps a registered OptGroup's
    # options (and their overrides) on the group object itself.
    group = copy.deepcopy(service_user_group)
    conf.register_group(group)
    conf.register_opts(service_user_opts, group=group)
    ks_loading.register_session_conf_options(conf, service_user_group.name)
    ks_loading.register_auth_conf_options(conf, service_user_group.name)


def list_opts():
    return [(service_user_group,
             service_user_opts
             + ks_loading.get_session_conf_options()
             + ks_loading.get_auth_common_conf_options()
             + ks_loading.get_auth_plugin_conf_options("password"))]
