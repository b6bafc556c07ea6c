"""Concurrent attaches of one volume against the all-in-one and the real Cinder.

Not a timed test: each round sends two attaches of one volume to two
servers from two threads released together (a barrier), then checks the
outcome the multiattach issue asks for:

* a multiattach volume (at every ``--microversions`` entry, 2.60 and 2.101
  by default) ends attached to both servers: two 200s (202s from 2.101),
  two Cinder attachments, ``in-use``;
* a single-attach volume (``--single``, at 2.100 and 2.101) ends attached
  to exactly one: a 200 and a 400 at 2.100; at 2.101 two 202s and an
  ``Error`` event in the loser's instance actions, or a 202 and the API's
  synchronous 400 ("already attached") when the winner's BDM was there first;
* afterwards no volume is ``reserved`` or ``attaching`` and every BDM
  (os-volume_attachments at 2.89) has its Cinder attachment.

Then it detaches everything and deletes the volume. Usage, against a
running all-in-one (``volumesvc-aio --computes 2 ...``)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.multiattach_race \\
        --compute-url URL --volume-url URL

or with no URLs it starts its own two-compute all-in-one (one compute
without multiattach) and stops it afterwards. Exit status 0 only if every
round passed; the summary table goes to stdout (see benchmarks/README.md).
"""

import argparse
import contextlib
import functools
import json
import os
import sys
import time
import urllib.error
import urllib.request

from benchmarks.lib.allinone import wait_for
from tests.fixtures.together import run_together

TOKEN = "admin:admin"
VOLUME_VERSION = "3.67"
MULTI_TYPE = "race-multiattach"
TIMEOUT = 90.0


class Client:
    """The two REST endpoints, plain urllib with explicit timeouts."""

    def __init__(self, compute_url, volume_url):
        self.compute_url = compute_url.rstrip("/")
        self.volume_url = volume_url.rstrip("/")

    @staticmethod
    def _call(url, method, body, headers):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={
            "X-Auth-Token": TOKEN, "Accept": "application/json",
            "Content-Type": "application/json", **headers})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw) if raw else None
            except ValueError:
                return exc.code, raw.decode(errors="replace")

    def compute(self, method, path, body=None, version="2.60"):
        return self._call(self.compute_url + path, method, body,
                          {"OpenStack-API-Version": f"compute {version}"})

    def volume(self, method, path, body=None):
        return self._call(self.volume_url + path, method, body,
                          {"OpenStack-API-Version": f"volume {VOLUME_VERSION}"})


def wait(predicate, what, timeout=TIMEOUT):
    """``predicate()``'s first truthy value; TimeoutError after ``timeout`` s."""
    return wait_for(predicate, timeout, what=what)


def volume_of(client, volume_id):
    status, body = client.volume("GET", f"/volumes/{volume_id}")
    return body["volume"] if status == 200 else None


def ensure_multiattach_type(client):
    _, body = client.volume("GET", "/types")
    for vtype in body["volume_types"]:
        if vtype["name"] == MULTI_TYPE:
            return
    status, body = client.volume("POST", "/types", {"volume_type": {"name": MULTI_TYPE}})
    assert status == 200, body
    client.volume("POST", f"/types/{body['volume_type']['id']}/extra_specs",
                  {"extra_specs": {"multiattach": "<is> True"}})


def create_volume(client, multiattach):
    spec = {"size": 1, "name": "race"}
    if multiattach:
        spec["volume_type"] = MULTI_TYPE
    status, body = client.volume("POST", "/volumes", {"volume": spec})
    assert status == 202, body
    volume_id = body["volume"]["id"]
    wait(lambda: (volume_of(client, volume_id) or {}).get("status") == "available",
         f"volume {volume_id} available")
    return volume_id


def boot_servers(client, count):
    """Servers with a multiattach blank root: they can only land on a capable host."""
    ids = []
    for n in range(count):
        status, body = client.compute("POST", "/servers", {"server": {
            "name": f"race-{n}", "flavorRef": "42", "networks": "none",
            "block_device_mapping_v2": [{
                "source_type": "blank", "destination_type": "volume", "boot_index": 0,
                "volume_size": 1, "volume_type": MULTI_TYPE,
                "delete_on_termination": True}]}}, version="2.67")
        assert status == 202, body
        ids.append(body["server"]["id"])
    for server_id in ids:
        wait(lambda s=server_id: client.compute("GET", f"/servers/{s}")[1]["server"]["status"]
             in ("ACTIVE", "ERROR"), f"server {server_id} built")
        server = client.compute("GET", f"/servers/{server_id}")[1]["server"]
        assert server["status"] == "ACTIVE", server
    return ids


def attach_together(client, servers, volume_id, version):
    return run_together([functools.partial(
        client.compute, "POST", f"/servers/{server_id}/os-volume_attachments",
        {"volumeAttachment": {"volumeId": volume_id}}, version=version)
        for server_id in servers], timeout=TIMEOUT)


def bdm_attachment_ids(client, server_id, volume_id):
    _, body = client.compute("GET", f"/servers/{server_id}/os-volume_attachments",
                             version="2.89")
    return [a["attachment_id"] for a in body["volumeAttachments"]
            if a["volumeId"] == volume_id]


def _settled(client, volume_id, attached):
    volume = volume_of(client, volume_id)
    if volume and volume["status"] not in ("reserved", "attaching") \
            and len(volume["attachments"]) == attached:
        return volume
    return None


def error_event(client, server_id, volume_id):
    _, body = client.compute("GET", f"/servers/{server_id}/os-instance-actions",
                             version="2.84")
    for action in body["instanceActions"]:
        if action["action"] != "attach_volume":
            continue
        _, detail = client.compute(
            "GET", f"/servers/{server_id}/os-instance-actions/{action['request_id']}",
            version="2.84")
        for event in detail["instanceAction"]["events"]:
            if event["result"] == "Error" and volume_id in (event.get("details") or ""):
                return event
    return None


def check_round(client, servers, volume_id, version, multiattach):
    """One race; returns (ok, statuses, seconds to settle, problem or '')."""
    started = time.monotonic()
    results = attach_together(client, servers, volume_id, version)
    statuses = [status for status, _ in results]
    async_ = tuple(int(p) for p in version.split(".")) >= (2, 101)
    if multiattach:
        expected = [202, 202] if async_ else [200, 200]
        if statuses != expected:
            return False, statuses, 0.0, f"statuses {statuses}: {results}"
        volume = wait(lambda: _settled(client, volume_id, 2), "two attachments, in-use")
    else:
        # NOTE: the loser is refused by the API's synchronous check ("already
        # attached", 400 at every version) when the winner's BDM exists by
        # then, else by Cinder in the conductor (400 below 2.101, an Error
        # event from 2.101). Both are the contract's answer.
        allowed = ([202, 202], [202, 400]) if async_ else ([200, 400],)
        if sorted(statuses) not in allowed:
            return False, statuses, 0.0, f"statuses {statuses}: {results}"
        refused = [body for status, body in results if status == 400]
        if refused and "already attached" not in refused[0]["badRequest"]["message"] \
                and async_:
            return False, statuses, 0.0, f"unexpected refusal {refused[0]}"
        volume = wait(lambda: _settled(client, volume_id, 1), "one attachment, in-use")
    elapsed = time.monotonic() - started
    if volume["status"] != "in-use":
        return False, statuses, elapsed, f"volume is {volume['status']}"
    cinder_ids = {a["attachment_id"] for a in volume["attachments"]}
    bdm_ids = []
    for server_id in servers:
        ids = wait(lambda s=server_id: (bdm_attachment_ids(client, s, volume_id),),
                   "BDM listing")[0]
        bdm_ids += ids
    if set(bdm_ids) != cinder_ids or len(bdm_ids) != len(cinder_ids):
        return False, statuses, elapsed, f"BDMs {bdm_ids} vs Cinder {sorted(cinder_ids)}"
    if not multiattach and async_ and statuses == [202, 202]:
        holders = {a["server_id"] for a in volume["attachments"]}
        (loser,) = [s for s in servers if s not in holders]
        wait(lambda: error_event(client, loser, volume_id), "an Error event for the loser")
    return True, statuses, elapsed, ""


def detach_all(client, servers, volume_id):
    for server_id in servers:
        status, _ = client.compute(
            "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}")
        if status == 202:
            wait(lambda s=server_id: not bdm_attachment_ids(client, s, volume_id),
                 "detached")
    wait(lambda: (volume_of(client, volume_id) or {}).get("status") == "available",
         "volume available again")
    client.volume("DELETE", f"/volumes/{volume_id}")


def run(client, rounds, microversions, single_versions):
    ensure_multiattach_type(client)
    servers = boot_servers(client, 2)
    cases = [(v, True) for v in microversions] + [(v, False) for v in single_versions]
    rows, failures = [], 0
    try:
        for round_no in range(1, rounds + 1):
            for version, multiattach in cases:
                volume_id = create_volume(client, multiattach)
                try:
                    ok, statuses, seconds, problem = check_round(
                        client, servers, volume_id, version, multiattach)
                finally:
                    with contextlib.suppress(TimeoutError):
                        detach_all(client, servers, volume_id)
                failures += not ok
                rows.append((round_no, version, "multi" if multiattach else "single",
                             statuses, seconds, "ok" if ok else problem))
                print(f"round {round_no:2d} {version:>5} {rows[-1][2]:6} "
                      f"{statuses} {seconds:5.1f}s {rows[-1][5]}", flush=True)
    finally:
        for server_id in servers:
            client.compute("DELETE", f"/servers/{server_id}")
    return rows, failures


def summary(rows):
    lines = ["| case | rounds | passed | statuses | settle s (max) |", "|---|---|---|---|---|"]
    cases = {}
    for _round, version, kind, statuses, seconds, result in rows:
        cases.setdefault((version, kind), []).append((statuses, seconds, result))
    for (version, kind), items in cases.items():
        seen = sorted({str(s) for s, _, _ in items})
        lines.append(f"| {kind} @ {version} | {len(items)} | "
                     f"{sum(r == 'ok' for _, _, r in items)} | {', '.join(seen)} | "
                     f"{max(s for _, s, _ in items):.1f} |")
    return "\n".join(lines)


def count_retries(state_dir):
    """How often the conductor retried a refused multiattach reservation (its log)."""
    path = os.path.join(state_dir, "logs", "volumesvc-conductor.log")
    with open(path, errors="replace") as f:
        return sum("Cinder refused to reserve multiattach volume" in line for line in f)


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compute-url", help="compute API of a running all-in-one")
    parser.add_argument("--volume-url", help="its Cinder (volume API v3) URL")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--microversions", default="2.60,2.101",
                        help="versions of the multiattach race")
    parser.add_argument("--single", default="2.100,2.101",
                        help="versions of the single-attach race ('' for none)")
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    micro = [v for v in args.microversions.split(",") if v]
    single = [v for v in args.single.split(",") if v]
    if args.compute_url and args.volume_url:
        rows, failures = run(Client(args.compute_url, args.volume_url), args.rounds,
                             micro, single)
    else:
        from tests.integration.clients.helpers import running_aio

        with running_aio("vs-race-", extra_args=(
                "--computes", "2", "--compute-driver",
                "{host}-2=libvirt,-supports_multiattach")) as aio:
            rows, failures = run(Client(aio.compute_url, aio.volume_url), args.rounds,
                                 micro, single)
            print(f"reservations Cinder refused and the conductor retried: "
                  f"{count_retries(aio.state_dir)}")
    print(summary(rows))
    print(f"{len(rows) - failures}/{len(rows)} rounds passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
