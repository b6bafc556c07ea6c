#!/usr/bin/env bash
# Build the container image (containers/Containerfile) from this checkout and
# prove it serves: `volumesvc-manage db sync` into a SQLite file on a volume,
# then the API container on that volume, asked from this machine over a
# published loopback port for the versions document (200) and for
# /v2.1/servers without a token (401 from keystonemiddleware); and the
# compute's privsep daemon, started from volumesvc through the image's sudo
# rule, reading a root-only file.
#
#   tools/container-check.sh
#
# Environment:
#   VOLUMESVC_CONTAINER_ENGINE  podman (default; installed with apt when
#                               missing) or docker
#   VOLUMESVC_CONTAINER_BASE    the base image (default
#                               docker.io/library/debian:bookworm-slim); when it
#                               is neither present nor pullable, a Debian 12
#                               minbase from Debian's mirror is imported in its
#                               place (tools/plain-debian-check.sh --tarball)
#   VOLUMESVC_IMAGE             the tag to build (default localhost/volumesvc:latest)
#   PIP_CERT                    when set, the certificate bundle pip trusts in the
#                               build (a build secret, not part of the image)
#
# Needs root, the network to Debian's mirror and to PyPI for the build. The
# image stays (a later build reuses its layers); the containers, the volume
# and the configuration directory it made are removed. Exits non-zero when
# anything fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENGINE=${VOLUMESVC_CONTAINER_ENGINE:-podman}
BASE=${VOLUMESVC_CONTAINER_BASE:-docker.io/library/debian:bookworm-slim}
LOCAL_BASE=localhost/volumesvc-base:bookworm
IMAGE=${VOLUMESVC_IMAGE:-localhost/volumesvc:latest}

log() { printf 'container-check: %s\n' "$*" >&2; }

# Run in the image as volumesvc: volumesvc's privsep context, set up as the
# compute sets it up, reads a console log only root may read (as libvirt
# leaves a guest's), which volumesvc itself may not open.
CONSOLE_LOG=/var/lib/volumesvc/privsep-check/console.log
read -r -d '' PRIVSEP_CHECK <<EOF || true
import getpass
from volumesvc import conf, privsep
from volumesvc.privsep import files
assert getpass.getuser() == "volumesvc", getpass.getuser()
try:
    open("$CONSOLE_LOG").close()
    raise SystemExit("volumesvc may read $CONSOLE_LOG itself: nothing is proved")
except PermissionError:
    pass
settings = conf.get_conf(default_config_files=["/etc/volumesvc/volumesvc.conf"])
privsep.setup(settings)
data, _ = files.privileged_read_tail("$CONSOLE_LOG", 64)
assert data == b"root only\n", data
print("volumesvc root-only read ok")
EOF

# A configuration as an operator mounts it: read-only, one file. Keystone is
# never reached: a request without a token is refused before that, and the
# broker is not needed to answer either request.
read -r -d '' CHECK_CONF <<'EOF' || true
[DEFAULT]
transport_url = rabbit://volumesvc:unused@rabbitmq.invalid:5672/
[database]
connection = sqlite:////var/lib/volumesvc/volumesvc.sqlite
[wsgi]
listen_host = 0.0.0.0
listen_port = 8774
workers = 1
[keystone_authtoken]
www_authenticate_uri = http://keystone.invalid:5000/v3
auth_url = http://keystone.invalid:5000/v3
auth_type = password
EOF

# The whole run is one function that the script's last line calls, so a
# checkout that changes meanwhile does not change the run.
main() {
    [ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
    if ! command -v "$ENGINE" >/dev/null; then
        [ "$ENGINE" = podman ] || { log "$ENGINE is not installed"; exit 1; }
        log "installing podman"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman \
            >/dev/null
    fi

    # podman on Debian 12 defaults to crun 1.8, which refuses a host whose cgroups
    # are in hybrid mode (v1 controllers beside the unified hierarchy); runc runs
    # on v1, hybrid and v2 alike. podman also raises the containers' open-file
    # and process limits by default, which fails where this process's own hard
    # limits are lower and cannot be raised: the containers get fixed, lower ones.
    engine=("$ENGINE")
    limits=(--ulimit nofile=16384:16384 --ulimit nproc=16384:16384)
    if [ "$ENGINE" = podman ]; then
        if ! command -v runc >/dev/null; then
            log "installing runc"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runc \
                >/dev/null
        fi
        engine+=(--runtime runc)
    fi

    image_exists() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

    # The base: the registry's bookworm-slim when it can be had, else a Debian 12
    # minbase made from Debian's own mirror (the same packages, a few more files).
    if ! image_exists "$BASE" && ! "$ENGINE" pull -q "$BASE" >/dev/null 2>&1; then
        log "$BASE cannot be pulled here: importing a Debian 12 minbase as $LOCAL_BASE"
        if ! image_exists "$LOCAL_BASE"; then
            tarball=$("$ROOT/tools/plain-debian-check.sh" --tarball)
            "$ENGINE" import --change 'CMD ["bash"]' "$tarball" "$LOCAL_BASE" >/dev/null
        fi
        BASE=$LOCAL_BASE
    fi

    started=$(date +%s)
    log "building $IMAGE from $BASE"
    # The build's RUN steps fetch from Debian's mirror and PyPI over the host's
    # network: no bridge or NAT is needed for them.
    # Behind a TLS-inspecting proxy pip trusts PyPI only through $PIP_CERT.
    secret=()
    if [ -n "${PIP_CERT:-}" ] && [ -r "$PIP_CERT" ]; then secret=(--secret "id=pip-cert,src=$PIP_CERT"); fi
    "${engine[@]}" build -q --network host "${limits[@]}" --build-arg "BASE=$BASE" "${secret[@]}" \
        -f "$ROOT/containers/Containerfile" -t "$IMAGE" "$ROOT" >/dev/null
    log "built in $(( $(date +%s) - started )) s"

    run_id=volumesvc-check-$$
    conf_dir=$(mktemp -d -t "$run_id.XXXXXX")
    cleanup() {
        local rc=$?
        trap - EXIT INT TERM
        if [ "$rc" != 0 ] && "$ENGINE" container inspect "$run_id-api" >/dev/null 2>&1; then
            log "the API container's log:"; "$ENGINE" logs "$run_id-api" >&2 || true
        fi
        "$ENGINE" rm -f -t 5 "$run_id-api" >/dev/null 2>&1 || true
        "$ENGINE" volume rm -f "$run_id" >/dev/null 2>&1 || true
        rm -rf "$conf_dir"
        exit "$rc"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM

    printf '%s\n' "$CHECK_CONF" >"$conf_dir/volumesvc.conf"
    chmod 0644 "$conf_dir/volumesvc.conf"
    "$ENGINE" volume create "$run_id" >/dev/null
    mounts=(-v "$conf_dir/volumesvc.conf:/etc/volumesvc/volumesvc.conf:ro"
            -v "$run_id:/var/lib/volumesvc")

    log "volumesvc-manage db sync into the volume"
    "${engine[@]}" run --rm --network none "${limits[@]}" "${mounts[@]}" "$IMAGE" manage db sync
    for program in conductor compute status; do
        "${engine[@]}" run --rm --network none "${limits[@]}" "${mounts[@]}" "$IMAGE" "$program" \
                --help >/dev/null \
            || { log "the $program entry point does not run"; exit 1; }
    done

    # The compute's privileged work as the compute does it: volumesvc's privsep
    # daemon started through the image's sudo rule (a privileged container, as
    # the compute's is), reading a file only root may read.
    log "a privsep daemon started as root through sudo, from volumesvc"
    "${engine[@]}" run --rm --network none --user root "${limits[@]}" "${mounts[@]}" \
        --entrypoint /bin/sh "$IMAGE" -c \
        "install -d -m 0700 ${CONSOLE_LOG%/*} && echo 'root only' >$CONSOLE_LOG && chmod 0600 $CONSOLE_LOG"
    shadow=$("${engine[@]}" run --rm --network none --privileged "${limits[@]}" "${mounts[@]}" \
        --entrypoint /opt/volumesvc/bin/python3 "$IMAGE" -c "$PRIVSEP_CHECK") \
        || { log "the compute's privsep daemon did not start through sudo"; exit 1; }
    [ "$shadow" = "volumesvc root-only read ok" ] \
        || { log "privsep check answered: $shadow"; exit 1; }

    # A free loopback port on this machine for the published API.
    port=""
    for _ in $(seq 1 50); do
        candidate=$(( 20000 + RANDOM % 10000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
    done
    [ -n "$port" ] || { log "no free port found"; exit 1; }
    log "API container on 127.0.0.1:$port"
    "${engine[@]}" run -d --name "$run_id-api" "${limits[@]}" -p "127.0.0.1:$port:8774" \
        "${mounts[@]}" "$IMAGE" api >/dev/null

    versions=""
    for _ in $(seq 1 60); do
        versions=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/" 2>/dev/null) && break
        "$ENGINE" container inspect -f '{{.State.Running}}' "$run_id-api" | grep -q true \
            || { log "the API container exited"; exit 1; }
        sleep 1
    done
    printf '%s' "$versions" | grep -q '"id": *"v2.1"' \
        || { log "no v2.1 in the versions document: $versions"; exit 1; }
    status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2.1/servers")
    [ "$status" = 401 ] || { log "GET /v2.1/servers without a token answered $status, not 401"; exit 1; }
    user=$("${engine[@]}" exec "$run_id-api" id -un)
    [ "$user" = volumesvc ] || { log "the API runs as $user, not volumesvc"; exit 1; }
    log "passed: db sync, the compute's privsep daemon through sudo, versions document (200)," \
        "/v2.1/servers without a token (401)," \
        "API as user $user ($(( $(date +%s) - started )) s in all)"
}

main; exit
