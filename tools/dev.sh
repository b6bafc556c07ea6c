#!/usr/bin/env bash
# Developer entry point: each sub-command installs what it needs first.
#
#   tools/dev.sh aio [volumesvc-aio args]   bring up the all-in-one (foreground)
#   tools/dev.sh test [pytest args]         ruff, mypy, docs, then the whole suite: unit, lab,
#                                           fuzz and functional, then the kill matrix, beside
#                                           integration (two pytest runs at once); with args,
#                                           one pytest run of those
#   tools/dev.sh tempest [--state-dir D]    tempest's listed compute API tests against the
#                                           running keystone all-in-one (state dir D)
#   tools/dev.sh cluster [start|stop] [--state-dir D] [--database postgresql|mariadb]
#                                           several hosts on this machine (foreground): computes
#                                           in network namespaces, 2 API nodes behind HAProxy,
#                                           2 conductors, a 3-node RabbitMQ cluster, PostgreSQL
#                                           (or MariaDB for volumesvc's database); --help lists
#                                           the rest (--compute-driver fake, --port-offset)
#   tools/dev.sh setup                      only install (system packages, services, venv)
#
# Idempotent: on a machine that already has everything it only checks.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VOLUMESVC_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}
# The system packages (OpenStack's bindep format) and the tested versions of
# every Python dependency: the one list of each.
BINDEP=${VOLUMESVC_BINDEP:-$ROOT/bindep.txt}
CONSTRAINTS=$ROOT/upper-constraints.txt
# Processes of the functional tier's run in `test` (pytest-xdist).
FUNCTIONAL_WORKERS=${VOLUMESVC_FUNCTIONAL_WORKERS:-3}
# Integration packages run beside the rest of that tier in `test`, e.g.
# "tests/integration/cluster tests/integration/keystone" (empty: one run).
INTEGRATION_SIDE=${VOLUMESVC_INTEGRATION_SIDE:-}
# bindep.txt's profiles dev.sh installs: the tests' and the all-in-one's
# (the cluster sub-command adds its own).
PROFILES="test aio"

log() { printf 'dev.sh: %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# The platforms bindep would match on this machine: dpkg, the distribution's
# ID (and the ones it is like) and ID-VERSION_ID, e.g. "dpkg debian debian-12".
platform_tags() {
    command -v dpkg-query >/dev/null && echo dpkg
    # shellcheck disable=SC1091
    [ -r /etc/os-release ] && (. /etc/os-release; echo "${ID:-} ${ID_LIKE:-} ${ID:-}-${VERSION_ID:-}")
    return 0
}

# bindep_packages FILE "PLATFORMS" "PROFILES": the names on FILE's lines that
# apply here, as bindep decides it without needing bindep. A line's selectors
# (in brackets) are platform:X or profile names, either negated with "!". A
# negated selector that matches drops the line; so does a line with positive
# platform selectors none of which matches, or with positive profiles none of
# which is asked for. A line without profiles is for every profile.
bindep_packages() {
    awk -v platforms="$2" -v profiles="$3" '
        BEGIN {
            n = split(platforms, a, " "); for (i = 1; i <= n; i++) plat[a[i]] = 1
            n = split(profiles, a, " "); for (i = 1; i <= n; i++) prof[a[i]] = 1
        }
        { sub(/#.*/, "") }
        NF == 0 { next }
        {
            sel = ""
            lb = index($0, "["); rb = index($0, "]")
            if (lb && rb > lb) sel = substr($0, lb + 1, rb - lb - 1)
            n = split(sel, s, " ")
            want_plat = 0; plat_ok = 0; want_prof = 0; prof_ok = 0; drop = 0
            for (i = 1; i <= n; i++) {
                neg = substr(s[i], 1, 1) == "!"
                name = neg ? substr(s[i], 2) : s[i]
                if (name ~ /^platform:/) {
                    key = substr(name, 10); hit = (key in plat)
                    if (neg) { if (hit) drop = 1 } else { want_plat = 1; if (hit) plat_ok = 1 }
                } else {
                    hit = (name in prof)
                    if (neg) { if (hit) drop = 1 } else { want_prof = 1; if (hit) prof_ok = 1 }
                }
            }
            if (drop || (want_plat && !plat_ok) || (want_prof && !prof_ok)) next
            print $1
        }' "$1"
}

dpkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

system_packages() {
    local missing=() wanted p
    mapfile -t wanted < <(bindep_packages "$BINDEP" "$(platform_tags)" "$PROFILES")
    if [ ${#wanted[@]} = 0 ]; then
        log "$BINDEP lists no package for this platform ($(platform_tags))"; exit 1
    fi
    for p in "${wanted[@]}"; do
        # The servers are looked for by their programs, not their packages, so
        # a machine that has them some other way keeps what it has.
        case "$p" in
            rabbitmq-server) command -v rabbitmq-server >/dev/null && continue ;;
            postgresql) command -v pg_ctlcluster >/dev/null && continue ;;
            mariadb-server) [ -x /usr/sbin/mariadbd ] && continue ;;
        esac
        dpkg_installed "$p" || missing+=("$p")
    done
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
    # RabbitMQ, PostgreSQL and MariaDB: start any that is stopped (the same
    # commands work with or without systemd), then make sure the logins the
    # all-in-one and the tests use work.
    if ! port_open 5672; then
        log "starting RabbitMQ"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 ERL_EPMD_ADDRESS=127.0.0.1 \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
            as_root rabbitmq-server -detached
        wait_port 5672 RabbitMQ
    fi
    if ! port_open 5432; then
        log "starting PostgreSQL"
        as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
        wait_port 5432 PostgreSQL
    fi
    if ! port_open 3306; then
        log "starting MariaDB"
        # systemd makes its socket directory; without systemd nobody does.
        as_root install -d -o mysql -g mysql /run/mysqld
        as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd \
            -- --user=mysql
        wait_port 3306 MariaDB
    fi
    postgresql_login
    mariadb_login
}

# tests/fixtures/database.py connects as postgres@127.0.0.1:5432 without a
# password. A stock Debian cluster asks for one over TCP (scram-sha-256), so
# trust that one user from 127.0.0.1, ahead of the stock host lines.
postgresql_login() {
    local line='host all postgres 127.0.0.1/32 trust' hba
    psql_tcp() { PGPASSWORD='' psql -w -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atqc 'SELECT 1'; }
    as_postgres() { (cd / && as_root runuser -u postgres -- psql -Atqc "$1"); }
    psql_tcp >/dev/null 2>&1 && return 0
    hba=$(as_postgres 'SHOW hba_file')
    log "PostgreSQL: trusting postgres@127.0.0.1 in $hba"
    if ! as_root grep -qx "$line" "$hba"; then
        as_root sed -i "0,/^[[:space:]]*host[[:space:]]/s//${line//\//\\/}\n&/" "$hba"
        as_root grep -qx "$line" "$hba" || echo "$line" | as_root tee -a "$hba" >/dev/null
    fi
    as_postgres 'SELECT pg_reload_conf()' >/dev/null
    psql_tcp >/dev/null || { log "PostgreSQL still refuses postgres@127.0.0.1"; return 1; }
}

# The all-in-one's Cinder database and tests/fixtures/database.py connect as
# root@127.0.0.1:3306 without a password. A stock mariadb-server lets root in
# only over the unix socket (unix_socket, or an invalid password), and a TCP
# client from 127.0.0.1 is matched as root@localhost first; so root@localhost
# also accepts an empty password (the socket login stays) and root@127.0.0.1
# exists for servers that skip name resolution.
mariadb_login() {
    mariadb_tcp() { mariadb --no-defaults -h 127.0.0.1 -P 3306 -u root -e 'SELECT 1'; }
    mariadb_tcp >/dev/null 2>&1 && return 0
    log "MariaDB: letting root in over TCP from 127.0.0.1 without a password"
    as_root mariadb --no-defaults -u root -e "
        ALTER USER 'root'@'localhost'
            IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        FLUSH PRIVILEGES;"
    mariadb_tcp >/dev/null || { log "MariaDB still refuses root@127.0.0.1"; return 1; }
}

venv() {
    local stamp="$VENV/.volumesvc-installed"
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating virtualenv $VENV"
        "$PY" -m venv "$VENV"
    fi
    if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] \
            || [ "$ROOT/aio/pyproject.toml" -nt "$stamp" ] || [ "$CONSTRAINTS" -nt "$stamp" ]; then
        log "installing volumesvc, the all-in-one (aio/) and the test dependencies"
        "$VENV/bin/pip" install -q --upgrade pip >/dev/null
        # The versions the project is tested with (upper-constraints.txt).
        "$VENV/bin/pip" install -q -c "$CONSTRAINTS" \
            -e "$ROOT[test,doc,libvirt,postgresql,mysql]" -e "$ROOT/aio"
        touch "$stamp"
    fi
}

setup() { system_packages; services; venv; }

# The whole suite as two pytest runs side by side: the in-process tiers
# (unit, lab, fuzz, functional) and the integration tier, whose time is mostly
# spent waiting on real services and QEMU. The in-process run's output goes
# to a file and is printed after; each run's exit status counts, and 5 (no
# tests collected) is a failure.
run_tiers() {
    local fast_log status_file rc_func rc_fast rc_kill rc_int d int_report started
    # A new directory of tests must join one of the two runs, never be left out.
    if compgen -G 'tests/test_*.py' >/dev/null; then
        log "tests/ holds test files outside the tier directories"; exit 1
    fi
    for d in tests/*/; do
        d=${d%/}
        case "$d" in
            tests/unit|tests/lab|tests/fuzz|tests/functional|tests/killmatrix|tests/integration)
                continue ;;
        esac
        if find "$d" -name 'test_*.py' | grep -q .; then
            log "$d holds tests that neither run collects: add it to run_tiers"; exit 1
        fi
    done
    fast_log=$(mktemp -t volumesvc-fast-tiers.XXXXXX)
    status_file=$(mktemp -t volumesvc-fast-status.XXXXXX)
    log "unit, lab, fuzz, functional, then kill-matrix tiers in the background (output: $fast_log)"
    # The order a single run over tests/ takes (functional, fuzz, lab, unit):
    # the fuzz tier's stacks run after the functional tier's, as they always
    # have; lab is the all-in-one's and the benchmarks' own logic. The kill
    # matrix (separate processes, its own Cinder) is a second run once those
    # are done, so it runs beside the integration tier, not beside them.
    # The functional tier's tests mostly wait (on their stacks' threads and
    # polls, a third of one core on its own), so it runs in $FUNCTIONAL_WORKERS
    # processes; the fuzz tier's summary counts cases in one process.
    # Each run's line in the status file: its name, exit status and seconds.
    (
        set +e
        SECONDS=0
        "$VENV/bin/pytest" -p no:cacheprovider -ra --durations=20 \
            -n "$FUNCTIONAL_WORKERS" tests/functional
        echo "functional $? $SECONDS" >>"$status_file"
        SECONDS=0
        "$VENV/bin/pytest" -p no:cacheprovider -ra --durations=20 \
            tests/fuzz tests/lab tests/unit
        echo "fast $? $SECONDS" >>"$status_file"
        SECONDS=0
        "$VENV/bin/pytest" -p no:cacheprovider -ra --durations=20 tests/killmatrix
        echo "killmatrix $? $SECONDS" >>"$status_file"
    ) >"$fast_log" 2>&1 &
    local fast_pid=$!
    # The integration tier, or two runs of it at once: the packages named in
    # $INTEGRATION_SIDE in the background (output printed when they end),
    # the rest of tests/integration here. Its tests wait on real services
    # far more than they compute: the whole suite kept the two cores less
    # than half busy, in one integration run.
    local side_log side_report side_pid rc_side=0 ignores=() pkg
    int_report=$(mktemp -t volumesvc-integration.XXXXXX.xml)
    side_report=$(mktemp -t volumesvc-integration-side.XXXXXX.xml)
    side_log=$(mktemp -t volumesvc-integration-side.XXXXXX)
    started=$SECONDS
    set +e
    if [ -n "$INTEGRATION_SIDE" ]; then
        log "integration tier: $INTEGRATION_SIDE in the background (output: $side_log)"
        # shellcheck disable=SC2086 # a list of directories
        "$VENV/bin/pytest" -p no:cacheprovider -ra --durations=20 \
            --junitxml="$side_report" $INTEGRATION_SIDE >"$side_log" 2>&1 &
        side_pid=$!
        for pkg in $INTEGRATION_SIDE; do ignores+=(--ignore="$pkg"); done
    fi
    log "integration tier${INTEGRATION_SIDE:+ (the rest)}"
    "$VENV/bin/pytest" -p no:cacheprovider -ra --durations=30 --junitxml="$int_report" \
        "${ignores[@]}" tests/integration
    rc_int=$?
    if [ -n "$INTEGRATION_SIDE" ]; then
        wait "$side_pid"; rc_side=$?
        log "integration tier, $INTEGRATION_SIDE:"
        cat "$side_log"
    fi
    wait "$fast_pid"
    set -e
    # A run that never wrote its status (the job killed) counts as failed.
    rc_fast=$(awk '$1 == "fast" {print $2}' "$status_file"); rc_fast=${rc_fast:-1}
    rc_func=$(awk '$1 == "functional" {print $2}' "$status_file"); rc_func=${rc_func:-1}
    rc_kill=$(awk '$1 == "killmatrix" {print $2}' "$status_file"); rc_kill=${rc_kill:-1}
    log "unit, lab, fuzz, functional and kill-matrix tiers:"
    cat "$fast_log"
    local tier_times
    tier_times=$(awk '{printf "%s%s %d min %d s", sep, $1, $3 / 60, $3 % 60; sep = ", "}' \
        "$status_file")
    rm -f "$status_file"
    # Last, so that the tail of a CI log keeps it: where the integration
    # tier's time went (the test command's time budget is mostly its).
    log "background runs (fast = fuzz, lab and unit): $tier_times"
    log "integration tier: $(( (SECONDS - started) / 60 )) min wall time"
    "$VENV/bin/python" tools/tier-times.py "$int_report" \
        ${INTEGRATION_SIDE:+"$side_report"} --label "integration tier"
    rm -f "$int_report" "$side_report"
    # A CI log shown by its tail still says why a background tier failed.
    if [ "$rc_func" != 0 ] || [ "$rc_fast" != 0 ] || [ "$rc_kill" != 0 ]; then
        log "why the background tiers failed (their assertion lines):"
        grep -E '^(FAILED|ERROR) |^E  ' "$fast_log" | cut -c1-400 | head -60
    fi
    if [ "$rc_side" != 0 ]; then
        log "why the integration run of $INTEGRATION_SIDE failed (its assertion lines):"
        grep -E '^(FAILED|ERROR) |^E  ' "$side_log" | cut -c1-400 | head -60
    fi
    rm -f "$fast_log" "$side_log"
    log "exit status: functional $rc_func, unit/lab/fuzz $rc_fast, killmatrix $rc_kill," \
        "integration $rc_int${INTEGRATION_SIDE:+, integration ($INTEGRATION_SIDE) $rc_side}"
    local rc
    for rc in "$rc_func" "$rc_fast" "$rc_kill" "$rc_int" "$rc_side"; do
        if [ "$rc" = 5 ]; then log "no tests ran in a tier"; exit 1; fi
    done
    for rc in "$rc_func" "$rc_fast" "$rc_kill" "$rc_side"; do
        if [ "$rc" != 0 ]; then exit "$rc"; fi
    done
    exit "$rc_int"
}

# Sourced (the unit tests call bindep_packages): define the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

cmd=${1:-}
shift || true
case "$cmd" in
    setup) setup ;;
    aio)
        setup
        exec "$VENV/bin/volumesvc-aio" "$@"
        ;;
    cluster)
        PROFILES="$PROFILES cluster"
        setup
        exec "$VENV/bin/python" -m volumesvc_aio.cluster "$@"
        ;;
    tempest)
        setup
        exec "$VENV/bin/python" -m volumesvc_aio.tempest "$@"
        ;;
    test)
        setup
        cd "$ROOT"
        # Lint and type errors fail fast, before the long test run.
        "$VENV/bin/ruff" check volumesvc aio tests benchmarks
        "$VENV/bin/mypy" volumesvc
        # The documentation builds without a warning and the release notes lint.
        "$VENV/bin/sphinx-build" -q -W --keep-going -b html doc/source doc/build/html
        "$VENV/bin/reno" lint
        if [ $# -gt 0 ]; then
            set +e
            "$VENV/bin/pytest" -p no:cacheprovider -ra "$@"
            rc=$?
            set -e
            # pytest's 5 means "no tests ran": that is a failure here.
            if [ $rc = 5 ]; then log "no tests ran"; exit 1; fi
            exit $rc
        fi
        run_tiers
        ;;
    *)
        sed -n '2,18p' "$0" >&2
        exit 2
        ;;
esac
