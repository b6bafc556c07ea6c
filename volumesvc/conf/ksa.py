"""keystoneauth options of a group that names another service's credentials.

Why here: ``[cinder]`` and ``[glance]`` both take keystoneauth's session
options (cafile, insecure, timeout...) and its auth options (auth_type,
auth_url...), so they match every other OpenStack service's section of the
same name. This module declares no group of its own, so option discovery
(:mod:`volumesvc.conf.opts`) skips it.
"""

from keystoneauth1 import loading as ks_loading


def register_group_opts(conf, group_name):
    """Register keystoneauth's session and auth options in ``group_name``."""
    ks_loading.register_session_conf_options(conf, group_name)
    ks_loading.register_auth_conf_options(conf, group_name)


def group_opts():
    """The options such a group shows in the sample file.

    Besides the session options and ``auth_type``/``auth_section``, those of
    the ``password`` plugin, the one operators usually configure: keystoneauth
    registers a plugin's own options only when it loads the plugin.
    """
    return (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options("password"))
