#!/usr/bin/env bash
# Developer entry point: each sub-command installs what it needs first.
#
#   tools/dev.sh aio [volumesvc-aio args]   bring up the all-in-one (foreground)
#   tools/dev.sh test [pytest args]         ruff, mypy, then the whole suite (unit, functional,
#                                           integration)
#   tools/dev.sh tempest [--state-dir D]    tempest's listed compute volume tests against the
#                                           running keystone all-in-one (state dir D)
#   tools/dev.sh setup                      only install (system packages, services, venv)
#
# Idempotent: on a machine that already has everything it only checks.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VOLUMESVC_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}
SYSTEM_PACKAGES="libvirt-daemon libvirt-daemon-driver-qemu qemu-system-x86 libvirt-clients
libvirt-dev pkg-config gcc qemu-utils"

log() { printf 'dev.sh: %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

system_packages() {
    local missing=()
    for p in $SYSTEM_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$p")
    done
    command -v rabbitmq-server >/dev/null || missing+=(rabbitmq-server)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing system packages: ${missing[*]}"
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
    # libvirt's QEMU driver refuses to start as root without this user.
    getent passwd libvirt-qemu >/dev/null \
        || as_root useradd --system --user-group --no-create-home libvirt-qemu
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
    local port=$1 what=$2
    for _ in $(seq 1 60); do port_open "$port" && return 0; sleep 1; done
    log "$what did not come up on port $port"; return 1
}

services() {
    # RabbitMQ, PostgreSQL and MariaDB run on this kind of machine already;
    # start any that is stopped (same commands the machine uses at boot).
    if ! port_open 5672; then
        log "starting RabbitMQ"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 ERL_EPMD_ADDRESS=127.0.0.1 \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
            as_root rabbitmq-server -detached
        wait_port 5672 RabbitMQ
    fi
    if ! port_open 5432 && command -v pg_ctlcluster >/dev/null; then
        log "starting PostgreSQL"
        as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
        wait_port 5432 PostgreSQL
    fi
    if ! port_open 3306 && [ -x /usr/sbin/mariadbd ]; then
        log "starting MariaDB"
        as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
        wait_port 3306 MariaDB
    fi
}

venv() {
    local stamp="$VENV/.volumesvc-installed"
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating virtualenv $VENV"
        "$PY" -m venv "$VENV"
    fi
    if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
        log "installing volumesvc and its test dependencies"
        "$VENV/bin/pip" install -q --upgrade pip >/dev/null
        "$VENV/bin/pip" install -q -e "$ROOT[test,doc,aio,libvirt,postgresql,mysql]"
        touch "$stamp"
    fi
}

setup() { system_packages; services; venv; }

cmd=${1:-}
shift || true
case "$cmd" in
    setup) setup ;;
    aio)
        setup
        exec "$VENV/bin/volumesvc-aio" "$@"
        ;;
    tempest)
        setup
        exec "$VENV/bin/python" -m volumesvc.aio.tempest "$@"
        ;;
    test)
        setup
        cd "$ROOT"
        # Lint and type errors fail fast, before the long test run.
        "$VENV/bin/ruff" check volumesvc tests benchmarks
        "$VENV/bin/mypy" volumesvc
        # The documentation builds without a warning and the release notes lint.
        "$VENV/bin/sphinx-build" -q -W --keep-going -b html doc/source doc/build/html
        "$VENV/bin/reno" lint
        set +e
        "$VENV/bin/pytest" -p no:cacheprovider -ra "$@"
        rc=$?
        set -e
        # pytest's 5 means "no tests ran": that is a failure here.
        if [ $rc = 5 ]; then log "no tests ran"; exit 1; fi
        exit $rc
        ;;
    *)
        sed -n '2,11p' "$0" >&2
        exit 2
        ;;
esac
