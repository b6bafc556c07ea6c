"""How many Cinder requests ``volume_attachment cleanup --all-servers`` makes, and how fast.

In-process deployment (the functional tier's Stack: real API app, conductor
and compute on fake://, SQLite) with a counting Cinder double: every adapter
call is one HTTP request to a real Cinder. Each of N servers holds one
attached volume; ``--dangling`` of them lost their Cinder attachment behind
volumesvc's back. The walk is compared with reconciling the same servers
one at a time (what a reboot of each would cost in Cinder requests).

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.reconcile_walk --servers 100,1000,5000
"""

import argparse
import contextlib
import io
import pathlib
import tempfile
import time


def _args(**kwargs):
    values = dict(server_id=None, all_servers=False, batch_size=100, dry_run=False,
                  json=True)
    values.update(kwargs)
    return argparse.Namespace(**values)


def run(servers, dangling, page_size, one_by_one):
    from tests.fixtures.cinder import CountingCinder
    from tests.functional.stack import Stack
    from volumesvc.cmd import manage_attachments

    stack = Stack(pathlib.Path(tempfile.mkdtemp(prefix="reconcile-walk-")),
                  cinder_wrapper=CountingCinder,
                  conf_overrides={("cinder", "list_page_size"): page_size})
    try:
        made = stack.populate_attached_servers(servers)
        ctx = stack.admin_context()
        for _uuid, _volume, attachment_id in made[:dangling]:
            stack.cinder.inner.attachment_delete(ctx, attachment_id)
        commands = manage_attachments.VolumeAttachmentCommands(
            stack.conf, db=stack.db, cinder=stack.cinder, conductor=stack.conductor_api())
        stack.cinder.reset()
        start = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):
            if one_by_one:
                for uuid, _volume, _attachment in made:
                    commands.cleanup(_args(server_id=uuid))
            else:
                commands.cleanup(_args(all_servers=True))
        elapsed = time.monotonic() - start
        return stack.cinder.requests, dict(stack.cinder.by_method), elapsed
    finally:
        stack.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="100,1000,5000")
    parser.add_argument("--dangling", type=int, default=5)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--one-by-one-max", type=int, default=100,
                        help="also time the one-server-at-a-time path up to this N")
    args = parser.parse_args(argv)
    print("| servers | mode | Cinder requests | by method | wall time |")
    print("|---|---|---|---|---|")
    for count in (int(n) for n in args.servers.split(",")):
        modes = [False] + ([True] if count <= args.one_by_one_max else [])
        for one_by_one in modes:
            requests, by_method, elapsed = run(count, args.dangling, args.page_size,
                                               one_by_one)
            mode = "one server at a time" if one_by_one else "--all-servers"
            methods = ", ".join(f"{k} {v}" for k, v in sorted(by_method.items()))
            print(f"| {count} | {mode} | {requests} | {methods} | {elapsed:.1f} s |",
                  flush=True)


if __name__ == "__main__":
    main()
