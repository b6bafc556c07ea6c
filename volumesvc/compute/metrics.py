"""The compute's own Prometheus metrics, on top of the RPC ones (``common/metrics.py``).

Why here and not spread over the compute's modules: the workflows get one
hook each (``ComputeReporter.event`` times every instance-action event,
the reconciler's ``run`` is wrapped once), and the Cinder adapter and the
virt driver are wrapped whole by ``cmd/compute.py``. The workflow code stays
as it is.
"""

import time

import prometheus_client as prom

from volumesvc.common import metrics as common_metrics

OPERATION_DURATION = "volumesvc_compute_operation_duration_seconds"
CINDER_CALL_DURATION = "volumesvc_compute_cinder_call_duration_seconds"
LIBVIRT_CALL_DURATION = "volumesvc_compute_libvirt_call_duration_seconds"
RECONCILE_REMOVALS = "volumesvc_compute_reconcile_removals"

# The operation label of a reconciliation of one server.
RECONCILE = "reconcile"

# What a reconciliation removed, by the Report list it is in (compute/reconcile.py).
REMOVAL_KINDS = {
    "removed_bdms": "bdm",
    "deleted_attachments": "cinder_attachment",
    "rolled_back": "rolled_back_attach",
}


def operation_of(event: str) -> str:
    """The operation label of instance-action event ``compute_attach_volume``: attach_volume."""
    return event.removeprefix("compute_")


class ComputeMetrics(common_metrics.ServiceMetrics):
    """RPC handling plus volume operations, Cinder and libvirt calls, reconciliation."""

    def __init__(self):
        super().__init__()
        self.operation_duration = prom.Histogram(
            OPERATION_DURATION,
            "Duration of the compute's part of an operation (attach_volume, detach_volume, "
            "extend_volume, build_and_run_instance..., reconcile) by result: error when it "
            "failed (and was rolled back), success otherwise.",
            ["operation", "result"], buckets=common_metrics.BUCKETS, registry=self.registry)
        self.cinder_calls = prom.Histogram(
            CINDER_CALL_DURATION,
            "Latency of each call of the compute to Cinder, by adapter method and result.",
            ["call", "result"], buckets=common_metrics.BUCKETS, registry=self.registry)
        self.libvirt_calls = prom.Histogram(
            LIBVIRT_CALL_DURATION,
            "Latency of each call of the compute into its virt driver (libvirt, and the "
            "volume connector it drives), by driver method and result.",
            ["call", "result"], buckets=common_metrics.BUCKETS, registry=self.registry)
        self.reconcile_removals = prom.Counter(
            RECONCILE_REMOVALS,
            "What reconciliations of volume attachments removed, by kind: bdm (a BDM "
            "Cinder no longer backs), cinder_attachment (one no BDM uses), "
            "rolled_back_attach (an interrupted attach undone). Dry runs are not counted.",
            ["kind"], registry=self.registry)

    def families(self) -> tuple[str, ...]:
        return super().families() + (OPERATION_DURATION, CINDER_CALL_DURATION,
                                     LIBVIRT_CALL_DURATION, RECONCILE_REMOVALS)

    def operation_done(self, event: str, result: str, started: float) -> None:
        """One instance-action ``event`` finished with ``result`` (monotonic ``started``)."""
        self.operation_duration.labels(operation=operation_of(event), result=result).observe(
            time.monotonic() - started)

    def timed_cinder(self, cinder):
        return common_metrics.Timed(cinder, self.cinder_calls, "cinder")

    def timed_driver(self, driver):
        return common_metrics.Timed(driver, self.libvirt_calls, "libvirt")

    def reconciled(self, report, started: float) -> None:
        """One reconciliation of one server ended with ``report`` (monotonic ``started``).

        Called by the reconciler's entry point (``compute/reconcile_runner.py``)
        after each server, so what is counted is visible where it runs.
        """
        result = common_metrics.SUCCESS if not report.errors else common_metrics.ERROR
        if not report.dry_run:
            for field, kind in REMOVAL_KINDS.items():
                if getattr(report, field):
                    self.reconcile_removals.labels(kind=kind).inc(len(getattr(report, field)))
        self.operation_duration.labels(operation=RECONCILE, result=result).observe(
            time.monotonic() - started)

    def reconcile_failed(self, started: float) -> None:
        """One reconciliation of one server raised (monotonic ``started``)."""
        self.operation_duration.labels(operation=RECONCILE, result=common_metrics.ERROR).observe(
            time.monotonic() - started)
