"""Client side of the conductor RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree; when and how:
``doc/source/contributor/versions.rst``):

* 1.0 - First release. API → conductor: build_instances, delete_instance,
        reboot_instance, stop_instance, start_instance, shelve_instance,
        shelve_offload_instance, unshelve_instance, attach_volume (called
        below API 2.101, cast from 2.101, with the ``volume_requests`` row
        of a cast, and ``read_only`` for API 2.108), detach_volume, swap_volume, rebuild_instance,
        external_instance_event, reconcile_volume_attachments,
        volume_snapshot_create, volume_snapshot_delete. Compute → conductor,
        on the persistence topic ``<topic>_persistence`` (a second RPC
        server with its own thread pool, so workflow tasks that call a
        compute can never take every thread the compute's call-backs need):
        service_update, instance_get, instance_update, instance_destroy,
        instance_list_by_host, bdm_list, bdm_create, bdm_update (with
        ``expected_status`` and ``finish_event``), bdm_destroy, action_start,
        action_event_start, action_event_finish, instance_fault_create.
* 1.1 - Live migration. API → conductor: live_migrate_instance. Compute →
        conductor (persistence): migration_get, migration_list_in_progress,
        migration_update,
        migration_add_dest_attachment, live_migration_switch.
* 1.2 - Cold migration, resize and evacuation. API → conductor:
        resize_instance, confirm_resize, revert_resize, evacuate_instance.
        Compute → conductor (persistence): migration_settle,
        migration_list_cold, migration_list_evacuations, evacuation_finish.
* 1.3 - Compute → conductor, a fanout cast to every conductor:
        compute_started (each casts again at once the attaches it watches
        on that host).
"""

import oslo_messaging as messaging

from volumesvc import exception, rpc

TOPIC = "conductor"
VERSION = "1.3"
# What a method of the first release is sent as (a newer method names its own).
BASE_VERSION = "1.0"
LIVE_MIGRATION_VERSION = "1.1"
RESIZE_VERSION = "1.2"
EVACUATE_VERSION = "1.2"
COMPUTE_STARTED_VERSION = "1.3"
PERSISTENCE_SUFFIX = "_persistence"


def persistence_topic(conf):
    """The topic of the conductors' persistence server."""
    return conf.conductor.topic + PERSISTENCE_SUFFIX


class ConductorAPI:
    """What the API and the computes may ask a conductor.

    Every method takes keyword-only arguments after the context so that a
    new optional argument never shifts positions, and says whether it casts
    (fire and forget, state reported through the DB) or calls (the caller
    needs the answer now, always with an explicit timeout).
    """

    def __init__(self, conf, transport):
        self._conf = conf
        self._client = rpc.get_client(
            transport, conf.conductor.topic, version=BASE_VERSION,
            version_cap=conf.upgrade_levels.conductor)
        self._persistence = rpc.get_client(
            transport, persistence_topic(conf), version=BASE_VERSION,
            version_cap=conf.upgrade_levels.conductor)

    def service_update(self, ctxt, *, host, binary, topic, version, capabilities,
                       timeout=None):
        """Call: record a heartbeat for (host, binary); returns the service dict.

        A call rather than a cast so the compute learns (and logs) that it
        cannot reach any conductor: a missed heartbeat is what makes it
        ``down`` for the API.
        """
        cctxt = self._persistence.prepare(timeout=timeout or self._conf.report_interval)
        return cctxt.call(ctxt, "service_update", host=host, binary=binary,
                          topic=topic, version=version, capabilities=capabilities)

    def compute_started(self, ctxt, *, host):
        """Fanout cast: the compute of ``host`` (a new process) takes its queue again.

        Why: a compute killed with attaches it had taken from its queue but
        not run lost them with the process; only the conductor that cast an
        attach watches it (``conductor/attach_watch.py``), so every
        conductor is told, and each casts its watched attaches on ``host``
        again now instead of after ``[compute]
        attachment_reservation_timeout``.
        """
        self._client.prepare(version=COMPUTE_STARTED_VERSION, fanout=True).cast(
            ctxt, "compute_started", host=host)

    # -- API → conductor: server lifecycle (casts; progress is in the DB) -----

    def build_instances(self, ctxt, *, instance_uuids, request_spec):
        """Cast: pick a host for each instance and start its build.

        The API has already created the instance rows (vm_state ``building``,
        task_state ``scheduling``), their BDMs and the ``create`` action.
        ``request_spec`` is a JSON-able dict: ``flavor`` (dict), ``image``
        (dict or None), ``availability_zone``, ``needs`` (capability names
        the host must have, e.g. ``["supports_multiattach"]``).
        """
        self._client.prepare().cast(
            ctxt, "build_instances", instance_uuids=instance_uuids,
            request_spec=request_spec)

    def delete_instance(self, ctxt, *, instance_uuid):
        """Cast: tear the instance down (task_state already ``deleting``)."""
        self._client.prepare().cast(
            ctxt, "delete_instance", instance_uuid=instance_uuid)

    def reboot_instance(self, ctxt, *, instance_uuid, reboot_type):
        """Cast: reboot (task_state already ``rebooting``/``rebooting_hard``)."""
        self._client.prepare().cast(
            ctxt, "reboot_instance", instance_uuid=instance_uuid,
            reboot_type=reboot_type)

    # -- API → conductor: stop/start/shelve/unshelve (conductor/tasks/power.py,
    #    shelve.py, unshelve.py) --------------------------------------------------

    def _lifecycle_cast(self, ctxt, method, **kwargs):
        self._client.prepare().cast(ctxt, method, **kwargs)

    def stop_instance(self, ctxt, *, instance_uuid):
        """Cast: power the domain off (task_state already ``powering-off``)."""
        self._lifecycle_cast(ctxt, "stop_instance", instance_uuid=instance_uuid)

    def start_instance(self, ctxt, *, instance_uuid):
        """Cast: recreate the domain from the BDMs and start it (``powering-on``)."""
        self._lifecycle_cast(ctxt, "start_instance", instance_uuid=instance_uuid)

    def shelve_instance(self, ctxt, *, instance_uuid):
        """Cast: power off, shelve, offload when ``shelved_offload_time`` is 0."""
        self._lifecycle_cast(ctxt, "shelve_instance", instance_uuid=instance_uuid)

    def shelve_offload_instance(self, ctxt, *, instance_uuid):
        """Cast: offload a shelved server (domain gone, volumes disconnected, no host)."""
        self._lifecycle_cast(ctxt, "shelve_offload_instance", instance_uuid=instance_uuid)

    def unshelve_instance(self, ctxt, *, instance_uuid, availability_zone=None, host=None):
        """Cast: place an offloaded server on a compute (or restart a shelved one).

        ``availability_zone``/``host`` narrow the choice (2.77/2.91); the
        API has checked they exist.
        """
        self._lifecycle_cast(ctxt, "unshelve_instance", instance_uuid=instance_uuid,
                             availability_zone=availability_zone, host=host)

    # -- API → conductor: volume attachments ----------------------------------

    def attach_volume(self, ctxt, *, instance_uuid, volume_id, device=None, disk_bus=None,
                      device_type=None, tag=None, delete_on_termination=False,
                      multiattach=None, wait=False, request_uuid=None, read_only=False):
        """Run the attach workflow (``conductor/tasks/attach.py``).

        ``wait=False`` (API 2.101+) casts and returns None at once: no API
        worker waits on a compute host. ``wait=True`` (below 2.101) calls with
        ``long_rpc_timeout`` and the call monitor, and returns the new BDM as
        a dict (its ``device_name`` goes into the 200 body). ``multiattach``
        is the volume's flag as the API read it (None: the conductor asks
        Cinder); passing it saves two Cinder calls per attach.
        ``request_uuid``: the ``volume_requests`` row of a cast. ``read_only``
        (API 2.108): Cinder's attachment mode ``ro``.
        """
        kwargs = dict(instance_uuid=instance_uuid, volume_id=volume_id, device=device,
                      disk_bus=disk_bus, device_type=device_type, tag=tag,
                      delete_on_termination=delete_on_termination, multiattach=multiattach,
                      request_uuid=request_uuid, read_only=read_only)
        if not wait:
            self._client.prepare().cast(ctxt, "attach_volume", **kwargs)
            return None
        cctxt = self._client.prepare(
            timeout=self._conf.long_rpc_timeout,
            call_monitor_timeout=self._conf.rpc_response_timeout)
        try:
            return cctxt.call(ctxt, "attach_volume", **kwargs)
        except messaging.MessagingTimeout as exc:
            # NOTE: with the call monitor this means the conductor stopped
            # answering (died, or cut off from the bus). Its task finishes or
            # rolls back on its own; the client is told where to look (503)
            # rather than given a 500.
            raise exception.ConductorTimeout(
                action="attach",
                where=f"GET /servers/{instance_uuid}/os-volume_attachments") from exc

    def detach_volume(self, ctxt, *, instance_uuid, volume_id, attachment_id,
                      request_uuid=None):
        """Cast: detach from the domain and delete the Cinder attachment.

        The API has already run ``os-begin_detaching`` and recorded the
        ``detach_volume`` action. ``request_uuid``: as for attach.
        """
        self._client.prepare().cast(ctxt, "detach_volume", instance_uuid=instance_uuid,
                                    volume_id=volume_id, attachment_id=attachment_id,
                                    request_uuid=request_uuid)

    def swap_volume(self, ctxt, *, instance_uuid, old_volume_id, new_volume_id):
        """Cast: the swap workflow (``conductor/tasks/swap.py``).

        The API has set the ``swapping_volume`` task state and recorded the
        ``swap_volume`` action.
        """
        self._client.prepare().cast(
            ctxt, "swap_volume", instance_uuid=instance_uuid, old_volume_id=old_volume_id,
            new_volume_id=new_volume_id)

    # -- API → conductor: rebuild and external events -------------------------

    def rebuild_instance(self, ctxt, *, instance_uuid, image_ref, reimage,
                         preserve_ephemeral=False):
        """Cast: find the instance's compute and have it rebuild the server.

        The API has moved the task_state to ``rebuilding`` and recorded the
        ``rebuild`` action; ``reimage`` asks for Cinder's os-reimage of
        ``image_ref`` onto the root volume first (API 2.93, new image).
        """
        self._client.prepare().cast(
            ctxt, "rebuild_instance", instance_uuid=instance_uuid, image_ref=image_ref,
            reimage=reimage, preserve_ephemeral=preserve_ephemeral)

    def external_instance_event(self, ctxt, *, instance_uuid, events):
        """Cast: hand the events of one instance to the compute that hosts it.

        ``events`` are the accepted events as dicts ``{name, tag, status,
        completion}`` (``completion``: the event arrived at 2.105 or later).
        """
        self._client.prepare().cast(
            ctxt, "external_instance_event", instance_uuid=instance_uuid, events=events)

    def live_migrate_instance(self, ctxt, *, instance_uuid, migration_id, host=None,
                              force=False):
        """Cast: check or choose the destination, then hand the move to the source.

        ``host``: the destination the admin named (None: the scheduler
        chooses); ``force`` (2.30–2.67): a named host is taken without
        checking its room.
        """
        self._client.prepare(version=LIVE_MIGRATION_VERSION).cast(
            ctxt, "live_migrate_instance", instance_uuid=instance_uuid,
            migration_id=migration_id, host=host, force=force)

    def resize_instance(self, ctxt, *, instance_uuid, migration_id, host=None):
        """Cast: choose (or check ``host``, 2.56) the destination of a resize or
        cold migration, then hand the move to the source compute."""
        self._client.prepare(version=RESIZE_VERSION).cast(
            ctxt, "resize_instance", instance_uuid=instance_uuid,
            migration_id=migration_id, host=host)

    def confirm_resize(self, ctxt, *, instance_uuid, migration_id):
        """Cast: the (already recorded) confirm; the source removes the server's files."""
        self._client.prepare(version=RESIZE_VERSION).cast(
            ctxt, "confirm_resize", instance_uuid=instance_uuid, migration_id=migration_id)

    def revert_resize(self, ctxt, *, instance_uuid, migration_id):
        """Cast: move a ``RESIZED`` server back to its source with its old flavor."""
        self._client.prepare(version=RESIZE_VERSION).cast(
            ctxt, "revert_resize", instance_uuid=instance_uuid, migration_id=migration_id)

    def evacuate_instance(self, ctxt, *, instance_uuid, migration_id, host=None,
                          force=False, target_state=None):
        """Cast: check or choose the destination of an evacuation, then cast it there.

        ``host``: the destination the admin named (None: the scheduler
        chooses); ``force`` (2.29–2.67): a named host is taken without
        checking its room; ``target_state``: the vm_state the server ends
        in (``stopped`` from 2.95; None: the one it had).
        """
        self._client.prepare(version=EVACUATE_VERSION).cast(
            ctxt, "evacuate_instance", instance_uuid=instance_uuid,
            migration_id=migration_id, host=host, force=force, target_state=target_state)

    # -- operators → conductor --------------------------------------------------

    def reconcile_volume_attachments(self, ctxt, *, instance_uuids, dry_run=False,
                                     attachments=None, available_volume_ids=None):
        """Call: reconcile each server on its compute; returns one report dict per server.

        ``attachments``/``available_volume_ids``: one Cinder listing made by
        the caller for many servers (``--all-servers``); None lets each
        compute list its servers' own.
        """
        cctxt = self._client.prepare(
            timeout=self._conf.long_rpc_timeout,
            call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "reconcile_volume_attachments", instance_uuids=instance_uuids,
                          dry_run=dry_run, attachments=attachments,
                          available_volume_ids=available_volume_ids)

    # -- API → conductor: assisted volume snapshots ---------------------------

    def volume_snapshot_create(self, ctxt, *, instance_uuid, volume_id, create_info):
        """Cast: have the server's compute take the snapshot Cinder asked for."""
        self._client.prepare().cast(
            ctxt, "volume_snapshot_create", instance_uuid=instance_uuid,
            volume_id=volume_id, create_info=create_info)

    def volume_snapshot_delete(self, ctxt, *, instance_uuid, volume_id, snapshot_id,
                               delete_info):
        """Cast: have the server's compute merge the snapshot away."""
        self._client.prepare().cast(
            ctxt, "volume_snapshot_delete", instance_uuid=instance_uuid,
            volume_id=volume_id, snapshot_id=snapshot_id, delete_info=delete_info)

    # -- compute → conductor: persistence (calls, short timeouts) ------------

    def _call(self, ctxt, method, *, version=BASE_VERSION, timeout=None, **kwargs):
        """Call ``method`` on the persistence topic (a newer method passes its ``version``)."""
        cctxt = self._persistence.prepare(
            version=version, timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, method, **kwargs)

    def instance_get(self, ctxt, *, instance_uuid):
        """Call: the instance as a dict (InstanceNotFound if gone)."""
        return self._call(ctxt, "instance_get", instance_uuid=instance_uuid)

    def instance_update(self, ctxt, *, instance_uuid, values, expected_task_state=None,
                        check_task_state=False):
        """Call: save ``values``; with ``check_task_state`` compare-and-swap on
        task_state (UnexpectedTaskStateError when it moved on)."""
        return self._call(ctxt, "instance_update", instance_uuid=instance_uuid,
                          values=values, expected_task_state=expected_task_state,
                          check_task_state=check_task_state)

    def instance_destroy(self, ctxt, *, instance_uuid):
        """Call: soft-delete the instance and its BDMs."""
        return self._call(ctxt, "instance_destroy", instance_uuid=instance_uuid)

    def bdm_list(self, ctxt, *, instance_uuid):
        """Call: the instance's BDMs as dicts, boot disk first."""
        return self._call(ctxt, "bdm_list", instance_uuid=instance_uuid)

    def bdm_create(self, ctxt, *, values):
        return self._call(ctxt, "bdm_create", values=values)

    def bdm_update(self, ctxt, *, bdm_uuid, values, expected_status=None, finish_event=None):
        """Call: save ``values``; with ``expected_status`` only while the
        BDM's ``attach_status`` is still that (else nothing changes).

        ``finish_event``: the keyword arguments of an ``action_event_finish``
        the conductor does next, whatever became of the save.
        """
        return self._call(ctxt, "bdm_update", bdm_uuid=bdm_uuid, values=values,
                          expected_status=expected_status, finish_event=finish_event)

    def bdm_destroy(self, ctxt, *, bdm_uuid, values=None):
        """Call: soft delete; ``values`` (the status of a failed attach) in the same write."""
        return self._call(ctxt, "bdm_destroy", bdm_uuid=bdm_uuid, values=values)

    def action_event_start(self, ctxt, *, instance_uuid, request_id, event, host):
        return self._call(ctxt, "action_event_start", instance_uuid=instance_uuid,
                          request_id=request_id, event=event, host=host)

    def action_event_finish(self, ctxt, *, instance_uuid, request_id, event, result,
                            traceback=None, details=None):
        return self._call(ctxt, "action_event_finish", instance_uuid=instance_uuid,
                          request_id=request_id, event=event, result=result,
                          traceback=traceback, details=details)

    def instance_fault_create(self, ctxt, *, instance_uuid, code, message, details=None,
                              host=None):
        return self._call(ctxt, "instance_fault_create", instance_uuid=instance_uuid,
                          code=code, message=message, details=details, host=host)

    def instance_list_by_host(self, ctxt, *, host, timeout=None):
        """Call: the live instances of ``host`` as dicts."""
        return self._call(ctxt, "instance_list_by_host", timeout=timeout, host=host)

    def action_start(self, ctxt, *, instance_uuid, action, request_id):
        """Call: start an instance action for work the compute began itself."""
        return self._call(ctxt, "action_start", instance_uuid=instance_uuid,
                          action=action, request_id=request_id)


    # -- compute → conductor: live migration records --------------------------

    def migration_get(self, ctxt, *, migration_id):
        """Call: the migration as a dict (MigrationNotFound if gone)."""
        return self._call(ctxt, "migration_get", version=LIVE_MIGRATION_VERSION,
                          migration_id=migration_id)

    def migration_list_in_progress(self, ctxt, *, instance_uuid=None, source_compute=None,
                                   statuses=None):
        """Call: unsettled live migrations (dicts) of a server or from a host."""
        return self._call(ctxt, "migration_list_in_progress", version=LIVE_MIGRATION_VERSION,
                          instance_uuid=instance_uuid, source_compute=source_compute,
                          statuses=statuses)

    def migration_update(self, ctxt, *, migration_id, values, expected_status=None):
        """Call: save ``values``; with ``expected_status`` only from those statuses
        (InvalidMigrationState otherwise)."""
        return self._call(ctxt, "migration_update", version=LIVE_MIGRATION_VERSION,
                          migration_id=migration_id, values=values,
                          expected_status=expected_status)

    def migration_add_dest_attachment(self, ctxt, *, migration_id, volume_id, attachment_id):
        """Call: record (None: forget) the destination's attachment of a volume."""
        return self._call(ctxt, "migration_add_dest_attachment",
                          version=LIVE_MIGRATION_VERSION, migration_id=migration_id,
                          volume_id=volume_id, attachment_id=attachment_id)

    def live_migration_switch(self, ctxt, *, migration_id, bdms):
        """Call: the server is on the destination: in one transaction its host and
        node become the destination's, each BDM of ``bdms`` (uuid → attachment id
        and connection info) takes the destination's attachment, the task ends
        and the migration is ``post-migrating``. Returns the old BDM values."""
        return self._call(ctxt, "live_migration_switch", version=LIVE_MIGRATION_VERSION,
                          migration_id=migration_id, bdms=bdms)

    # -- compute → conductor: evacuation records ------------------------------

    def migration_list_evacuations(self, ctxt, *, statuses, instance_uuid=None,
                                   source_compute=None, dest_compute=None, timeout=None):
        """Call: evacuations (dicts) in ``statuses`` of a server, from or to a host."""
        return self._call(ctxt, "migration_list_evacuations", version=EVACUATE_VERSION,
                          timeout=timeout, statuses=statuses, instance_uuid=instance_uuid,
                          source_compute=source_compute, dest_compute=dest_compute)

    def evacuation_finish(self, ctxt, *, migration_id, values):
        """Call: in one transaction the server becomes the destination's (host,
        node, ``values``, task ended) and the migration ``done``."""
        return self._call(ctxt, "evacuation_finish", version=EVACUATE_VERSION,
                          migration_id=migration_id, values=values)


    # -- compute → conductor: cold move records ---------------------------------

    def migration_settle(self, ctxt, *, migration_id, expected_status, status,
                         instance_values, expected_task_state):
        """Call: one step of a cold move, the migration's status and the server's
        record in one transaction, each a compare and swap."""
        return self._call(ctxt, "migration_settle", version=RESIZE_VERSION,
                          migration_id=migration_id, expected_status=expected_status,
                          status=status, instance_values=instance_values,
                          expected_task_state=expected_task_state)

    def migration_list_cold(self, ctxt, *, instance_uuid=None, source_compute=None,
                            dest_compute=None, statuses=None):
        """Call: cold moves (dicts) of a server, or from or to a host, oldest first."""
        return self._call(ctxt, "migration_list_cold", version=RESIZE_VERSION,
                          instance_uuid=instance_uuid, source_compute=source_compute,
                          dest_compute=dest_compute, statuses=statuses)

# Exceptions a caller can expect across the bus (re-raised as the same class).
RemoteError = messaging.RemoteError
MessagingTimeout = messaging.MessagingTimeout
