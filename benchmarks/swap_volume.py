"""Swap of an in-use volume between Ceph RBD and a file, next to a plain copy of the same bytes.

Starts ``volumesvc-aio --auth noauth2`` with its default storage (a one-node
Ceph, Cinder backends ``rbd`` and ``file``, real QEMU on ``qemu:///system``),
boots one server from a blank volume and, for each size (default 1 and 4
GiB), attaches a ``file`` volume filled with non-zero random bytes, then has
Cinder retype it in use (``migration_policy: on-demand``) to ``rbd`` and back
to ``file``. Cinder makes the new volume and calls the swap; the compute
mirrors the running disk with a libvirt block copy, pivots and completes
Cinder's migration. Two times per swap:

* *retype*: from Cinder's retype request until the volume is out of
  ``retyping`` (``in-use``, ``migration_status`` ``success``): Cinder's
  scheduling and volume creation, the swap, Cinder's completion;
* *swap*: the compute's ``compute_swap_volume`` event of the ``swap_volume``
  instance action (start to finish): connect, block copy, pivot, release.

The physical floor is a plain copy of the same bytes on the same machine,
taken right before the swaps, every read and write past the page cache as
QEMU's (``cache=none``): ``dd iflag=direct | rbd import`` (file → RBD),
``rbd export | dd oflag=direct`` (RBD → file) and ``dd`` file → file.

Run from the repository root (about 6 minutes with 1 and 4 GiB; the first
run longer while Cinder, Glance and Ceph install)::

    PYTHONPATH=$PWD:$PWD/aio .venv/bin/python -u -m benchmarks.swap_volume --sizes 1,4
"""

import argparse
import datetime
import os
import shutil
import subprocess
import tempfile
import time

from benchmarks.extend_completion import CINDER_VERSION, ROOT, Aio, _boot, _request
from benchmarks.lib import report as results
from benchmarks.lib.allinone import wait_for

GiB = 1 << 30
MiB = 1 << 20
_BLOCK = os.urandom(16 * MiB)
MARK = "<!-- swap_volume -->"
END = "<!-- /swap_volume -->"


def _cinder(aio, method, path, body=None):
    """Cinder as admin: the volume's host and migration status are admins' to see."""
    return _request(method, aio.cinder + path, body,
                    {"OpenStack-API-Version": CINDER_VERSION, "X-Auth-Token": "admin:admin"})


def _volume(aio, volume_id):
    return _cinder(aio, "GET", f"/volumes/{volume_id}")[1]["volume"]


def _fill(path, size_gib):
    """Non-zero random bytes over the whole file: no hole for the copy to skip."""
    with open(path, "r+b") as f:
        for _ in range(size_gib * GiB // len(_BLOCK)):
            f.write(_BLOCK)
        f.flush()
        os.fsync(f.fileno())


def _ceph_env():
    from volumesvc_aio import ceph

    return ceph.clean_env()


def _rbd_argv(aio, *args):
    return ["rbd", "-c", os.path.join(aio.state_dir, "ceph", "ceph.conf"), "--id", "admin",
            *args]


def _attached_file_volume(aio, server, size_gib):
    status, body = _cinder(aio, "POST", "/volumes", {"volume": {
        "size": size_gib, "name": f"bench-swap-{size_gib}", "volume_type": "file"}})
    assert status == 202, body
    volume_id = body["volume"]["id"]
    wait_for(lambda: _volume(aio, volume_id)["status"] == "available", 300, interval=0.2,
             what="available")
    _fill(_current_file(aio, volume_id), size_gib)
    status, body = aio.nova("POST", f"/servers/{server}/os-volume_attachments",
                            {"volumeAttachment": {"volumeId": volume_id}}, version="2.101")
    assert status == 202, body
    wait_for(lambda: _volume(aio, volume_id)["status"] == "in-use", 120, interval=0.2,
             what="in-use")
    return volume_id


def _swap_event(aio, server):
    _, body = aio.nova("GET", f"/servers/{server}/os-instance-actions", version="2.84")
    newest = next(a for a in body["instanceActions"] if a["action"] == "swap_volume")
    _, detail = aio.nova("GET", f"/servers/{server}/os-instance-actions/{newest['request_id']}",
                         version="2.84")
    (event,) = [e for e in detail["instanceAction"]["events"]
                if e["event"] == "compute_swap_volume"]
    return event


def _swap_event_seconds(aio, server):
    """Start to finish of the newest ``swap_volume`` action's compute event.

    The event finishes a moment after Cinder's migration: the compute
    completes the migration, then updates the BDM and ends the event.
    """
    event = wait_for(lambda: (e := _swap_event(aio, server))["finish_time"] and e, 120,
                     interval=0.2, what="the compute_swap_volume event to finish")
    assert event["result"] == "Success", event

    def parse(value):
        return datetime.datetime.fromisoformat(value.rstrip("Z"))
    return (parse(event["finish_time"]) - parse(event["start_time"])).total_seconds()


def _retype(aio, server, volume_id, new_type):
    """Retype in use; (seconds until Cinder ended the migration, seconds of the compute's swap)."""
    started = time.monotonic()
    status, body = _cinder(aio, "POST", f"/volumes/{volume_id}/action", {
        "os-retype": {"new_type": new_type, "migration_policy": "on-demand"}})
    assert status == 202, body

    def done():
        # Cinder's API puts the volume in ``retyping`` before it answers.
        # Its completion swaps the two volumes' records first (``in-use``,
        # no migration status, no attachment for a moment), then records
        # ``success``. (An exception here would only count as "not yet".)
        volume = _volume(aio, volume_id)
        return (volume["status"] != "retyping"
                and volume.get("migration_status") in ("success", "error") and volume)
    volume = wait_for(done, 3600, interval=0.1, what=f"retype to {new_type} done")
    seconds = time.monotonic() - started
    if (volume["status"], volume.get("migration_status")) != ("in-use", "success"):
        raise RuntimeError(f"retype of {volume_id} to {new_type} ended as {volume}")
    host = volume.get("os-vol-host-attr:host") or ""
    if not host.split("#")[0].endswith(f"@{new_type}"):
        raise RuntimeError(f"volume {volume_id} is on {host}, not on {new_type}")
    return seconds, _swap_event_seconds(aio, server)


def _timed_shell(command, env=None):
    started = time.monotonic()
    subprocess.run(["bash", "-o", "pipefail", "-c", command], check=True,
                   capture_output=True, env=env)
    return time.monotonic() - started


def _floors(aio, source, size_gib, scratch_dir):
    """(file → RBD, RBD → file, file → file) seconds of a plain copy of ``source``."""
    image = f"volumes/bench-floor-{size_gib}"
    target = os.path.join(scratch_dir, "bench-floor-copy")
    rbd = " ".join(_rbd_argv(aio))
    env = _ceph_env()
    try:
        to_rbd = _timed_shell(f"dd if={source} iflag=direct bs=4M status=none | "
                              f"{rbd} import --no-progress - {image}", env)
        from_rbd = _timed_shell(f"{rbd} export --no-progress {image} - | dd of={target} "
                                "oflag=direct iflag=fullblock bs=4M status=none", env)
        os.unlink(target)
        file_to_file = _timed_shell(f"dd if={source} of={target} iflag=direct oflag=direct "
                                    "bs=4M status=none")
    finally:
        subprocess.run(_rbd_argv(aio, "rm", "--no-progress", image), capture_output=True,
                       env=env)
        if os.path.exists(target):
            os.unlink(target)
    return to_rbd, from_rbd, file_to_file


def _drop(aio, server, volume_id):
    """Detach and delete the volume, for the OSD's room; a failure costs no figure."""
    try:
        aio.nova("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}")
        wait_for(lambda: _volume(aio, volume_id)["status"] == "available", 300,
                 interval=0.2, what="detached")
        _cinder(aio, "DELETE", f"/volumes/{volume_id}")
        wait_for(lambda: _cinder(aio, "GET", f"/volumes/{volume_id}")[0] == 404,
                 300, interval=0.5, what="deleted")
    except (TimeoutError, OSError) as exc:
        print(f"could not drop volume {volume_id}: {exc}", flush=True)


def _rate(size_gib, seconds):
    return f"{seconds:.1f} s, {size_gib * 1024 / seconds:.0f} MiB/s"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4",
                        help="GiB, comma separated (the all-in-one's OSD holds 8 GiB: the "
                             "RBD floor copy and the swap of one size are there in turn)")
    parser.add_argument("--keep-state", action="store_true")
    results.add_arguments(parser)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    state = tempfile.mkdtemp(prefix="vs-bench-swap-", dir="/var/tmp")
    aio = Aio(state)
    rows = []
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    try:
        aio.start()
        server = _boot(aio)
        for size in sizes:
            volume_id = _attached_file_volume(aio, server, size)
            path = _current_file(aio, volume_id)
            floors = _floors(aio, path, size, os.path.dirname(path))
            to_rbd = _retype(aio, server, volume_id, "rbd")
            to_file = _retype(aio, server, volume_id, "file")
            rows.append((size, to_rbd, to_file, floors))
            print(f"{size} GiB: file->rbd retype {_rate(size, to_rbd[0])} (swap "
                  f"{_rate(size, to_rbd[1])}); rbd->file retype {_rate(size, to_file[0])} "
                  f"(swap {_rate(size, to_file[1])}); floors: dd|rbd import "
                  f"{_rate(size, floors[0])}, rbd export|dd {_rate(size, floors[1])}, "
                  f"dd file->file {_rate(size, floors[2])}", flush=True)
            _drop(aio, server, volume_id)
    finally:
        aio.stop()
        if not args.keep_state:
            shutil.rmtree(state, ignore_errors=True)
    text = _table(rows, date)
    print("\n" + text)
    if not args.no_results:
        path = results.write_result(args.results, date=date, topic="swap-volume",
                                    title="Swap volume between Ceph RBD and a file",
                                    mark=MARK, end=END, text=text)
        print(f"written to {path}")


def _table(rows, date):
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    lines = [
        f"volumesvc {head}, {date}, `python -m benchmarks.swap_volume --sizes "
        f"{','.join(str(r[0]) for r in rows)}`: the all-in-one's one-node Ceph (one "
        "BlueStore OSD on a file) and Cinder's file backend on the same disk, one in-use "
        "volume of random bytes retyped file → rbd, then rbd → file; floors right before.",
        "",
        "| Size | direction | retype (Cinder's request to in-use) | swap (compute event) "
        "| plain copy (floor) |",
        "|---|---|---|---|---|",
    ]
    for size, to_rbd, to_file, floors in rows:
        lines.append(f"| {size} GiB | file → rbd | {_rate(size, to_rbd[0])} | "
                     f"{_rate(size, to_rbd[1])} | `dd iflag=direct \\| rbd import` "
                     f"{_rate(size, floors[0])} |")
        lines.append(f"| {size} GiB | rbd → file | {_rate(size, to_file[0])} | "
                     f"{_rate(size, to_file[1])} | `rbd export \\| dd oflag=direct` "
                     f"{_rate(size, floors[1])} |")
        lines.append(f"| {size} GiB | (file → file) | | | `dd` direct "
                     f"{_rate(size, floors[2])} |")
    return "\n".join(lines)


def _current_file(aio, volume_id):
    """The volume's file (Cinder names it after ``name_id`` once a migration moved it)."""
    volume = _volume(aio, volume_id)
    name_id = volume.get("os-vol-mig-status-attr:name_id") or volume_id
    return aio.volume_file(name_id)


if __name__ == "__main__":
    main()
