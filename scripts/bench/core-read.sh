#!/usr/bin/env bash
# Core read benchmark: the hot read path through the gateway beside pgbench running the same
# SQL, at the same concurrency, in one run.
#
#   scripts/bench/core-read.sh [SECONDS] [CONNECTIONS] [ROUNDS] [MEMBERS]   (15 16 3 20)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down), seeds a community of MEMBERS people, then per round:
#   http:    wrk through nginx on 127.0.0.1:8080 as one member, alternating
#            GET /api/v1/communities/{id} and GET /api/v1/communities/{id}/members?limit=20
#            (token verification, rate limiting, membership check and cache in Redis, RLS on);
#   pgbench: the SQL those two requests run when nothing is cached, as the services' role
#            entering as the member (app_enter_as_user, as Database.transaction(userId:) does;
#            RLS on), prepared statements; one pgbench transaction is the two requests, so its
#            rate counts twice;
#   pgbench-bypass: the same SELECTs as the schema owner, which row-level security does not
#            apply to, with app.current_user_id set alone (no wall work at all). The summary's
#            "pgbench-bypass / pgbench" is what the second wall costs (goal: at most 1.5).
# Stops the stack again at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-15}
CONNECTIONS=${2:-16}
ROUNDS=${3:-3}
MEMBERS=${4:-20}
PG_BIN=/usr/lib/postgresql/15/bin

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

eval "$(python3 scripts/bench/core_read_seed.py "$MEMBERS")"
work=$(mktemp -d)
cat >"$work/requests.lua" <<EOF
local paths = {"/api/v1/communities/$COMMUNITY", "/api/v1/communities/$COMMUNITY/members?limit=20"}
local headers = {["Authorization"] = "Bearer $TOKEN"}
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", paths[n % 2 + 1], headers)
end
done = function(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout
    io.write(string.format("client=http requests_per_s=%.1f errors=%d p50_ms=%.2f p99_ms=%.2f\n",
        summary.requests / (summary.duration / 1e6), errors,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
# The reads, and the same reads where nothing resolves the caller's communities: what they
# cost without the wall.
cp scripts/bench/core-reads.sql "$work/reads.sql"
sed "s/SELECT app_enter_as_user(:user_id);/SELECT set_config('app.current_user_id', :user_id, true);/" \
    "$work/reads.sql" >"$work/reads-bypass.sql"

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); $CONNECTIONS connections, ${SECONDS_PER_RUN}s per run, $MEMBERS members"
results="$work/results"
# pgbench_reads CLIENT ROLE SCRIPT: one pgbench run of SCRIPT as ROLE (its password is its name).
pgbench_reads() {
    PGPASSWORD=$2 "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U "$2" -M prepared \
        -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" -D user_id="$USER_ID" -D community="$COMMUNITY" \
        -f "$3" orbitcove 2>/dev/null \
        | awk -v client="$1" '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=%s requests_per_s=%.1f errors=%d\n", client, tps * 2, failed }' | tee -a "$results"
}
for round in $(seq "$ROUNDS"); do
    wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/requests.lua" http://127.0.0.1:8080 \
        | grep '^client=' | tee -a "$results"
    pgbench_reads pgbench orbitcove_app "$work/reads.sql"
    pgbench_reads pgbench-bypass orbitcove_owner "$work/reads-bypass.sql"
done

python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference pgbench
rm -rf "$work"
