"""A small attach-and-boot storm with one fault injected in the middle.

Used by ``test_faults.py``: N attaches at 2.101 and M boots from volume go
through the load balancer from several threads while one component of the
cluster is killed or stopped, then brought back. What the storm checks
afterwards is what "lose nothing" means:

* every request either failed with a clear error (an HTTP error with a
  Nova fault body, or a connection the load balancer refused) or was
  accepted, and every accepted one ends done (attached / ACTIVE) or with
  its fault recorded (attachment ``error`` / server ``ERROR``): an accepted
  attach is never dropped, whatever died while it ran (the conductors
  recover it from its ``volume_requests`` row);
* no storm volume is left ``reserved``, ``attaching`` or ``detaching``;
* the reconciliation audit (``volume_attachment cleanup --all-servers
  --dry-run``) finds nothing to change: no BDM without a Cinder attachment,
  no attachment without a BDM;
* the work that failed during the fault succeeds when asked again (an
  attach whose answer left its outcome unknown, at 2.107: done then, its
  retry answers with the attachment).
"""

import concurrent.futures
import contextlib
import dataclasses
import json
import os
import time
import uuid

from tests.integration.cluster.conftest import (
    api_errors,
    audit,
    cluster_logs,
    log_lines,
    wait_active,
    wait_until,
)

STUCK = ("reserved", "attaching", "detaching")
# The cluster's [compute] attachment_reservation_timeout (cluster_config.py).
RESERVATION_TIMEOUT = 60
# What the audit must find none of after a storm: nothing to change, nothing in progress.
AUDITED = ("removed_bdms", "deleted_attachments", "finished", "rolled_back", "busy", "errors")
# Seconds an accepted request may take to settle once the fault is gone:
# past the cluster's [compute] attachment_reservation_timeout (60) and the
# conductors' [conductor] volume_request_grace (20) plus a recovery interval.
SETTLE_GRACE = 150
THREADS = 8
# The microversion at which a retried attach that was done answers 202 with the attachment.
IDEMPOTENT = "2.107"


def size():
    """(attaches, boots) per fault: 20 and 5 in the test tier.

    ``VOLUMESVC_FAULT_STORM=100x50`` runs the full storm of the issue (100
    attaches at 2.101 and 50 boots from volume per fault), the runs that
    doc/source/admin/cluster-faults.rst records; too long for every CI run.
    """
    raw = os.environ.get("VOLUMESVC_FAULT_STORM", "20x5")
    attaches, _, boots = raw.partition("x")
    return int(attaches), int(boots)


@dataclasses.dataclass
class Result:
    fault: str
    attaches: int
    boots: int
    failed: list = dataclasses.field(default_factory=list)
    errored: list = dataclasses.field(default_factory=list)
    # (kind, the fault's message) of each accepted request that ended in error.
    error_faults: list = dataclasses.field(default_factory=list)
    dropped: list = dataclasses.field(default_factory=list)
    recover_seconds: float = 0.0
    settled_at: float = 0.0
    storm_seconds: float = 0.0

    def line(self):
        return json.dumps({"fault": self.fault, "attaches": self.attaches,
                           "boots": self.boots, "requests_failed": len(self.failed),
                           "accepted_then_error": len(self.errored),
                           "accepted_then_dropped": len(self.dropped),
                           "recover_s": round(self.recover_seconds, 1),
                           "storm_s": round(self.storm_seconds, 1),
                           "failures": self.failed[:5],
                           "error_faults": sorted(set(self.error_faults))[:5]})


def _outcome_unknown(status):
    """An answer that does not say whether the request was carried out.

    No answer (the connection refused or reset) or a 5xx: the request may
    have been recorded before it failed (a commit whose answer the
    database's shutdown lost), so a retry may find it done. A 4xx was
    refused before anything was recorded.
    """
    return status is None or status >= 500


def _clear_error(status, body):
    """A refusal a client can act on: a Nova fault body (the API's or the load
    balancer's, aio/volumesvc_aio/haproxy.py), or the connection refused/reset."""
    if status is None:
        return True
    return isinstance(body, dict) and any(
        isinstance(v, dict) and v.get("message") for v in body.values())


def run(api, cluster, fault, inject, restore, *, attaches=None, boots=None, servers=None,
        fault_after=1.0):
    default_attaches, default_boots = size()
    attaches = default_attaches if attaches is None else attaches
    boots = default_boots if boots is None else boots
    # At most 10 storm volumes per server: a guest's PCI slots and vdX names run out near 25.
    servers = servers or max(4, -(-attaches // 10))
    tag = uuid.uuid4().hex[:6]
    api.image_id()
    targets = []
    for n in range(servers):
        status, body = api.boot(f"storm-{tag}-t{n}")
        assert status == 202, body
        targets.append(body["server"]["id"])
    # Boots on real QEMU slow down with their number on a 2-core machine.
    grace = SETTLE_GRACE + 4 * boots + attaches
    booted = []
    try:
        for server_id in targets:
            wait_active(api, server_id, cluster)
        volumes = [api.create_volume(f"storm-{tag}-v{n}") for n in range(attaches)]
        wait_until(lambda: all(api.volume_status(v)["status"] == "available" for v in volumes),
                   "storm volumes available", cluster=cluster)
        result = Result(fault, attaches, boots)
        jobs = [("attach", targets[n % servers], v) for n, v in enumerate(volumes)]
        jobs += [("boot", f"storm-{tag}-b{n}", None) for n in range(boots)]

        def send(job, version="2.101"):
            kind, target, volume_id = job
            if kind == "attach":
                status, body = api.attach(target, volume_id, version=version)
                return job, status, body, status == 202
            status, body = api.boot(target, image=True)
            return job, status, body, status == 202

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(send, job) for job in jobs[:len(jobs) // 2]]
            time.sleep(fault_after)
            inject()
            futures += [pool.submit(send, job) for job in jobs[len(jobs) // 2:]]
            answers = [f.result() for f in futures]
        restore()
        restored_at = time.monotonic()
        accepted_attaches, retry = [], []
        for job, status, body, ok in answers:
            if ok:
                (accepted_attaches if job[0] == "attach" else booted).append(
                    (job, body))
            else:
                assert _clear_error(status, body), (job, status, body)
                result.failed.append({"job": job[0], "status": status,
                                      "error": str(body)[:160]})
                retry.append((job, _outcome_unknown(status)))
        _settle(api, cluster, result, accepted_attaches, booted, grace=grace)
        result.recover_seconds = result.settled_at - restored_at
        # The work refused during the fault is done once it is gone.
        for job, unknown in retry:
            # A client that does not know whether its attach was done asks
            # again at 2.107: an attach that was (the database committed it,
            # its answer lost in the fault) answers 202 with the attachment.
            _, status, body, ok = send(job, IDEMPOTENT if unknown else "2.101")
            assert ok, (job, status, body, api_errors(cluster))
            if job[0] == "attach":
                accepted_attaches.append((job, body))
            else:
                booted.append((job, body))
        _settle(api, cluster, result, accepted_attaches, booted, grace=grace)
        result.storm_seconds = time.monotonic() - started
        # A re-run attach releases the reservation its dead run made; one the
        # dead run's Cinder call made after that (a slow cinder-api) goes
        # once it is stale, ``attachment_reservation_timeout`` later.
        deadline = time.monotonic() + RESERVATION_TIMEOUT + 60
        while (stuck := _stuck(api, volumes)) and time.monotonic() < deadline:
            time.sleep(2)
        assert not stuck, (stuck, log_lines(cluster, [v for v, _, _ in stuck]))
        report = audit(cluster)
        summary = report["summary"]
        assert {k: summary[k] for k in AUDITED} == dict.fromkeys(AUDITED, 0), (
            summary, _changes(report))
        _bdms_match_attachments(api, targets, volumes)
    finally:
        # Even after a failed check: the next fault's storm must not share
        # the machine with this one's guests.
        for server_id in targets + [body["server"]["id"] for _, body in booted]:
            with contextlib.suppress(Exception):
                api.delete_server(server_id)
    print(f"cluster-fault-result: {result.line()}", flush=True)
    return result


def _stuck(api, volumes):
    """(volume, status, attachments) of the volumes still in the middle of something."""
    stuck = []
    for volume_id in volumes:
        volume = api.volume_status(volume_id)
        if volume["status"] in STUCK:
            stuck.append((volume_id, volume["status"], volume.get("attachments")))
    return stuck


def _changes(report):
    """The audit's servers that have something to change or in progress."""
    return json.dumps([server for server in report.get("servers", [])
                       if any(server.get(key) for key in AUDITED)], default=str)[:6000]


def _settle(api, cluster, result, attaches, boots, *, grace=SETTLE_GRACE):
    """Wait until each accepted attach and boot is done or failed with its fault.

    An accepted attach that has neither after ``grace`` seconds fails the
    storm: stuck if it left something, dropped (counted in ``result``, then
    the assertion) if it left no trace, which the conductors' recovery of
    accepted requests rules out (doc/source/admin/cluster-faults.rst).
    """
    pending = {(server_id, volume_id) for (_, server_id, volume_id), _ in attaches}
    pending_boots = {body["server"]["id"] for _, body in boots}
    deadline = time.monotonic() + grace
    result.settled_at = time.monotonic()
    while (pending or pending_boots) and time.monotonic() < deadline:
        for server_id, volume_id in list(pending):
            entry = next((a for a in api.attachments(server_id)
                          if a["volumeId"] == volume_id), None)
            if entry and entry.get("status") == "attached":
                pending.discard((server_id, volume_id))
                result.settled_at = time.monotonic()
            elif entry and entry.get("status") == "error":
                assert entry.get("fault"), entry
                result.errored.append(volume_id)
                result.error_faults.append(("attach", entry["fault"]["message"][:160]))
                pending.discard((server_id, volume_id))
                result.settled_at = time.monotonic()
        for server_id in list(pending_boots):
            server = api.server(server_id)
            if server and server["status"] == "ACTIVE":
                pending_boots.discard(server_id)
                result.settled_at = time.monotonic()
            elif server and server["status"] == "ERROR":
                assert server.get("fault", {}).get("message"), server
                result.errored.append(server_id)
                result.error_faults.append(("boot", server["fault"]["message"][:160]))
                pending_boots.discard(server_id)
                result.settled_at = time.monotonic()
        time.sleep(2)
    assert not pending_boots, (f"boots neither ACTIVE nor ERROR after {grace}s: "
                               f"{pending_boots}\n{cluster_logs(cluster)}")
    for server_id, volume_id in pending:
        entry = next((a for a in api.attachments(server_id) if a["volumeId"] == volume_id),
                     None)
        assert entry is None, (f"attach of {volume_id} neither done nor failed after "
                               f"{grace}s: {entry}\n{cluster_logs(cluster)}")
        result.dropped.append(("attach", server_id, volume_id))
    assert not result.dropped, (f"accepted attaches dropped (no BDM, no fault after "
                                f"{grace}s): {result.line()}\n{result.dropped}\n"
                                + log_lines(cluster, [v for _, _, v in result.dropped]))


def _bdms_match_attachments(api, servers, volumes):
    """For every storm volume: a BDM on a server iff Cinder has its attachment."""
    bdms = {(s, a["volumeId"]) for s in servers for a in api.attachments(s)
            if a.get("status") == "attached"}
    for volume_id in volumes:
        cinder = {(a["instance"], volume_id) for a in api.cinder_attachments(volume_id)}
        mine = {(s, v) for s, v in bdms if v == volume_id}
        assert cinder == mine, (volume_id, cinder, mine)
