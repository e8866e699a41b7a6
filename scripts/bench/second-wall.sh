#!/usr/bin/env bash
# What the second wall (row-level security) costs the core reads: the two reads of
# scripts/bench/core-reads.sql run by pgbench as the services' role (entering as a member,
# row-level security on) and as the schema owner (which it does not apply to, with
# app.current_user_id set alone), in both protocols, on a scratch database of its own.
#
#   scripts/bench/second-wall.sh [SECONDS] [CONNECTIONS] [DATABASE]   (10 16 orbitcove_wall)
#
# Needs PostgreSQL from the local stack (make servers) and a build (orbitcove-admin migrates
# the database); the services need not run. Creates, migrates and seeds DATABASE if it does
# not exist yet: 2,000 people, a club of 20 (the reader is its last member, as in
# core-read.sh) and 199 other communities of 20. Prints per protocol the two rates and
# bypassed / rls, what the wall costs (goal: at most 1.5). Sends traffic to loopback only.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
DATABASE=${3:-orbitcove_wall}
PG_BIN=/usr/lib/postgresql/15/bin
OWNER_URL="postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:55432"
USER_ID=00000000-0000-4000-8000-000000000014
COMMUNITY=00000000-0000-4000-9000-000000000001

owner_psql() { PGPASSWORD=orbitcove_owner "$PG_BIN/psql" -h 127.0.0.1 -p 55432 -U orbitcove_owner -X -q -v ON_ERROR_STOP=1 "$@"; }

if [[ -z $(owner_psql -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'") ]]; then
    owner_psql -d postgres -c "CREATE DATABASE \"$DATABASE\" OWNER orbitcove_owner"
    ORBITCOVE_MIGRATION_DATABASE_URL="$OWNER_URL/$DATABASE" ./scripts/stack.sh migrate >&2
    owner_psql -d "$DATABASE" -1 <<'SQL'
INSERT INTO users (id, apple_id, email, display_name)
SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'bench:' || n, 'u' || n || '@example.com',
       'Person ' || n
FROM generate_series(1, 2000) n;
INSERT INTO communities (id, name, created_by)
SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(c), 12, '0'))::uuid,
       CASE c WHEN 1 THEN 'Benchmark club' ELSE 'Other ' || c END,
       ('00000000-0000-4000-8000-' || lpad(to_hex(CASE c WHEN 1 THEN 1 ELSE 21 + (c * 7) % 1979 END), 12, '0'))::uuid
FROM generate_series(1, 200) c;
-- The club: people 1 to 20, the first its admin, joining a minute apart.
INSERT INTO members (community_id, user_id, role, joined_at, first_joined_at)
SELECT '00000000-0000-4000-9000-000000000001', ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid,
       CASE n WHEN 1 THEN 'admin' ELSE 'member' END::member_role, now() - (100 - n) * interval '1 minute',
       now() - (100 - n) * interval '1 minute'
FROM generate_series(1, 20) n;
-- The others: their creator (the admin, k = 0) and 19 more of people 21 to 1999.
INSERT INTO members (community_id, user_id, role)
SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(c), 12, '0'))::uuid,
       ('00000000-0000-4000-8000-' || lpad(to_hex(21 + (c * 7 + k * 13) % 1979), 12, '0'))::uuid,
       CASE k WHEN 0 THEN 'admin' ELSE 'member' END::member_role
FROM generate_series(2, 200) c, generate_series(0, 19) k;
ANALYZE users, communities, members;
SQL
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp scripts/bench/core-reads.sql "$work/rls.sql"
sed "s/SELECT app_enter_as_user(:user_id);/SELECT set_config('app.current_user_id', :user_id, true);/" \
    "$work/rls.sql" >"$work/bypassed.sql"

# rate ROLE MODE SCRIPT: pgbench transactions per second (each is both reads).
rate() {
    PGPASSWORD=$1 "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U "$1" -M "$2" -c "$CONNECTIONS" -j 2 \
        -T "$SECONDS_PER_RUN" -D user_id="$USER_ID" -D community="$COMMUNITY" -f "$3" "$DATABASE" 2>/dev/null \
        | awk '/^tps = / { printf "%.0f", $3 }'
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); PostgreSQL" \
    "$("$PG_BIN/postgres" --version | cut -d' ' -f3); $CONNECTIONS connections, ${SECONDS_PER_RUN}s per run"
for mode in extended prepared; do
    rls=$(rate orbitcove_app "$mode" "$work/rls.sql")
    bypassed=$(rate orbitcove_owner "$mode" "$work/bypassed.sql")
    echo "mode=$mode rls_tps=$rls bypassed_tps=$bypassed" \
        "wall=$(awk -v b="$bypassed" -v r="$rls" 'BEGIN { printf "%.2f", b / r }')"
done
