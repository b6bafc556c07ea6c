"""Client side of the compute RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree):

* 1.0 - Initial version: ping, build_and_run_instance, terminate_instance,
        reboot_instance.
* 1.1 - reserve_block_device_name, attach_volume, detach_volume,
        get_domain_xml.
* 1.2 - attach_volume takes ``multiattach`` (saves the compute a Cinder read).
* 1.3 - (reserved for the extend-completion work; merged separately).
* 1.4 - reconcile_volume_attachments (dangling BDMs and Cinder attachments
        of given servers, optionally from one listing made by the caller).
"""

from volumesvc import rpc

TOPIC = "compute"
VERSION = "1.4"


class ComputeAPI:
    """What conductors (and, for reads, the API) may ask a compute host.

    Each method names the host it is sent to; keyword-only arguments after
    the context.
    """

    def __init__(self, conf, transport):
        self._conf = conf
        self._client = rpc.get_client(
            transport, conf.compute.topic, version=VERSION,
            version_cap=conf.upgrade_levels.compute)

    def _prepare(self, host, version, **kwargs):
        return self._client.prepare(server=host, version=version, **kwargs)

    def ping(self, ctxt, *, host, timeout=None):
        """Call: return the host name and its capabilities (used by operators)."""
        cctxt = self._prepare(host, "1.0", timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "ping")

    def build_and_run_instance(self, ctxt, *, host, instance, bdms, request_spec):
        """Cast: create/attach the volumes, define and start the domain."""
        self._prepare(host, "1.0").cast(
            ctxt, "build_and_run_instance", instance=instance, bdms=bdms,
            request_spec=request_spec)

    def terminate_instance(self, ctxt, *, host, instance, bdms):
        """Cast: destroy the domain, release the volumes, delete the record."""
        self._prepare(host, "1.0").cast(
            ctxt, "terminate_instance", instance=instance, bdms=bdms)

    def reboot_instance(self, ctxt, *, host, instance, reboot_type):
        """Cast: SOFT or HARD reboot."""
        self._prepare(host, "1.0").cast(
            ctxt, "reboot_instance", instance=instance, reboot_type=reboot_type)

    def reserve_block_device_name(self, ctxt, *, host, instance, volume_id, device=None,
                                  disk_bus=None, device_type=None, tag=None,
                                  multiattach=False, delete_on_termination=False):
        """Call: pick the device name and create the BDM; returns the BDM dict.

        A call with ``long_rpc_timeout`` and the call monitor (the compute
        heartbeats while it waits for its per-instance lock), as Nova does.
        """
        cctxt = self._prepare(host, "1.1", timeout=self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "reserve_block_device_name", instance=instance,
                          volume_id=volume_id, device=device, disk_bus=disk_bus,
                          device_type=device_type, tag=tag, multiattach=multiattach,
                          delete_on_termination=delete_on_termination)

    def attach_volume(self, ctxt, *, host, instance, bdm, multiattach=None):
        """Cast: connect the volume, attach the disk, complete the attachment."""
        kwargs = {"instance": instance, "bdm": bdm}
        version = "1.1"
        if multiattach is not None and self._client.can_send_version("1.2"):
            version, kwargs["multiattach"] = "1.2", multiattach
        self._prepare(host, version).cast(ctxt, "attach_volume", **kwargs)

    def detach_volume(self, ctxt, *, host, instance, bdm, attachment_id):
        """Cast: detach the disk and delete the Cinder attachment."""
        self._prepare(host, "1.1").cast(ctxt, "detach_volume", instance=instance, bdm=bdm,
                                        attachment_id=attachment_id)

    def get_domain_xml(self, ctxt, *, host, instance_uuid, timeout=None):
        """Call: the live libvirt XML of the instance's domain (diagnostics)."""
        cctxt = self._prepare(host, "1.1",
                              timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "get_domain_xml", instance_uuid=instance_uuid)

    def reconcile_volume_attachments(self, ctxt, *, host, instances, dry_run=False,
                                     attachments=None, available_volume_ids=None,
                                     timeout=None):
        """Call: reconcile the servers' BDMs with Cinder; one report dict per server.

        A call (the operator command prints the reports) with
        ``long_rpc_timeout`` and the call monitor: a batch waits for each
        server's instance lock in turn.
        """
        cctxt = self._prepare(host, "1.4", timeout=timeout or self._conf.long_rpc_timeout,
                              call_monitor_timeout=self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "reconcile_volume_attachments", instances=instances,
                          dry_run=dry_run, attachments=attachments,
                          available_volume_ids=available_volume_ids)
