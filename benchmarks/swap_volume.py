"""Swap of an in-use volume on the all-in-one, next to a plain copy of the same bytes.

Starts ``volumesvc-aio --auth noauth2`` (real Cinder 29, real QEMU), boots
one server from a blank volume and, for each size (default 1 and 4 GiB),
attaches a volume filled with incompressible, non-zero data, then has Cinder
retype it in use (``migration_policy: on-demand``) to a type of another or the
same backend. Cinder makes the new volume and calls the swap; the compute
copies the running disk with a libvirt block copy and completes Cinder's
migration. Timed from the retype request until Cinder shows the volume
``in-use`` with ``migration_status`` ``success``.

The physical floor is a plain copy of the same file on the same filesystem,
once with ``dd`` (4 MiB blocks, ``conv=fsync``) and once with ``qemu-img
convert`` (raw to raw), timed the same way right after each swap.

Run from the repository root (about 5 minutes)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.swap_volume --sizes 1,4
"""

import argparse
import os
import shutil
import subprocess
import tempfile
import time

from benchmarks.allinone import wait_for
from benchmarks.extend_completion import ROOT, Aio, _boot, _volume

GiB = 1 << 30
MiB = 1 << 20
_BLOCK = os.urandom(16 * MiB)


def _fill(path, size_gib):
    """Non-zero, incompressible bytes over the whole file: no sparse shortcut."""
    with open(path, "r+b") as f:
        for _ in range(size_gib * GiB // len(_BLOCK)):
            f.write(_BLOCK)
        f.flush()
        os.fsync(f.fileno())


def _backend(aio):
    _, body = aio.volume("GET", "/scheduler-stats/get_pools?detail=true")
    return body["pools"][0]["capabilities"]["volume_backend_name"]


def _type(aio, name, backend):
    status, body = aio.volume("POST", "/types", {"volume_type": {"name": name}})
    assert status == 200, body
    type_id = body["volume_type"]["id"]
    status, body = aio.volume("POST", f"/types/{type_id}/extra_specs",
                              {"extra_specs": {"volume_backend_name": backend}})
    assert status == 200, body
    return name


def _attached_volume(aio, server, size_gib, volume_type):
    status, body = aio.volume("POST", "/volumes", {"volume": {
        "size": size_gib, "name": f"bench-swap-{size_gib}", "volume_type": volume_type}})
    assert status == 202, body
    volume_id = body["volume"]["id"]
    wait_for(lambda: _volume(aio, volume_id)["status"] == "available", 300, interval=0.2,
             what="available")
    _fill(aio.volume_file(volume_id), size_gib)
    status, body = aio.nova("POST", f"/servers/{server}/os-volume_attachments",
                            {"volumeAttachment": {"volumeId": volume_id}}, version="2.101")
    assert status == 202, body
    wait_for(lambda: _volume(aio, volume_id)["status"] == "in-use", 120, interval=0.2,
             what="in-use")
    return volume_id


def _retype(aio, volume_id, new_type):
    started = time.monotonic()
    status, body = aio.volume("POST", f"/volumes/{volume_id}/action", {
        "os-retype": {"new_type": new_type, "migration_policy": "on-demand"}})
    assert status == 202, body

    def done():
        volume = _volume(aio, volume_id)
        if volume.get("migration_status") == "error" or volume["status"].startswith("error"):
            raise RuntimeError(f"retype of {volume_id} failed: {volume}")
        return volume["status"] == "in-use" and volume.get("migration_status") == "success"
    wait_for(done, 3600, interval=0.1, what="retype done")
    return time.monotonic() - started


def _timed(argv):
    started = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True)
    return time.monotonic() - started


def _floors(source, scratch_dir):
    target = os.path.join(scratch_dir, "bench-copy")
    try:
        dd = _timed(["dd", f"if={source}", f"of={target}", "bs=4M", "conv=fsync"])
        os.unlink(target)
        convert = _timed(["qemu-img", "convert", "-f", "raw", "-O", "raw", "-t", "none",
                          source, target])
    finally:
        if os.path.exists(target):
            os.unlink(target)
    return dd, convert


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4", help="GiB, comma separated")
    parser.add_argument("--keep-state", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    state = tempfile.mkdtemp(prefix="vs-bench-swap-", dir="/var/tmp")
    aio = Aio(state)
    rows = []
    try:
        aio.start()
        server = _boot(aio)
        backend = _backend(aio)
        for index, size in enumerate(sizes):
            source_type = _type(aio, f"bench-src-{index}", backend)
            target_type = _type(aio, f"bench-dst-{index}", backend)
            volume_id = _attached_volume(aio, server, size, source_type)
            seconds = _retype(aio, volume_id, target_type)
            path = _current_file(aio, volume_id)
            dd, convert = _floors(path, os.path.dirname(path))
            rows.append((size, seconds, dd, convert))
            print(f"{size} GiB: swap {seconds:.1f} s ({size * 1024 / seconds:.0f} MB/s), "
                  f"dd {dd:.1f} s ({size * 1024 / dd:.0f} MB/s), qemu-img convert "
                  f"{convert:.1f} s ({size * 1024 / convert:.0f} MB/s)", flush=True)
            aio.nova("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}")
            wait_for(lambda vid=volume_id: _volume(aio, vid)["status"] == "available", 120,
                     interval=0.2, what="detached")
            aio.volume("DELETE", f"/volumes/{volume_id}")
    finally:
        aio.stop()
        if not args.keep_state:
            shutil.rmtree(state, ignore_errors=True)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print(f"\ncommit {head}, backend file -> file (retype on one backend)")
    print("| Size | swap (retype in use) | dd | qemu-img convert |")
    print("|---|---|---|---|")
    for size, seconds, dd, convert in rows:
        mib = size * 1024
        print(f"| {size} GiB | {seconds:.1f} s, {mib / seconds:.0f} MB/s | {dd:.1f} s, "
              f"{mib / dd:.0f} MB/s | {convert:.1f} s, {mib / convert:.0f} MB/s |")


def _current_file(aio, volume_id):
    """The volume's file after the migration (Cinder names it after the new volume)."""
    volume = _volume(aio, volume_id)
    name_id = volume.get("os-vol-mig-status-attr:name_id") or volume_id
    return aio.volume_file(name_id)


if __name__ == "__main__":
    main()
