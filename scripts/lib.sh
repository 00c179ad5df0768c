# Shared by the scripts: the repo, the runtime folder, the defaults of
# ../shared/API.md, and small helpers. Sourced, not run.

ADSERVE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ADSERVE_BUILD=${ADSERVE_BUILD:-$ADSERVE_ROOT/build}
ADSERVE_MODULE=$ADSERVE_BUILD/nginx/ngx_http_adserve_module.so
# the tests run a sidecar built with AddressSanitizer + UBSan instead
ADSERVE_SIDECAR=${ADSERVE_SIDECAR_BIN:-$ADSERVE_BUILD/sidecar/adserve-sidecar}
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}
REDIS_BIN=${REDIS_BIN:-/usr/bin/redis-server}

say()  { printf '%s\n' "$*" >&2; }
step() { printf '==> %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# as root, or through sudo when there is one (never interactive)
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

# wait_up SECONDS DESCRIPTION PIDFILE LOG COMMAND...: polls until the
# command (which must time out on its own) succeeds. A process that died
# (a port taken, a bad setting) fails at once rather than at the deadline;
# either way the end of its log says why.
wait_up() {
    local secs=$1 what=$2 pidfile=$3 log=$4 pid end=$((SECONDS + $1))
    shift 4
    while [ "$SECONDS" -lt "$end" ]; do
        "$@" >/dev/null 2>&1 && return 0
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            log_tail "$log"
            die "$what exited while starting (log: $log)"
        fi
        sleep 0.1
    done
    log_tail "$log"
    die "$what did not come up within ${secs}s (log: $log)"
}

log_tail() {
    [ -s "$1" ] || return 0
    say "--- the end of $1:"
    tail -n 15 "$1" | sed 's/^/    /' >&2
}

# free_ports N: N distinct ports on 127.0.0.1 that nothing listens on now
# (private stacks). The sockets are held until all are chosen: one at a
# time, the kernel may hand out the same port twice.
free_ports() {
    perl -MIO::Socket::INET -e 'my @s = map { IO::Socket::INET->new(Listen => 1,
        LocalAddr => "127.0.0.1", LocalPort => 0) or die "no free port: $!\n" } 1 .. $ARGV[0];
        print join(" ", map { $_->sockport } @s), "\n"' "$1"
}

# The variables of ../shared/API.md, with their defaults.
adserve_env() {
    export ADSERVE_PORT=${ADSERVE_PORT:-8080}
    export ADSERVE_SIDECAR_PORT=${ADSERVE_SIDECAR_PORT:-8081}
    export ADSERVE_REDIS_PORT=${ADSERVE_REDIS_PORT:-6380}
    # the loopback that the sidecar and nginx reach Redis on (make run's
    # Redis listens on both)
    export ADSERVE_REDIS_HOST=${ADSERVE_REDIS_HOST:-127.0.0.1}
    # ADSERVE_REDIS_READ_PORT: where this node's nginx reads its snapshot
    # (a replica of the primary at ADSERVE_REDIS_PORT; README "Many
    # nodes"); what it writes, and caps, go to the primary
    export ADSERVE_REDIS_READ_PORT=${ADSERVE_REDIS_READ_PORT:-$ADSERVE_REDIS_PORT}
    case $ADSERVE_REDIS_HOST in
        127.0.0.1) ADSERVE_REDIS_ADDR=$ADSERVE_REDIS_HOST:$ADSERVE_REDIS_PORT
                   ADSERVE_REDIS_READ_ADDR=$ADSERVE_REDIS_HOST:$ADSERVE_REDIS_READ_PORT ;;
        ::1) ADSERVE_REDIS_ADDR=[$ADSERVE_REDIS_HOST]:$ADSERVE_REDIS_PORT
             ADSERVE_REDIS_READ_ADDR=[$ADSERVE_REDIS_HOST]:$ADSERVE_REDIS_READ_PORT ;;
        *) die "ADSERVE_REDIS_HOST must be 127.0.0.1 or ::1 (make run's Redis is local)" ;;
    esac
    export ADSERVE_REDIS_ADDR ADSERVE_REDIS_READ_ADDR
    # the primary (events, caps, histories): that address, or whatever the
    # sentinels of ADSERVE_REDIS_SENTINELS name, as the sidecar finds it
    export ADSERVE_REDIS_MASTER=${ADSERVE_REDIS_MASTER:-adserve}
    case $ADSERVE_REDIS_MASTER in
        *[!A-Za-z0-9._-]*|'') die "ADSERVE_REDIS_MASTER must be a name of letters, digits, . _ -" ;;
    esac
    if [ -n "${ADSERVE_REDIS_SENTINELS:-}" ]; then
        ADSERVE_REDIS_PRIMARY="adserve_redis_sentinel $ADSERVE_REDIS_MASTER ${ADSERVE_REDIS_SENTINELS//,/ }"
    else
        ADSERVE_REDIS_PRIMARY="adserve_redis_write $ADSERVE_REDIS_ADDR"
    fi
    export ADSERVE_REDIS_PRIMARY
    # the demo publisher's page (make run seeds it unless ADSERVE_DEMO=off)
    export ADSERVE_DEMO_PORT=${ADSERVE_DEMO_PORT:-8082}
    export ADSERVE_DEMO=${ADSERVE_DEMO:-on}
    case $ADSERVE_DEMO in on|off) ;; *) die "ADSERVE_DEMO must be on or off" ;; esac
    export ADSERVE_ADMIN_EMAIL=${ADSERVE_ADMIN_EMAIL:-admin@example.com}
    export ADSERVE_WORKERS=${ADSERVE_WORKERS:-auto}
    # the thread pool of each worker: a full load's parsing, the builds
    export ADSERVE_THREADS=${ADSERVE_THREADS:-1}
    case $ADSERVE_THREADS in ''|*[!0-9]*|0*) die "ADSERVE_THREADS must be a whole number from 1" ;; esac
    export ADSERVE_RATE=${ADSERVE_RATE:-100}      # serving requests/s per client; 0: no limit
    case $ADSERVE_RATE in ''|*[!0-9]*) die "ADSERVE_RATE must be a whole number (0: no limit)" ;; esac
    # where impression and click URLs point: the address browsers reach
    export ADSERVE_PUBLIC_URL=${ADSERVE_PUBLIC_URL:-http://127.0.0.1:$ADSERVE_PORT}
    # how often pacing is recomputed from delivered counts (at most 10s)
    export ADSERVE_PACING_INTERVAL=${ADSERVE_PACING_INTERVAL:-5s}
    # how often each worker flushes its counters and events to Redis (10ms..1s)
    export ADSERVE_FLUSH_INTERVAL=${ADSERVE_FLUSH_INTERVAL:-1s}
    case $ADSERVE_FLUSH_INTERVAL in
        *[0-9]ms|*[0-9]s) ;;
        *) die "ADSERVE_FLUSH_INTERVAL must be a time such as 100ms or 1s" ;;
    esac
    # how long a request waits for its user's caps (read and reservations)
    export ADSERVE_CAP_TIMEOUT=${ADSERVE_CAP_TIMEOUT:-20ms}
    case $ADSERVE_CAP_TIMEOUT in
        *[0-9]ms|*[0-9]s) ;;
        *) die "ADSERVE_CAP_TIMEOUT must be a time such as 20ms" ;;
    esac
    # how long the node trusts its copy of a user's recommendation history
    # after reading it from Redis (0: read Redis for every request)
    export ADSERVE_HISTORY_REFRESH=${ADSERVE_HISTORY_REFRESH:-2s}
    case $ADSERVE_HISTORY_REFRESH in
        0|*[0-9]s) ;;
        *) die "ADSERVE_HISTORY_REFRESH must be 0 or a time in seconds such as 2s" ;;
    esac
    # how long the node holds a user's new history entries, to write a page's
    # answers in one APPEND (0: each answer's at once)
    export ADSERVE_HISTORY_DELAY=${ADSERVE_HISTORY_DELAY:-1s}
    case $ADSERVE_HISTORY_DELAY in
        0|*[0-9]ms|*[0-9]s) ;;
        *) die "ADSERVE_HISTORY_DELAY must be 0 or a time such as 1s or 500ms" ;;
    esac
    # tests and scripts/simulate only: requests may carry X-Adserve-Clock
    export ADSERVE_TEST_CLOCK=${ADSERVE_TEST_CLOCK:-off}
    case $ADSERVE_TEST_CLOCK in on|off) ;; *) die "ADSERVE_TEST_CLOCK must be on or off" ;; esac
    # raw tracking events each worker keeps while Redis cannot take them
    export ADSERVE_EVENT_BUFFER=${ADSERVE_EVENT_BUFFER:-16384}
    case $ADSERVE_EVENT_BUFFER in ''|*[!0-9]*) die "ADSERVE_EVENT_BUFFER must be a whole number (16 to 1048576)" ;; esac
    ADSERVE_VAR=${ADSERVE_VAR:-$ADSERVE_ROOT/var}
    mkdir -p "$ADSERVE_VAR"
    ADSERVE_VAR=$(cd "$ADSERVE_VAR" && pwd)
    export ADSERVE_VAR
    # the media library's files: the sidecar writes them, nginx serves them
    export ADSERVE_MEDIA_DIR=${ADSERVE_MEDIA_DIR:-$ADSERVE_VAR/media}
    RUN=$ADSERVE_VAR/run
    LOG=$ADSERVE_VAR/log
}

# nginx_cmd ARGS...: the stack's nginx (its prefix, configuration and log)
nginx_cmd() {
    "$NGINX_BIN" -p "$ADSERVE_VAR/nginx/" -c "$ADSERVE_VAR/nginx/nginx.conf" \
        -e "$ADSERVE_VAR/log/nginx-error.log" "$@"
}

# alive PIDFILE NAME: the process of the pid file runs, and is NAME
alive() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        tr '\0' ' ' < /proc/"$pid"/cmdline 2>/dev/null | grep -q -- "$2"
}
