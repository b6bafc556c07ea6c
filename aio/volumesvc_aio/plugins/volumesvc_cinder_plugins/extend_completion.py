"""Test-only Cinder extension: leave an attached volume ``extending`` for the compute.

Why: Cinder 29 ships ``os-extend_volume_completion`` (volume API 3.71) but no
code path that waits for it: its volume manager always finishes an extend
itself and only then tells Nova (``volume-extended`` at 2.51). To run the
extend-completion flow (volumesvc's 2.105) against a real Cinder, this module
adds the two missing pieces described in doc/source/contributor/dependencies.rst ("Cinder"):

* :class:`CompletionVolumeManager` (``[DEFAULT] volume_manager``): for a volume
  attached to exactly one server it writes the admin metadata
  ``extend_new_size`` and ``extend_reservations`` that the completion action
  reads, posts ``volume-extended`` at 2.105 and returns with the volume still
  ``extending``; the compute resizes and completes. Only a backend whose driver
  says ``extend_attached_by_compute`` (the file driver: QEMU holds the file, as
  with Cinder's NFS drivers) takes this path, and it is not asked to resize at
  all. Every other backend (Cinder's RBD driver grows the image itself, then
  the compute grows the guest's disk on ``volume-extended`` at 2.51), a volume
  attached to no or several servers, and a volume whose metadata has
  ``volumesvc_stock_extend=true`` take Cinder's stock path.
* :func:`show_extend_new_size_factory`, a paste filter for the API pipeline:
  Cinder shows only ``readonly``/``attached_mode`` of the admin metadata in
  ``metadata``; this adds ``extend_new_size``. For the error-path tests a
  user metadata key ``volumesvc_test_shown_extend_new_size`` replaces what is
  shown (an empty value hides it), while the admin metadata the completion
  reads stays intact.

It runs inside Cinder's virtualenv; volumesvc itself never imports it.
"""

from cinder.compute import nova
from cinder.volume import manager
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
from oslo_serialization import jsonutils

LOG = logging.getLogger(__name__)

EXTEND_NEW_SIZE = "extend_new_size"
EXTEND_RESERVATIONS = "extend_reservations"
COMPLETION_MICROVERSION = "2.105"
STOCK_KEY = "volumesvc_stock_extend"
SHOWN_KEY = "volumesvc_test_shown_extend_new_size"


class CompletionVolumeManager(manager.VolumeManager):
    """Cinder's volume manager, with extends of attached volumes completed by the compute."""

    def extend_volume(self, context, volume, new_size, reservations):
        servers = {a.instance_uuid for a in volume.volume_attachment or []
                   if a.instance_uuid}
        stock = str((volume.metadata or {}).get(STOCK_KEY, "")).lower() == "true"
        by_compute = getattr(self.driver, "extend_attached_by_compute", False)
        if len(servers) != 1 or stock or not by_compute:
            return super().extend_volume(context, volume, new_size, reservations)
        self.db.volume_admin_metadata_update(
            context.elevated(), volume.id,
            {EXTEND_NEW_SIZE: str(int(new_size)),
             EXTEND_RESERVATIONS: jsonutils.dumps(reservations)}, False)
        (server,) = servers
        LOG.info("Volume %s waits in 'extending' for server %s to complete the extend to "
                 "%s GiB", volume.id, server, new_size, resource=volume)
        sent = _post_event(context, {"name": "volume-extended", "server_uuid": server,
                                     "tag": volume.id})
        if not sent:
            self._roll_back_unsent(context, volume, new_size, reservations)

    def _roll_back_unsent(self, context, volume, new_size, reservations):
        """No compute took the event: nobody will complete, so roll back here.

        When someone else already called the completion with error, the
        admin metadata is consumed at once (the status follows later, by
        cast): then there is nothing to do.
        """
        admin = context.elevated()
        if EXTEND_NEW_SIZE not in self.db.volume_admin_metadata_get(admin, volume.id):
            return
        LOG.error("volume-extended was not accepted for volume %s; rolling back", volume.id,
                  resource=volume)
        for key in (EXTEND_NEW_SIZE, EXTEND_RESERVATIONS):
            self.db.volume_admin_metadata_delete(admin, volume.id, key)
        self.extend_volume_completion(context, volume, new_size, reservations, error=True)


def _post_event(context, event):
    """POST the event at 2.105 with the ``[nova]`` credentials; True when accepted (200).

    NOTE: not through Cinder's novaclient helper: novaclient refuses any
    version above its own maximum (2.96).
    """
    group = cfg.CONF[nova.NOVA_GROUP]
    try:
        auth = ks_loading.load_auth_from_conf_options(cfg.CONF, nova.NOVA_GROUP)
        if cfg.CONF.auth_strategy == "keystone":
            # As Cinder's own novaclient helper: add the service token.
            from cinder import service_auth

            auth = service_auth.get_auth_plugin(context, auth=auth)
        session = ks_loading.load_session_from_conf_options(cfg.CONF, nova.NOVA_GROUP,
                                                            auth=auth)
        endpoint = auth.get_endpoint(session, service_type="compute",
                                     interface=group.interface,
                                     region_name=group.region_name)
        response = session.post(
            endpoint.rstrip("/") + "/os-server-external-events", json={"events": [event]},
            headers={"OpenStack-API-Version": f"compute {COMPLETION_MICROVERSION}",
                     "X-OpenStack-Nova-API-Version": COMPLETION_MICROVERSION,
                     "X-OpenStack-Request-ID": context.request_id},
            raise_exc=False, timeout=30)
        codes = [e.get("code") for e in response.json().get("events", [])]
    except Exception:  # noqa: BLE001 - unsent is handled by the caller
        LOG.exception("Failed to notify the compute service of event %s", event)
        return False
    if response.status_code != 200 or codes != [200]:
        LOG.warning("Compute service answered %s for event %s: %s", response.status_code,
                    event, response.text)
        return False
    LOG.info("Compute service accepted event %s", event)
    return True


def _with_shown_extend_new_size(add_visible):
    def add_visible_admin_metadata(volume):
        add_visible(volume)
        metadata = volume.get("metadata") if hasattr(volume, "get") else None
        if not isinstance(metadata, dict) or SHOWN_KEY not in metadata:
            return
        if metadata[SHOWN_KEY] == "":
            metadata.pop(EXTEND_NEW_SIZE, None)
        else:
            metadata[EXTEND_NEW_SIZE] = metadata[SHOWN_KEY]
    add_visible_admin_metadata.volumesvc_wrapped = True
    return add_visible_admin_metadata


def show_extend_new_size_factory(global_conf, **local_conf):
    """Paste filter factory: show ``extend_new_size`` in volume ``metadata``.

    The filter itself passes requests through; loading it adjusts Cinder's
    list of visible admin metadata keys in the API process.
    """
    from cinder.api import api_utils

    if EXTEND_NEW_SIZE not in api_utils._visible_admin_metadata_keys:
        api_utils._visible_admin_metadata_keys.append(EXTEND_NEW_SIZE)
    if not getattr(api_utils.add_visible_admin_metadata, "volumesvc_wrapped", False):
        api_utils.add_visible_admin_metadata = _with_shown_extend_new_size(
            api_utils.add_visible_admin_metadata)

    def passthrough(app):
        return app
    return passthrough
