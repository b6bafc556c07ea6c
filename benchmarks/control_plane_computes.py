"""Several simulated compute hosts in one process, for ``benchmarks.control_plane``.

Each host is a whole ``volumesvc-compute`` service (``cmd.compute.build_service``:
its own ConfigOpts with ``[DEFAULT] host`` set, its own oslo.messaging
transport, RPC server on ``compute.<host>``, heartbeats and periodic tasks)
on the configured fake driver. Only the process is shared, so that 100
computes fit on a small machine; what the conductor and RabbitMQ see is 100
hosts. Runs until SIGTERM/SIGINT, then stops every service::

    python -m benchmarks.control_plane_computes --config-file F --hosts cp-1,cp-2
"""

import argparse
import signal
import sys
import threading


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config-file", required=True)
    p.add_argument("--hosts", required=True, help="comma-separated host names")
    args = p.parse_args(argv)
    hosts = [h for h in args.hosts.split(",") if h]

    from oslo_config import cfg

    from volumesvc import binaries
    from volumesvc import conf as vs_conf
    from volumesvc.cmd import common, compute

    # Logging and the threading backend once, from the first host's config.
    first = common.parse_config(["--config-file", args.config_file], prog=binaries.COMPUTE)
    services = []
    for host in hosts:
        conf = first
        if services:
            conf = vs_conf.register_all(cfg.ConfigOpts())
            conf(["--config-file", args.config_file], project="volumesvc",
                 prog=binaries.COMPUTE, default_config_files=[])
        conf.set_override("host", host)
        services.append(compute.build_service(conf))

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    for service in services:
        service.start()
    while not done.wait(1.0):
        pass
    for service in services:
        service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
