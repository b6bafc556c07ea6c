"""Client side of the compute RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree; when and how:
``doc/source/contributor/versions.rst``):

* 1.0 - First release: ping, build_and_run_instance, terminate_instance,
        reboot_instance, attach_volume, detach_volume, get_domain_xml,
        get_console_output, external_instance_event, reconcile_volume_attachments,
        stop_instance, start_instance, shelve_instance,
        shelve_offload_instance, unshelve_instance, volume_snapshot_create,
        volume_snapshot_delete, swap_volume, rebuild_instance.
* 1.1 - Live migration: live_migration (cast to the source),
        pre_live_migration, rollback_live_migration_at_destination and
        post_live_migration_at_destination (calls to the destination),
        live_migration_control (cast to the source: abort, force-complete).
* 1.2 - Cold migration and resize (casts): resize_instance (to the source),
        finish_resize and revert_resize (to the destination),
        finish_revert_resize and confirm_resize (to the source); evacuation:
        evacuate_instance (cast to the destination).
"""

import oslo_messaging as messaging

from volumesvc import exception, rpc

TOPIC = "compute"
VERSION = "1.2"
# What a method of the first release is sent as (a newer method names its own).
BASE_VERSION = "1.0"
LIVE_MIGRATION_VERSION = "1.1"
RESIZE_VERSION = "1.2"
EVACUATE_VERSION = "1.2"
# ``auto_version_cap`` not given (None is a resolved cap: send the newest).
AUTO_UNRESOLVED = object()


class ComputeAPI:
    """What conductors (and, for reads, the API) may ask a compute host.

    Each method names the host it is sent to; keyword-only arguments after
    the context.
    """

    def __init__(self, conf, transport, *, auto_version_cap=AUTO_UNRESOLVED):
        """``auto_version_cap``: what ``[upgrade_levels] compute = auto`` means now.

        The caller reads it off the computes' service versions
        (``objects.service.compute_rpc_version_cap``): this package never
        touches the database.
        """
        self._conf = conf
        cap = conf.upgrade_levels.compute
        if cap == "auto":
            if auto_version_cap is AUTO_UNRESOLVED:
                raise ValueError("[upgrade_levels] compute = auto needs the database")
            cap = auto_version_cap
        self._client = rpc.get_client(
            transport, conf.compute.topic, version=BASE_VERSION, version_cap=cap)

    def _prepare(self, host, version=BASE_VERSION, **kwargs):
        """A call context for ``host``; a method newer than 1.0 passes its ``version``.

        ``[upgrade_levels] compute`` caps what may be sent: a message above
        the cap is refused here (``RPCVersionCapError``), never sent to a
        compute that would not understand it.
        """
        return self._client.prepare(server=host, version=version, **kwargs)

    def ping(self, ctxt, *, host, timeout=None):
        """Call: return the host name and its capabilities (used by operators)."""
        cctxt = self._prepare(host, timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "ping")

    def build_and_run_instance(self, ctxt, *, host, instance, bdms, request_spec):
        """Cast: create/attach the volumes, define and start the domain."""
        self._prepare(host).cast(
            ctxt, "build_and_run_instance", instance=instance, bdms=bdms,
            request_spec=request_spec)

    def terminate_instance(self, ctxt, *, host, instance, bdms):
        """Cast: destroy the domain, release the volumes, delete the record."""
        self._prepare(host).cast(
            ctxt, "terminate_instance", instance=instance, bdms=bdms)

    def reboot_instance(self, ctxt, *, host, instance, reboot_type):
        """Cast: SOFT or HARD reboot."""
        self._prepare(host).cast(
            ctxt, "reboot_instance", instance=instance, reboot_type=reboot_type)

    def attach_volume(self, ctxt, *, host, instance, bdm, multiattach=None,
                      event_started=False, recovered=False):
        """Cast: connect the volume, attach the disk, complete the attachment.

        ``bdm``: made by the conductor, with its device name and Cinder
        attachment id. ``multiattach``: the volume's flag as the caller read it (None: the
        compute asks Cinder). ``event_started``: the caller started
        ``compute_attach_volume`` already. ``recovered``: a re-run of an
        attach whose conductor died; the compute checks the BDM again before
        it does anything.
        """
        self._prepare(host).cast(ctxt, "attach_volume", instance=instance, bdm=bdm,
                                 multiattach=multiattach, event_started=event_started,
                                 recovered=recovered)

    def detach_volume(self, ctxt, *, host, instance, bdm, attachment_id, recovered=False):
        """Cast: detach the disk and delete the Cinder attachment.

        ``recovered``: as for attach.
        """
        self._prepare(host).cast(ctxt, "detach_volume", instance=instance, bdm=bdm,
                                 attachment_id=attachment_id, recovered=recovered)

    def get_domain_xml(self, ctxt, *, host, instance_uuid, timeout=None):
        """Call: the live libvirt XML of the instance's domain (diagnostics)."""
        cctxt = self._prepare(host, timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "get_domain_xml", instance_uuid=instance_uuid)

    def get_console_output(self, ctxt, *, host, instance, tail_length=None, timeout=None):
        """Call: the guest's console output, its last ``tail_length`` lines (all if None).

        A read answered by the compute alone, so the API calls it directly
        (as Nova's does), within ``rpc_response_timeout``: a compute that does
        not answer is a 503, not a hung request.
        """
        cctxt = self._prepare(host, timeout=timeout or self._conf.rpc_response_timeout)
        try:
            return cctxt.call(ctxt, "get_console_output", instance=instance,
                              tail_length=tail_length)
        except messaging.MessagingTimeout as exc:
            raise exception.ServiceUnavailable(
                reason=f"the compute {host} did not answer within "
                       f"{timeout or self._conf.rpc_response_timeout} s") from exc

    def external_instance_event(self, ctxt, *, host, instance, events):
        """Cast: handle external events (already accepted by the API) for one instance.

        ``events`` are dicts ``{name, tag, status, completion}``; see
        ``compute/events.py``.
        """
        self._prepare(host).cast(ctxt, "external_instance_event",
                                 instance=instance, events=events)

    def reconcile_volume_attachments(self, ctxt, *, host, instances, dry_run=False,
                                     attachments=None, available_volume_ids=None,
                                     timeout=None):
        """Call: reconcile the servers' BDMs with Cinder; one report dict per server.

        A call (the operator command prints the reports) with
        ``long_rpc_timeout`` and the call monitor: a batch waits for each
        server's instance lock in turn.
        """
        cctxt = self._prepare(host, timeout=timeout or self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "reconcile_volume_attachments", instances=instances,
                          dry_run=dry_run, attachments=attachments,
                          available_volume_ids=available_volume_ids)

    # -- lifecycle: casts, progress and failures reported through the DB --

    def _lifecycle_cast(self, ctxt, host, method, **kwargs):
        self._prepare(host).cast(ctxt, method, **kwargs)

    def stop_instance(self, ctxt, *, host, instance):
        """Cast: power the domain off; it stays defined (attach while stopped)."""
        self._lifecycle_cast(ctxt, host, "stop_instance", instance=instance)

    def start_instance(self, ctxt, *, host, instance):
        """Cast: redefine the domain from the BDMs and start it."""
        self._lifecycle_cast(ctxt, host, "start_instance", instance=instance)

    def shelve_instance(self, ctxt, *, host, instance, offload):
        """Cast: power off and mark shelved; ``offload`` goes on to offload at once."""
        self._lifecycle_cast(ctxt, host, "shelve_instance", instance=instance,
                             offload=offload)

    def shelve_offload_instance(self, ctxt, *, host, instance):
        """Cast: destroy the domain, disconnect every volume, clear the host."""
        self._lifecycle_cast(ctxt, host, "shelve_offload_instance", instance=instance)

    def unshelve_instance(self, ctxt, *, host, instance, bdms):
        """Cast: connect every volume on ``host``, define and start the domain."""
        self._lifecycle_cast(ctxt, host, "unshelve_instance", instance=instance, bdms=bdms)

    def volume_snapshot_create(self, ctxt, *, host, instance, volume_id, create_info):
        """Cast: switch the volume's disk to the new qcow2 overlay; report to Cinder."""
        self._prepare(host).cast(ctxt, "volume_snapshot_create", instance=instance,
                                 volume_id=volume_id, create_info=create_info)

    def volume_snapshot_delete(self, ctxt, *, host, instance, volume_id, snapshot_id,
                               delete_info):
        """Cast: merge the snapshot's file out of the disk chain; report to Cinder."""
        self._prepare(host).cast(ctxt, "volume_snapshot_delete", instance=instance,
                                 volume_id=volume_id, snapshot_id=snapshot_id,
                                 delete_info=delete_info)

    def swap_volume(self, ctxt, *, host, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        """Cast: copy ``old_volume_id``'s disk to the new volume and move the attachment."""
        self._prepare(host).cast(
            ctxt, "swap_volume", instance=instance, old_volume_id=old_volume_id,
            new_volume_id=new_volume_id, new_attachment_id=new_attachment_id)

    def rebuild_instance(self, ctxt, *, host, instance, image_ref, reimage,
                         preserve_ephemeral=False):
        """Cast: recreate the domain from the root volume; ``reimage`` rewrites it first.

        ``reimage``: Cinder's os-reimage of ``image_ref`` onto the root volume
        and the wait for its ``volume-reimaged`` event come before the new
        domain (API 2.93 with a new image).
        """
        self._prepare(host).cast(
            ctxt, "rebuild_instance", instance=instance, image_ref=image_ref,
            reimage=reimage, preserve_ephemeral=preserve_ephemeral)

    # -- live migration (compute/live_migration.py) --------------------------

    def live_migration(self, ctxt, *, host, instance, migration):
        """Cast to the source: move the running server to ``migration['dest_compute']``.

        The source compute owns the move from here: the destination's
        attachments and connections, libvirt's migration, and the switch
        of the records or the rollback.
        """
        self._prepare(host, version=LIVE_MIGRATION_VERSION).cast(
            ctxt, "live_migration", instance=instance, migration=migration)

    def pre_live_migration(self, ctxt, *, host, instance, bdms, migration, timeout=None):
        """Call the destination: attach (a Cinder attachment with its connector,
        recorded in ``migration``) and connect the volumes of ``bdms``, and prepare
        the guest's files; returns what the source needs (``volumes``: volume id →
        connection info, ``attachments``: volume id → attachment id, the URI to
        migrate to, the console log path)."""
        cctxt = self._prepare(host, version=LIVE_MIGRATION_VERSION,
                              timeout=timeout or self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "pre_live_migration", instance=instance, bdms=bdms,
                          migration=migration)

    def rollback_live_migration_at_destination(self, ctxt, *, host, instance, volumes,
                                               source_instance_dir=None, timeout=None):
        """Call the destination: drop the guest if it arrived, disconnect ``volumes``
        (volume id → connection info) and their secrets, remove the guest's files
        (unless they are at ``source_instance_dir``, the source's own)."""
        cctxt = self._prepare(host, version=LIVE_MIGRATION_VERSION,
                              timeout=timeout or self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "rollback_live_migration_at_destination",
                          instance=instance, volumes=volumes,
                          source_instance_dir=source_instance_dir)

    def post_live_migration_at_destination(self, ctxt, *, host, instance, timeout=None):
        """Call the destination: the guest is its now (resumed if it was paused
        to complete the move); returns its power state."""
        cctxt = self._prepare(host, version=LIVE_MIGRATION_VERSION,
                              timeout=timeout or self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "post_live_migration_at_destination", instance=instance)

    def live_migration_control(self, ctxt, *, host, instance_uuid, migration_id, request):
        """Cast to the source: ``request`` (``abort``/``force-complete``) for a running move.

        The request is in the migration's row already; this only wakes the
        source's monitor sooner than its next read of the row.
        """
        self._prepare(host, version=LIVE_MIGRATION_VERSION).cast(
            ctxt, "live_migration_control", instance_uuid=instance_uuid,
            migration_id=migration_id, request=request)

    # -- cold migration and resize (compute/resize.py) --------------------------

    def _resize_cast(self, ctxt, host, method, **kwargs):
        self._prepare(host, version=RESIZE_VERSION).cast(ctxt, method, **kwargs)

    def resize_instance(self, ctxt, *, host, instance, migration):
        """Cast to the source: stop the guest, disconnect its volumes, then cast
        the destination's ``finish_resize``."""
        self._resize_cast(ctxt, host, "resize_instance", instance=instance,
                          migration=migration)

    def finish_resize(self, ctxt, *, host, instance, migration):
        """Cast to the destination: connect the volumes, start the guest with the new
        flavor, make the server ``RESIZED`` there (or hand it back on failure)."""
        self._resize_cast(ctxt, host, "finish_resize", instance=instance,
                          migration=migration)

    def revert_resize(self, ctxt, *, host, instance, migration):
        """Cast to the destination: release the server and hand it back to the source."""
        self._resize_cast(ctxt, host, "revert_resize", instance=instance,
                          migration=migration)

    def finish_revert_resize(self, ctxt, *, host, instance, migration, outcome):
        """Cast to the source: start the server again with its old flavor; the
        migration ends ``outcome`` (``reverted``, or ``error`` after a failed move)."""
        self._resize_cast(ctxt, host, "finish_revert_resize", instance=instance,
                          migration=migration, outcome=outcome)

    def confirm_resize(self, ctxt, *, host, instance, migration):
        """Cast to the source: the move was confirmed; remove the server's files there."""
        self._resize_cast(ctxt, host, "confirm_resize", instance=instance,
                          migration=migration)

    # -- evacuation (compute/evacuate.py) ----------------------------------------

    def evacuate_instance(self, ctxt, *, host, instance, migration, target_state=None):
        """Cast to the destination: take over the server of a dead host.

        ``migration``: the evacuation's row (``pre-migrating``);
        ``target_state``: the vm_state to end in (None: the one it had).
        """
        self._prepare(host, version=EVACUATE_VERSION).cast(
            ctxt, "evacuate_instance", instance=instance, migration=migration,
            target_state=target_state)
