"""Client side of the conductor RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree):

* 1.0 - Initial version: service_update; build_instances, delete_instance,
        reboot_instance (API → conductor); instance/BDM/action/fault
        persistence on behalf of computes.
* 1.1 - attach_volume (the attach workflow, called below API 2.101 and cast
        from 2.101) and detach_volume.
* 1.2 - The persistence calls of computes (service_update, instance_*,
        bdm_*, action events, faults) go to their own topic
        ``<topic>_persistence``, served by a second RPC server with its own
        thread pool: workflow tasks that call a compute can no longer take
        every thread the compute's call-backs need (attach storms starved).
        attach_volume takes ``multiattach`` (the API's reading of the volume).
* 1.3 - external_instance_event: the API's accepted external events, passed
        on to the compute hosting the instance (service version 4).
* 1.4 - reconcile_volume_attachments (operators: dangling BDMs and Cinder
        attachments of given servers, through their computes);
        instance_list_by_host and action_start for computes (recovery on
        start, cleanups nobody asked for).
* 1.5 - stop_instance, start_instance, shelve_instance, shelve_offload_instance,
        unshelve_instance (API → conductor casts). attach_volume and
        detach_volume of a shelved-offloaded server run here without a compute.
* 1.6 - volume_snapshot_create, volume_snapshot_delete (API → conductor casts
        for os-assisted-volume-snapshots).
* 1.7 - bdm_create and bdm_update accept ``attach_status``, ``fault_code``
        and ``fault_message`` (API 2.106; ``fault_at`` is stamped by the
        conductor); bdm_update takes ``expected_status`` (a compare and swap:
        a late ``attached`` never overwrites ``detaching``); bdm_destroy takes
        ``values`` written with the delete (a failed attach is never a live
        ``error`` BDM). Computes send them only to a 1.7 conductor.
* 1.8 - bdm_update takes ``finish_event`` (the arguments of an
        action_event_finish done after the save, even when it failed): an
        attach's last report and its event's Success are one call, not two.
* 1.9 - swap_volume (API → conductor cast: the os-volume_attachments PUT
        that Cinder sends while it retypes or migrates an in-use volume).
* 1.10 - rebuild_instance (API → conductor cast: the rebuild server action
         of a volume-backed server).
* 1.11 - attach_volume and detach_volume take ``request_uuid``: the API's
         ``volume_requests`` row for the cast, claimed by the conductor that
         runs it and re-run by another when that one dies or the cast is lost
         (``conductor/volume_requests.py``).
* 1.12 - attach_volume takes ``read_only`` (API 2.108): the Cinder
         attachment is created with mode ``ro`` and the BDM keeps it.
"""

import oslo_messaging as messaging

from volumesvc import exception, rpc

TOPIC = "conductor"
VERSION = "1.12"
# The first version of each feature a caller asks about (``can_*``) before it
# sends: ``[upgrade_levels] conductor`` may pin the client below it while
# older conductors still run.
ATTACH_VERSION = "1.1"
PERSISTENCE_TOPIC_VERSION = "1.2"
MULTIATTACH_VERSION = "1.2"
EVENTS_VERSION = "1.3"
LIFECYCLE_VERSION = "1.5"
SNAPSHOT_VERSION = "1.6"
ATTACH_STATUS_VERSION = "1.7"
FINISH_EVENT_VERSION = "1.8"
SWAP_VERSION = "1.9"
REBUILD_VERSION = "1.10"
VOLUME_REQUESTS_VERSION = "1.11"
READ_ONLY_VERSION = "1.12"
PERSISTENCE_SUFFIX = "_persistence"


def persistence_topic(conf):
    """The topic of the conductors' persistence server (RPC 1.2)."""
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
            transport, conf.conductor.topic, version=VERSION,
            version_cap=conf.upgrade_levels.conductor)
        self._persistence = rpc.get_client(
            transport, persistence_topic(conf), version=VERSION,
            version_cap=conf.upgrade_levels.conductor)

    def _persistence_client(self):
        # TODO(remove at RPC 2.0): before 1.2 conductors served persistence
        # on the workflow topic only.
        if self._client.can_send_version(PERSISTENCE_TOPIC_VERSION):
            return self._persistence, PERSISTENCE_TOPIC_VERSION
        return self._client, "1.0"

    def service_update(self, ctxt, *, host, binary, topic, version, capabilities,
                       timeout=None):
        """Call: record a heartbeat for (host, binary); returns the service dict.

        A call rather than a cast so the compute learns (and logs) that it
        cannot reach any conductor: a missed heartbeat is what makes it
        ``down`` for the API.
        """
        client, rpc_version = self._persistence_client()
        cctxt = client.prepare(version=rpc_version,
                               timeout=timeout or self._conf.report_interval)
        return cctxt.call(ctxt, "service_update", host=host, binary=binary,
                          topic=topic, version=version, capabilities=capabilities)


    # -- API → conductor: server lifecycle (casts; progress is in the DB) -----

    def build_instances(self, ctxt, *, instance_uuids, request_spec):
        """Cast: pick a host for each instance and start its build.

        The API has already created the instance rows (vm_state ``building``,
        task_state ``scheduling``), their BDMs and the ``create`` action.
        ``request_spec`` is a JSON-able dict: ``flavor`` (dict), ``image``
        (dict or None), ``availability_zone``, ``needs`` (capability names
        the host must have, e.g. ``["supports_multiattach"]``).
        """
        self._client.prepare(version="1.0").cast(
            ctxt, "build_instances", instance_uuids=instance_uuids,
            request_spec=request_spec)

    def delete_instance(self, ctxt, *, instance_uuid):
        """Cast: tear the instance down (task_state already ``deleting``)."""
        self._client.prepare(version="1.0").cast(
            ctxt, "delete_instance", instance_uuid=instance_uuid)

    def reboot_instance(self, ctxt, *, instance_uuid, reboot_type):
        """Cast: reboot (task_state already ``rebooting``/``rebooting_hard``)."""
        self._client.prepare(version="1.0").cast(
            ctxt, "reboot_instance", instance_uuid=instance_uuid,
            reboot_type=reboot_type)

    # -- API → conductor: stop/start/shelve/unshelve (1.5; conductor/tasks/power.py,
    #    shelve.py, unshelve.py) --------------------------------------------------

    def can_lifecycle(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.5 (API: 503)."""
        # TODO(remove at RPC 2.0): every conductor runs the lifecycle actions.
        return self._client.can_send_version(LIFECYCLE_VERSION)

    def _lifecycle_cast(self, ctxt, method, **kwargs):
        self._client.prepare(version=LIFECYCLE_VERSION).cast(ctxt, method, **kwargs)

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

    # -- API → conductor: volume attachments (1.1) ----------------------------

    def can_attach(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.1 (API: 503)."""
        # TODO(remove at RPC 2.0): every conductor runs the attach workflow.
        return self._client.can_send_version(ATTACH_VERSION)

    def can_track_volume_requests(self):
        """True when conductors claim and recover ``volume_requests`` rows (1.11).

        The API records an accepted 2.101+ attach or detach only then: an
        older conductor would never delete the row.
        """
        # TODO(remove at RPC 2.0): every conductor tracks volume requests.
        return self._client.can_send_version(VOLUME_REQUESTS_VERSION)

    def can_attach_read_only(self):
        """True when conductors make read-only attachments (1.12; API 2.108: else 503)."""
        return self._client.can_send_version(READ_ONLY_VERSION)

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
        ``request_uuid`` (1.11; check ``can_track_volume_requests``): the
        ``volume_requests`` row of a cast. ``read_only`` (1.12; check
        ``can_attach_read_only``): Cinder's attachment mode ``ro``.
        """
        kwargs = dict(instance_uuid=instance_uuid, volume_id=volume_id, device=device,
                      disk_bus=disk_bus, device_type=device_type, tag=tag,
                      delete_on_termination=delete_on_termination)
        version = ATTACH_VERSION
        # TODO(remove at RPC 2.0): always send ``multiattach``.
        if multiattach is not None and self._client.can_send_version(MULTIATTACH_VERSION):
            version, kwargs["multiattach"] = MULTIATTACH_VERSION, multiattach
        if request_uuid is not None:
            version, kwargs["request_uuid"] = VOLUME_REQUESTS_VERSION, request_uuid
        if read_only:
            version, kwargs["read_only"] = READ_ONLY_VERSION, True
        if not wait:
            self._client.prepare(version=version).cast(ctxt, "attach_volume", **kwargs)
            return None
        cctxt = self._client.prepare(
            version=version, timeout=self._conf.long_rpc_timeout,
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
        ``detach_volume`` action. ``request_uuid`` (1.11): as for attach.
        """
        kwargs = dict(instance_uuid=instance_uuid, volume_id=volume_id,
                      attachment_id=attachment_id)
        version = ATTACH_VERSION
        if request_uuid is not None:
            version, kwargs["request_uuid"] = VOLUME_REQUESTS_VERSION, request_uuid
        self._client.prepare(version=version).cast(ctxt, "detach_volume", **kwargs)

    def can_swap_volume(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.9 (API: 409)."""
        return self._client.can_send_version(SWAP_VERSION)

    def swap_volume(self, ctxt, *, instance_uuid, old_volume_id, new_volume_id):
        """Cast: the swap workflow (``conductor/tasks/swap.py``).

        The API has set the ``swapping_volume`` task state and recorded the
        ``swap_volume`` action.
        """
        self._client.prepare(version=SWAP_VERSION).cast(
            ctxt, "swap_volume", instance_uuid=instance_uuid, old_volume_id=old_volume_id,
            new_volume_id=new_volume_id)

    # -- API → conductor: external events (1.3) -------------------------------

    def can_rebuild(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.10."""
        return self._client.can_send_version(REBUILD_VERSION)

    def rebuild_instance(self, ctxt, *, instance_uuid, image_ref, reimage,
                         preserve_ephemeral=False):
        """Cast: find the instance's compute and have it rebuild the server.

        The API has moved the task_state to ``rebuilding`` and recorded the
        ``rebuild`` action; ``reimage`` asks for Cinder's os-reimage of
        ``image_ref`` onto the root volume first (API 2.93, new image).
        """
        self._client.prepare(version=REBUILD_VERSION).cast(
            ctxt, "rebuild_instance", instance_uuid=instance_uuid, image_ref=image_ref,
            reimage=reimage, preserve_ephemeral=preserve_ephemeral)

    def can_send_events(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.3."""
        # TODO(remove at RPC 2.0): every conductor passes external events on.
        return self._client.can_send_version(EVENTS_VERSION)

    def external_instance_event(self, ctxt, *, instance_uuid, events):
        """Cast: hand the events of one instance to the compute that hosts it.

        ``events`` are the accepted events as dicts ``{name, tag, status,
        completion}`` (``completion``: the event arrived at 2.105 or later).
        """
        self._client.prepare(version=EVENTS_VERSION).cast(
            ctxt, "external_instance_event", instance_uuid=instance_uuid, events=events)
    # -- operators → conductor (1.4) ---------------------------------------------

    def reconcile_volume_attachments(self, ctxt, *, instance_uuids, dry_run=False,
                                     attachments=None, available_volume_ids=None):
        """Call: reconcile each server on its compute; returns one report dict per server.

        ``attachments``/``available_volume_ids``: one Cinder listing made by
        the caller for many servers (``--all-servers``); None lets each
        compute list its servers' own.
        """
        cctxt = self._client.prepare(
            version="1.4", timeout=self._conf.long_rpc_timeout,
            call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "reconcile_volume_attachments", instance_uuids=instance_uuids,
                          dry_run=dry_run, attachments=attachments,
                          available_volume_ids=available_volume_ids)

    # -- API → conductor: assisted volume snapshots (1.6) ---------------------

    def can_snapshot(self):
        """False when ``[upgrade_levels] conductor`` pins us below 1.6 (API: 503)."""
        # TODO(remove at RPC 2.0): every conductor runs assisted snapshots.
        return self._client.can_send_version(SNAPSHOT_VERSION)

    def volume_snapshot_create(self, ctxt, *, instance_uuid, volume_id, create_info):
        """Cast: have the server's compute take the snapshot Cinder asked for."""
        self._client.prepare(version=SNAPSHOT_VERSION).cast(
            ctxt, "volume_snapshot_create", instance_uuid=instance_uuid,
            volume_id=volume_id, create_info=create_info)

    def volume_snapshot_delete(self, ctxt, *, instance_uuid, volume_id, snapshot_id,
                               delete_info):
        """Cast: have the server's compute merge the snapshot away."""
        self._client.prepare(version=SNAPSHOT_VERSION).cast(
            ctxt, "volume_snapshot_delete", instance_uuid=instance_uuid,
            volume_id=volume_id, snapshot_id=snapshot_id, delete_info=delete_info)

    # -- compute → conductor: persistence (calls, short timeouts) ------------

    def can_report_attach_status(self):
        """True when conductors persist a BDM's ``attach_status`` and fault (1.7)."""
        # TODO(remove at RPC 2.0): every conductor persists the attach status.
        return self._client.can_send_version(ATTACH_STATUS_VERSION)

    def can_finish_event_with_bdm_update(self):
        """True when ``bdm_update`` takes ``finish_event`` (1.8)."""
        # TODO(remove at RPC 2.0): every conductor finishes the event in bdm_update.
        return self._client.can_send_version(FINISH_EVENT_VERSION)

    def _call(self, ctxt, method, *, version=None, timeout=None, **kwargs):
        client, rpc_version = self._persistence_client()
        cctxt = client.prepare(version=version or rpc_version,
                               timeout=timeout or self._conf.rpc_response_timeout)
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
        """Call: save ``values``; with ``expected_status`` (1.7) only while the
        BDM's ``attach_status`` is still that (else nothing changes).

        ``finish_event`` (1.8; callers check ``can_finish_event_with_bdm_update``): the
        keyword arguments of an ``action_event_finish`` the conductor does
        next, whatever became of the save.
        """
        if finish_event is not None:
            return self._call(ctxt, "bdm_update", version=FINISH_EVENT_VERSION, bdm_uuid=bdm_uuid,
                              values=values, expected_status=expected_status,
                              finish_event=finish_event)
        if expected_status is not None:
            return self._call(ctxt, "bdm_update", bdm_uuid=bdm_uuid, values=values,
                              expected_status=expected_status)
        return self._call(ctxt, "bdm_update", bdm_uuid=bdm_uuid, values=values)

    def bdm_destroy(self, ctxt, *, bdm_uuid, values=None):
        """Call: soft delete; ``values`` (1.7: the status of a failed attach) in the same write."""
        if values:
            return self._call(ctxt, "bdm_destroy", bdm_uuid=bdm_uuid, values=values)
        return self._call(ctxt, "bdm_destroy", bdm_uuid=bdm_uuid)

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
        """Call (1.4): the live instances of ``host`` as dicts."""
        return self._call(ctxt, "instance_list_by_host", version="1.4", timeout=timeout,
                          host=host)

    def action_start(self, ctxt, *, instance_uuid, action, request_id):
        """Call (1.4): start an instance action for work the compute began itself."""
        return self._call(ctxt, "action_start", version="1.4", instance_uuid=instance_uuid,
                          action=action, request_id=request_id)


# Exceptions a caller can expect across the bus (re-raised as the same class).
RemoteError = messaging.RemoteError
MessagingTimeout = messaging.MessagingTimeout
