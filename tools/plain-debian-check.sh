#!/usr/bin/env bash
# Does the README's first command install everything it needs on a plain
# Debian 12? Runs its installation steps in a minimal Debian 12 root
# filesystem (chroot), not on this machine, whose image may happen to carry
# packages a fresh install lacks.
#
#   tools/plain-debian-check.sh [--refresh] [--keep] [--tarball]
#
#     --refresh   build the Debian 12 base tarball again (otherwise the cached
#                 one in ~/.cache/volumesvc is reused)
#     --keep      leave the root filesystem in place afterwards, for a look
#     --tarball   only make sure the base tarball exists and print its path
#                 (tools/container-check.sh imports it as a base image)
#
# What runs inside, from a `git archive` of HEAD (uncommitted changes are not
# part of the check): tools/dev.sh's own install steps, the system packages
# bindep.txt lists for the all-in-one and the tests (apt) and the virtualenv
# with volumesvc and the all-in-one at the versions upper-constraints.txt pins
# (pip), then the virtualenvs the all-in-one installs at start (Keystone,
# Cinder, Glance, Barbican, each at the versions of its constraints file).
# The services (RabbitMQ, the databases, the all-in-one) are not started: the
# chroot shares this machine's network and its ports. Package scripts are
# therefore told not to start daemons (policy-rc.d). Needs root, the network
# to Debian's mirror and to PyPI (through a TLS-inspecting proxy when
# $PIP_CERT names the bundle to trust: pip in the chroot gets a copy), about
# 4 GB of disk under /var/tmp.
# Exits non-zero when any step fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${VOLUMESVC_CACHE_DIR:-$HOME/.cache/volumesvc}/plain-debian-12
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
TARBALL=$CACHE/bookworm-minbase.tar

log() { printf 'plain-debian-check: %s\n' "$*" >&2; }

refresh=0 keep=0 tarball_only=0
for arg in "$@"; do
    case "$arg" in
        --refresh) refresh=1 ;;
        --keep) keep=1 ;;
        --tarball) tarball_only=1 ;;
        *) sed -n '2,27p' "$0" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { log "needs root (chroot, mounts, apt)"; exit 1; }

# A stock Debian 12 as debootstrap would make it, minus what is only there
# for booting: mmdebstrap's minbase (Essential and apt), with the point
# release and security updates a fresh install gets.
base_tarball() {
    if [ -f "$TARBALL" ] && [ "$refresh" = 0 ]; then
        log "reusing $TARBALL (built $(date -u -r "$TARBALL" +%F); --refresh rebuilds it)"
        return 0
    fi
    command -v mmdebstrap >/dev/null || {
        log "installing mmdebstrap"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            mmdebstrap >/dev/null
    }
    mkdir -p "$CACHE"
    log "building a Debian 12 minbase root filesystem from $MIRROR"
    mmdebstrap --quiet --variant=minbase --format=tar bookworm "$TARBALL.tmp" \
        "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
        "deb $SECURITY_MIRROR bookworm-security main"
    mv "$TARBALL.tmp" "$TARBALL"
}

RFS=""
MOUNTS=()
CHROOT_PIP_CERT=""

# Everything the chroot mounted, innermost last, and the processes that run
# with the chroot as their root (a daemon a package script left behind).
cleanup() {
    local rc=$? pid i
    trap - EXIT INT TERM
    if [ -n "$RFS" ]; then
        for pid in $(ls /proc | grep -E '^[0-9]+$'); do
            [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$RFS" ] || continue
            log "stopping process $pid left in the chroot: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
            kill -TERM "$pid" 2>/dev/null || true
            sleep 2
            kill -KILL "$pid" 2>/dev/null || true
        done
        for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
            umount -R "${MOUNTS[i]}" 2>/dev/null || umount -R -l "${MOUNTS[i]}" || rc=1
        done
        # Never delete through a mount still in place (/dev, the caches).
        if findmnt -rn -o TARGET | grep -q "^$RFS"; then
            log "mounts left under $RFS: not deleting it"; rc=1
        elif [ "$keep" = 1 ]; then
            log "root filesystem kept in $RFS"
        else
            rm -rf --one-file-system "$RFS"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {  # bind SOURCE TARGET-IN-CHROOT: recursive, unmounts stay inside
    mkdir -p "$RFS$2"
    mount --rbind "$1" "$RFS$2"
    mount --make-rslave "$RFS$2"
    MOUNTS+=("$RFS$2")
}

step_started=0
step() { step_started=$(date +%s); log "$*"; }
step_done() { log "  done in $(( $(date +%s) - step_started )) s"; }

in_chroot() {
    chroot "$RFS" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
        ${CHROOT_PIP_CERT:+PIP_CERT=$CHROOT_PIP_CERT} \
        bash -ec "cd /root/volumesvc && $1"
}

# The all-in-one installs these at start (ServiceHarness.install): the same
# calls, without starting anything afterwards.
read -r -d '' AIO_VENVS_PY <<'EOF' || true
from volumesvc_aio.barbican import BarbicanHarness
from volumesvc_aio.cinder import CinderHarness
from volumesvc_aio.glance import GlanceHarness
from volumesvc_aio.keystone import KeystoneHarness

for cls in (KeystoneHarness, CinderHarness, GlanceHarness, BarbicanHarness):
    harness = cls("/var/tmp/plain-debian-check/" + cls.LABEL.lower(), port=1)
    harness.install()
    print(f"{cls.LABEL} {cls.VERSION}: {harness.venv}", flush=True)
EOF

# The whole run is one function, read completely before it starts, and the
# script ends on the line that calls it, so a checkout that changes meanwhile
# (a rebase) does not change the run.
main() {
    started=$(date +%s)
    step "base tarball"
    base_tarball
    step_done
    if [ "$tarball_only" = 1 ]; then echo "$TARBALL"; exit 0; fi

    RFS=$(mktemp -d /var/tmp/volumesvc-plain-debian.XXXXXX)
    chmod 755 "$RFS"
    tar -C "$RFS" -xf "$TARBALL"
    mount -t proc proc "$RFS/proc"; MOUNTS+=("$RFS/proc")
    bind /sys /sys
    bind /dev /dev
    mount -t tmpfs tmpfs "$RFS/run"; MOUNTS+=("$RFS/run")
    # The downloads of both package managers outlive the chroot, so a second
    # run installs the same packages without fetching them again.
    mkdir -p "$CACHE/apt-archives" "$CACHE/pip"
    bind "$CACHE/apt-archives" /var/cache/apt/archives
    bind "$CACHE/pip" /root/.cache/pip
    cp -L /etc/resolv.conf "$RFS/etc/resolv.conf"
    # Behind a TLS-inspecting proxy pip trusts PyPI only through the bundle
    # $PIP_CERT names: pip in the chroot gets a copy of it (no package).
    if [ -n "${PIP_CERT:-}" ] && [ -r "$PIP_CERT" ]; then
        cp -L "$PIP_CERT" "$RFS/root/pip-cert.pem"
        CHROOT_PIP_CERT=/root/pip-cert.pem
        log "pip trusts the certificates of \$PIP_CERT ($PIP_CERT)"
    fi
    printf '#!/bin/sh\n# plain-debian-check: no daemons in this chroot\nexit 101\n' \
        >"$RFS/usr/sbin/policy-rc.d"
    chmod 755 "$RFS/usr/sbin/policy-rc.d"
    mkdir -p "$RFS/root/volumesvc"
    git -C "$ROOT" archive HEAD | tar -C "$RFS/root/volumesvc" -x
    log "HEAD $(git -C "$ROOT" rev-parse --short HEAD) in $RFS/root/volumesvc"

    # tools/dev.sh's own functions, as `tools/dev.sh aio` runs them (its
    # services step aside: it starts servers).
    step "system packages from bindep.txt (profiles: test aio)"
    in_chroot 'source tools/dev.sh && system_packages'
    step_done
    step "virtualenv .venv: volumesvc and the all-in-one, pinned by upper-constraints.txt"
    in_chroot 'source tools/dev.sh && venv'
    step_done
    step "the all-in-one's Keystone, Cinder, Glance and Barbican virtualenvs"
    cat >"$RFS/root/aio-venvs.py" <<<"$AIO_VENVS_PY"
    in_chroot '.venv/bin/python /root/aio-venvs.py'
    step_done
    # What pip compiled loads, and the programs the all-in-one runs are there.
    step "smoke: compiled modules and programs"
    in_chroot '.venv/bin/python -c "import libvirt; print(\"libvirt-python\", libvirt.getVersion())"
        .venv/bin/uwsgi --version
        .venv/bin/volumesvc-manage --help >/dev/null
        .venv/bin/volumesvc-aio --help >/dev/null
        for p in qemu-system-x86_64 qemu-img libvirtd virtlogd ceph-mon ceph-osd rabbitmq-server \
                pg_ctlcluster mariadb xorriso mcopy syslinux cryptsetup systemd-analyze; do
            command -v "$p" >/dev/null || { echo "missing program: $p"; exit 1; }
        done'
    step_done
    log "passed: the README's installation steps work on a plain Debian 12" \
        "($(( $(date +%s) - started )) s in all)"
}

main; exit
