"""A user_data agent for the starter guest, and reading what it printed through the API.

The guest can only be told what to do at boot (its ``user_data``), so the
agent reacts to what the service does to its disks instead of to commands.
Once a second it looks at every disk; at a fixed sector (``MARK_SECTOR``,
past the starter image's 20 MiB, inside any 1 GiB volume) it finds

* no mark (zeros, or the noise a new encrypted volume decrypts to): it
  writes ``VSMARK <random uuid>`` there, syncs, and prints
  ``VSGUEST-TEST wrote ...``. It tries once per disk: when the write is
  refused (a read-only disk) it prints ``VSGUEST-TEST write-refused ...``
  and looks again at every pass, with the page cache dropped, so that
  another server's write to a shared disk is seen;
* a mark: it prints ``VSGUEST-TEST read round=<n> ... mark=<uuid>``.

A disk whose mark was read is read again (page cache dropped) only when the
set of disks or one's size changes: each change starts a new ``round``, so a
test that attaches or extends a disk knows the guest read every disk again
after it. Every line ends with ``boot=<uuid>``, new for each boot, which
tells the lines of a restarted guest from its last boot's. At start the
agent prints ``VSGUEST-TEST agent image=...``: the content of
``vsimage.txt`` on the root disk's FAT partition (``none`` in the starter
image), which is how a rebuilt guest says which image it booted.

The lines are read through ``os-getConsoleOutput``, as a user would.
"""

import base64
import re
import time

from tests.integration.clients.helpers import compute_http

MARK_SECTOR = 512000    # 250 MiB into the disk: beyond the image, inside a 1 GiB volume
IMAGE_FILE = "vsimage.txt"

_AGENT = r"""#!/bin/sh
. /lib/vsguest.sh
MARK_SECTOR=@SECTOR@
BOOT=$(cat /proc/sys/kernel/random/uuid)
say() { echo "VSGUEST-TEST $* boot=$BOOT"; }

image=none
mkdir -p /mnt/boot /run/vstest
for part in /dev/sd?1 /dev/vd?1; do
    [ -b "$part" ] || continue
    if mount -t vfat -o ro "$part" /mnt/boot 2>/dev/null; then
        [ -f /mnt/boot/@FILE@ ] && image=$(cat /mnt/boot/@FILE@)
        umount /mnt/boot
    fi
done
say "agent image=$image"

agent_pass() {
    dropped=0
    for path in /sys/block/sd* /sys/block/vd*; do
        [ -e "$path" ] || continue
        name=${path##*/}
        read -r seq < "$path/diskseq" || continue
        state=/run/vstest/$name.$seq
        known=""
        [ -f "$state" ] && read -r known < "$state"
        [ "$1" = all ] || [ -z "$known" ] || [ "$known" = failed ] || continue
        if [ "$dropped" = 0 ]; then
            sync
            echo 3 > /proc/sys/vm/drop_caches
            dropped=1
        fi
        head=$(dd if="/dev/$name" bs=512 skip="$MARK_SECTOR" count=1 2>/dev/null \
               | tr -d '\000' | head -n 1)
        serial=$(vs_serial "$name")
        case "$head" in
        "VSMARK "*)
            say "read round=$round name=$name serial=$serial mark=${head#VSMARK }"
            echo "$head" > "$state" ;;
        *)
            # Zeros, or noise: what a new encrypted volume shows (its never
            # written ciphertext decrypts to noise) is as blank as zeros.
            # One try per disk, read-only or not: a refused write is what a
            # read-only attachment must give.
            if [ -z "$known" ]; then
                mark="VSMARK $(cat /proc/sys/kernel/random/uuid)"
                if echo "$mark" | dd of="/dev/$name" bs=512 seek="$MARK_SECTOR" count=1 \
                        conv=sync,fsync 2>/dev/null && sync; then
                    say "wrote name=$name serial=$serial mark=${mark#VSMARK }"
                    echo "$mark" > "$state"
                else
                    read -r ro < "$path/ro"
                    say "write-refused name=$name serial=$serial ro=$ro"
                    echo failed > "$state"
                fi
            fi ;;
        esac
    done
}

agent_loop() {
    round=0
    last=""
    while :; do
        sig=""
        for path in /sys/block/sd* /sys/block/vd*; do
            [ -e "$path" ] || continue
            read -r seq < "$path/diskseq"
            read -r size < "$path/size"
            sig="$sig ${path##*/}:$seq:$size"
        done
        if [ "$sig" != "$last" ]; then
            round=$((round + 1))
            last=$sig
            agent_pass all
        else
            agent_pass
        fi
        sleep 1
    done
}
agent_loop &
"""


def agent_user_data():
    """The agent as base64 ``user_data``."""
    script = (_AGENT.replace("@SECTOR@", str(MARK_SECTOR))
              .replace("@FILE@", IMAGE_FILE))
    return base64.b64encode(script.encode()).decode()


def console(aio, server_id):
    """The whole console log through ``os-getConsoleOutput``, as lines without ``\\r``."""
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/action",
                                   {"os-getConsoleOutput": {}})
    assert status == 200, body
    return body["output"].replace("\r", "").split("\n")


def wait_line(aio, server_id, pattern, timeout, *, after=None):
    """The regex match of the first console line matching ``pattern`` (``re.search``).

    ``after``: only lines after the first one holding this text count (a
    boot's ``agent`` line). On a timeout the failure shows the console tail.
    """
    deadline = time.monotonic() + timeout
    while True:
        lines = console(aio, server_id)
        if after is not None:
            start = next((i for i, line in enumerate(lines) if after in line), None)
            lines = [] if start is None else lines[start:]
        for line in lines:
            found = re.search(pattern, line)
            if found:
                return found
        if time.monotonic() > deadline:
            tail = "\n".join(console(aio, server_id)[-60:])
            raise AssertionError(f"server {server_id}: no console line matching {pattern!r} "
                                 f"within {timeout} s; the console's tail:\n{tail}")
        time.sleep(1)


def wait_boot(aio, server_id, timeout, *, not_boots=()):
    """(boot id, image) of the agent's start line of a boot not in ``not_boots``."""
    deadline = time.monotonic() + timeout
    pattern = r"VSGUEST-TEST agent image=(\S+) boot=(\S+)"
    while True:
        for line in console(aio, server_id):
            found = re.search(pattern, line)
            if found and found.group(2) not in not_boots:
                return found.group(2), found.group(1)
        if time.monotonic() > deadline:
            tail = "\n".join(console(aio, server_id)[-60:])
            raise AssertionError(f"server {server_id}: no new boot of the agent within "
                                 f"{timeout} s (earlier boots {list(not_boots)}); the "
                                 f"console's tail:\n{tail}")
        time.sleep(1)


def wait_written(aio, server_id, serial, timeout):
    """The mark the guest wrote to the disk whose serial is ``serial``."""
    return wait_line(aio, server_id, rf"VSGUEST-TEST wrote name=\S+ serial={serial} "
                     rf"mark=(\S+) boot=", timeout).group(1)


def wait_read(aio, server_id, serial, mark, timeout, *, boot=None, min_round=1):
    """The guest read ``mark`` back from ``serial`` (in ``boot``, in a round >= ``min_round``)."""
    boot_re = re.escape(boot) if boot else r"\S+"
    deadline = time.monotonic() + timeout
    pattern = (rf"VSGUEST-TEST read round=(\d+) name=\S+ serial={serial} "
               rf"mark={re.escape(mark)} boot={boot_re}$")
    while True:
        for line in console(aio, server_id):
            found = re.search(pattern, line)
            if found and int(found.group(1)) >= min_round:
                return int(found.group(1))
        if time.monotonic() > deadline:
            tail = "\n".join(console(aio, server_id)[-60:])
            raise AssertionError(
                f"server {server_id}: the guest did not read mark {mark} from {serial} "
                f"(boot {boot}, round >= {min_round}) within {timeout} s; the console's "
                f"tail:\n{tail}")
        time.sleep(1)


def last_round(aio, server_id, boot):
    """The agent's latest round number in ``boot`` (0 before its first pass printed)."""
    rounds = [int(m.group(1)) for line in console(aio, server_id)
              if (m := re.search(rf"VSGUEST-TEST read round=(\d+) .* boot={re.escape(boot)}$",
                                 line))]
    return max(rounds, default=0)
