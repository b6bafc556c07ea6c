"""Options of ``[key_manager]`` and castellan's backend groups: where volume keys live.

An encrypted Cinder volume's key is a secret in a key manager (Barbican, or
Vault), named by the volume's ``encryption_key_id``. The compute reads it
to open the volume (``volumesvc.keymgr``). The options are castellan's
own, registered through castellan's helpers so that they stay exactly what
Cinder's and Nova's configuration call them: ``[key_manager] backend``,
``[barbican] barbican_endpoint``, ``[barbican] send_service_user_token`` with
``[barbican_service_user]`` for the service token, ``[vault] ...``.
"""

from castellan import options as castellan_options


def register_opts(conf):
    # castellan's default backend is Barbican, as Nova's and Cinder's.
    castellan_options.set_defaults(conf, backend="barbican")


def list_opts():
    return castellan_options.list_opts()
