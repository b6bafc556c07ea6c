"""The guest image: its size, and how long plain QEMU takes to boot it to ``VSGUEST ready``.

Builds (or finds in the cache) the all-in-one's starter image
(doc/source/admin/guest-image.rst), then boots it ``--boots`` times one after
the other with plain QEMU as the integration test does (q35, software
emulation, the image on virtio-scsi, no config drive) for each memory size
in ``--memory``, and measures from QEMU's start to the console's ``VSGUEST
ready``. After the last boot of each size it keeps the guest running
``--idle`` seconds and reports the CPU its idle disk watcher costs and
QEMU's resident memory. Boot CPU is QEMU's own CPU time at ``ready``.

Run from the repository root (about a minute on a quiet machine)::

    PYTHONPATH=$PWD:$PWD/aio .venv/bin/python -m benchmarks.guest_boot --boots 5
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from benchmarks.lib.allinone import guest_image

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def boot_once(image, memory_mb, workdir, idle=0.0, timeout=300.0):
    """Seconds from QEMU's start to ``VSGUEST ready``; with ``idle``, also CPU and RSS."""
    log = os.path.join(workdir, f"console-{time.monotonic_ns()}.log")
    started = time.monotonic()
    qemu = subprocess.Popen(guest_image.qemu_argv(image, log, memory_mb=memory_mb),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while True:
            if os.path.exists(log):
                with open(log, "rb") as f:
                    if b"VSGUEST ready" in f.read():
                        break
            if qemu.poll() is not None or time.monotonic() - started > timeout:
                raise RuntimeError(f"no VSGUEST ready with {memory_mb} MiB")
            time.sleep(0.05)
        result = {"ready_s": time.monotonic() - started, "cpu_s": _cpu_seconds(qemu.pid)}
        if idle:
            time.sleep(2)  # user_data and the first watcher passes
            before = _cpu_seconds(qemu.pid)
            time.sleep(idle)
            result["idle_cpu_pct"] = 100 * (_cpu_seconds(qemu.pid) - before) / idle
            result["rss_mb"] = _rss_mb(qemu.pid)
        return result
    finally:
        qemu.kill()
        qemu.wait(timeout=30)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--memory", type=int, nargs="+", default=[128, 256],
                        help="guest memory sizes in MiB (default: %(default)s)")
    parser.add_argument("--idle", type=float, default=20.0,
                        help="seconds the last guest of each size idles for the CPU figure")
    args = parser.parse_args(argv)
    image = guest_image.ensure_image(log=print)
    with open(os.path.join(os.path.dirname(image), "image.json")) as f:
        info = json.load(f)
    print(f"image {image}: {info['bytes']} bytes (kernel {info['kernel_bytes']}, "
          f"initramfs {info['initrd_bytes']}); packages {info['packages']}")
    with tempfile.TemporaryDirectory(prefix="guest-boot-") as workdir:
        for memory in args.memory:
            runs = [boot_once(image, memory, workdir,
                              idle=args.idle if i == args.boots - 1 else 0.0)
                    for i in range(args.boots)]
            ready = sorted(r["ready_s"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            idle = (f"idle watcher {runs[-1]['idle_cpu_pct']:.2f} % of a core, "
                    f"QEMU RSS {runs[-1]['rss_mb']:.0f} MB; " if args.idle else "")
            print(f"{memory} MiB: ready p50 {statistics.median(ready):.2f} s, "
                  f"min {ready[0]:.2f} s, max {ready[-1]:.2f} s over {len(ready)} boots, "
                  f"QEMU CPU to ready p50 {cpu:.2f} s; "
                  f"{idle}load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
