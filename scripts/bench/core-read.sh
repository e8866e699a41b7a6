#!/usr/bin/env bash
# Core read benchmark: the hot read path through the gateway, cached and uncached, each beside
# a reference doing the same work without the service, at the same concurrency, in one run.
#
#   scripts/bench/core-read.sh [SECONDS] [CONNECTIONS] [ROUNDS] [MEMBERS]   (15 16 3 20)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down), seeds a community of MEMBERS people, then per round:
#   http:     wrk through nginx on 127.0.0.1:8080 as one member, alternating
#             GET /api/v1/communities/{id} and GET /api/v1/communities/{id}/members?limit=20
#             (token verification, rate limiting, membership check and cache in Redis, RLS on);
#             every answer comes from the cache (warmed before the first round);
#   static:   the cached reads' reference: wrk on a second nginx configured like the gateway
#             (2 workers, an access log), serving the two answers' exact bodies as files,
#             alternating the same way: what answering with bytes already at hand costs here;
#   proxied:  the same nginx proxying (HTTP/1.1, kept-alive upstream connections, as the
#             gateway does) to that static server: the gateway's hop plus an upstream that
#             answers at once, the most any service behind the gateway could reach;
#   hummingbird: the same nginx proxying the same way to a Hummingbird server answering the
#             same bodies from memory (orbitcove-http-floor --plumbing bare): the most a
#             service on Hummingbird could reach behind the gateway;
#   plumbing: the same, on the services' own router and server (orbitcove-http-floor
#             --plumbing service: request ids, metrics, the error envelope, idle timeouts) with
#             no token, rate limit or cache: "http / plumbing" is what core's own work leaves;
#   uncached: wrk straight to a second core on 127.0.0.1:8092 with the cache off
#             (ORBITCOVE_CORE_CACHE_SECONDS=0): the same two requests, each from PostgreSQL;
#   pgbench:  the uncached reads' reference: the statements core runs for those two requests
#             (scripts/bench/core-reads-service.sql: each gate's one-statement read, then the
#             members page as one statement that enters as the member, RLS on), -M prepared as
#             core prepares them; one pgbench transaction is the two requests, so its rate counts
#             twice. pgbench-extended: the same, planned every time (-M extended);
#   postgresnio-prepared, postgresnio-extended: the same script through PostgresNIO, the
#             driver core uses (orbitcove-sql-bench: one held connection per client, every row
#             read), so "uncached / pgbench" splits into what the driver reaches and what the
#             service adds on top;
#   pgbench-bypass: the same statements as the schema owner, which row-level security does
#             not apply to, the members page's function without its entry (no wall work at
#             all): the summary's "pgbench-bypass / pgbench" is what the second wall costs
#             (goal: at most 1.5).
# Goals: http at least 0.75 of static (proxied printed beside it); uncached at least 0.75 of
# pgbench.
# Beside each run's rate, a `cpu=` line: the milliseconds of CPU each part of the stack (core,
# nginx, PostgreSQL's backends, …) and the load's client spent per request, and a table of
# their medians at the end: the machine's two cores are what every part shares, so a rate is
# read through where its time went.
# Stops the stack again at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-15}
CONNECTIONS=${2:-16}
ROUNDS=${3:-3}
MEMBERS=${4:-20}
PG_BIN=/usr/lib/postgresql/15/bin

work=$(mktemp -d)
uncached=
floors=()
static_nginx=
bypassed=
stop_helpers() {
    if [[ -n $bypassed ]]; then owner_psql -c "DROP FUNCTION IF EXISTS bench_members_page_bypassed" || true; fi
    if [[ -n $uncached ]]; then kill -TERM "$uncached" 2>/dev/null && wait "$uncached" 2>/dev/null || true; fi
    for floor in "${floors[@]}"; do kill -TERM "$floor" 2>/dev/null && wait "$floor" 2>/dev/null || true; done
    if [[ -n $static_nginx ]]; then nginx -p "$work/static/" -c "$work/static/nginx.conf" -s quit 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack
BIN=$(swift build -c release --show-bin-path)

seeded=$(python3 scripts/bench/core_read_seed.py "$MEMBERS")
eval "$seeded"
community_path=/api/v1/communities/$COMMUNITY
members_path="/api/v1/communities/$COMMUNITY/members?limit=20"

# The second core: the cache off, on its own port.
ORBITCOVE_HTTP_PORT=8092 ORBITCOVE_CORE_CACHE_SECONDS=0 ORBITCOVE_LOG_LEVEL=warning \
    ORBITCOVE_CORE_READS_PER_MINUTE=1000000000 \
    "$BIN/orbitcove-core" >>.local/logs/core-uncached.log 2>&1 &
uncached=$!

# The static reference: the answers' bodies as the gateway returns them.
mkdir -p "$work/static/logs" "$work/static/temp" "$work/static/root"
curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8080$community_path" >"$work/static/root/community.json"
curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8080$members_path" >"$work/static/root/members.json"
# proxying LISTEN TARGET: a server on LISTEN proxying to TARGET as the gateway proxies to a
# service (HTTP/1.1, kept-alive upstream connections, the client's address and a request id).
proxying() {
    cat <<BLOCK
    upstream to_$2 { server 127.0.0.1:$2; keepalive 32; }
    server {
        listen 127.0.0.1:$1;
        location / {
            proxy_pass http://to_$2;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Request-Id \$request_id;
        }
    }
BLOCK
}
cat >"$work/static/nginx.conf" <<CONF
daemon on;
worker_processes 2;
pid $work/static/nginx.pid;
error_log $work/static/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log $work/static/logs/access.log;
    client_body_temp_path $work/static/temp;
    keepalive_timeout 65s;
    sendfile on;
    server {
        listen 127.0.0.1:8093;
        default_type application/json;
        location = $community_path { alias $work/static/root/community.json; }
        location = /api/v1/communities/$COMMUNITY/members { alias $work/static/root/members.json; }
    }
$(proxying 8094 8093)
$(proxying 8095 8096)
$(proxying 8097 8098)
}
CONF
# The framework's floor: the same bodies from memory, on Hummingbird alone and on the services'
# plumbing.
for floor in bare:8096 service:8098; do
    "$BIN/orbitcove-http-floor" --plumbing "${floor%%:*}" --port "${floor##*:}" \
        --answer "$community_path=$work/static/root/community.json" \
        --answer "/api/v1/communities/$COMMUNITY/members=$work/static/root/members.json" \
        >>".local/logs/http-floor-${floor%%:*}.log" 2>&1 &
    floors+=("$!")
done
# nginx's workers run as nobody: they must be able to read the bodies.
chmod 755 "$work" "$work/static" "$work/static/root" && chmod 644 "$work"/static/root/*.json
nginx -p "$work/static/" -c "$work/static/nginx.conf" -e "$work/static/logs/error.log"
static_nginx=1
for _ in $(seq 100); do
    curl -fsS -o /dev/null http://127.0.0.1:8092/health 2>/dev/null && break
    sleep 0.1
done
curl -fsS -o /dev/null http://127.0.0.1:8092/health || { echo "the uncached core did not start" >&2; exit 1; }
for port in 8095 8097; do
    for _ in $(seq 100); do
        curl -fsS -o /dev/null "http://127.0.0.1:$port$community_path" 2>/dev/null && break
        sleep 0.1
    done
    cmp -s <(curl -fsS "http://127.0.0.1:$port$members_path") "$work/static/root/members.json" \
        || { echo "the floor behind :$port does not answer the members page's body" >&2; exit 1; }
done

# One script per client (CLIENT replaced below: wrk's done() runs in a Lua state of its own).
cat >"$work/requests.lua.in" <<EOF
local paths = {"$community_path", "$members_path"}
local headers = {["Authorization"] = "Bearer $TOKEN"}
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", paths[n % 2 + 1], headers)
end
$(wrk_report CLIENT)
EOF
for client in warm http static proxied hummingbird plumbing uncached; do sed "s/CLIENT/$client/" "$work/requests.lua.in" >"$work/$client.lua"; done
# The reads, and the same reads where nothing resolves the caller's communities: what they
# cost without the wall.
cp scripts/bench/core-reads-service.sql "$work/reads.sql"
# The bypassed read: the members page's own function without its entry (app_enter_as_user),
# made from its definition for the run and called as the schema owner, whom row-level security
# does not apply to: the same statements and plans with no wall work (dropped at the end).
owner_psql -c "SELECT pg_get_functiondef('app_members_page'::regproc)" |
    sed 's/app_members_page/bench_members_page_bypassed/g; /PERFORM app_enter_as_user(/d' >"$work/bypassed.sql"
if grep -q "app_enter_as_user(" "$work/bypassed.sql" || ! grep -q "bench_members_page_bypassed" "$work/bypassed.sql"; then
    echo "the members page's function is not what the bypassed read expects" >&2
    exit 1
fi
owner_psql -v ON_ERROR_STOP=1 -f "$work/bypassed.sql"
bypassed=yes
sed 's/app_members_page/bench_members_page_bypassed/' "$work/reads.sql" >"$work/reads-bypass.sql"
SQL_BENCH="$BIN/orbitcove-sql-bench"

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); $CONNECTIONS connections, ${SECONDS_PER_RUN}s per run, $MEMBERS members;" \
    "bodies $(stat -c %s "$work/static/root/community.json") and $(stat -c %s "$work/static/root/members.json") bytes"
results="$work/results"
# pgbench_reads CLIENT ROLE SCRIPT MODE: one pgbench run of SCRIPT as ROLE (its password is its name).
pgbench_reads() {
    PGPASSWORD=$2 "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U "$2" -M "$4" \
        -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" -D user_id="$USER_ID" -D community="$COMMUNITY" -D limit=21 \
        -f "$3" orbitcove 2>/dev/null \
        | awk -v client="$1" '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=%s requests_per_s=%.1f errors=%d\n", client, tps * 2, failed }'
}
# driver_reads MODE: the services' statements through PostgresNIO in MODE (prepared, extended).
driver_reads() {
    "$SQL_BENCH" --script "$work/reads.sql" --set user_id="$USER_ID" --set community="$COMMUNITY" --set limit=21 \
        --clients "$CONNECTIONS" --seconds "$SECONDS_PER_RUN" --requests-per-transaction 2 --mode "$1" \
        --label "postgresnio-$1"
}
# http_reads CLIENT URL: one wrk run of the two requests.
http_reads() {
    wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/$1.lua" "$2"
}
# Each run prints its rate and, on a `cpu=` line, the CPU each part spent per request (measured;
# the second core and the second nginx as core-uncached and nginx-static).
CPU_ALSO="core-uncached=$uncached nginx-static=$(cat "$work/static/nginx.pid" 2>/dev/null)"
CPU_ALSO+=" hummingbird=${floors[0]} plumbing=${floors[1]}"
# Every cached answer in place before the first round.
wrk -t 1 -c 1 -d 1s -s "$work/warm.lua" http://127.0.0.1:8080 >/dev/null
for round in $(seq "$ROUNDS"); do
    measured http "$SECONDS_PER_RUN" "$results" http_reads http http://127.0.0.1:8080
    measured static "$SECONDS_PER_RUN" "$results" http_reads static http://127.0.0.1:8093
    measured proxied "$SECONDS_PER_RUN" "$results" http_reads proxied http://127.0.0.1:8094
    measured hummingbird "$SECONDS_PER_RUN" "$results" http_reads hummingbird http://127.0.0.1:8095
    measured plumbing "$SECONDS_PER_RUN" "$results" http_reads plumbing http://127.0.0.1:8097
    measured uncached "$SECONDS_PER_RUN" "$results" http_reads uncached http://127.0.0.1:8092
    measured pgbench "$SECONDS_PER_RUN" "$results" pgbench_reads pgbench orbitcove_app "$work/reads.sql" prepared
    measured pgbench-extended "$SECONDS_PER_RUN" "$results" \
        pgbench_reads pgbench-extended orbitcove_app "$work/reads.sql" extended
    measured postgresnio-prepared "$SECONDS_PER_RUN" "$results" driver_reads prepared
    measured postgresnio-extended "$SECONDS_PER_RUN" "$results" driver_reads extended
    measured pgbench-bypass "$SECONDS_PER_RUN" "$results" \
        pgbench_reads pgbench-bypass orbitcove_owner "$work/reads-bypass.sql" prepared
done

python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference static
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference proxied --no-cpu
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference plumbing --no-cpu
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference pgbench --no-cpu
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference postgresnio-prepared --no-cpu
