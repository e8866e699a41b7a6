#!/usr/bin/env bash
# Where the second wall's cost goes: the members page taken apart, in PostgreSQL's CPU a call.
#
#   scripts/bench/wall-parts.sh [CALLS] [ROUNDS] [MEMBERS]   (2000 5 20)
#
# Needs the local stack up (make up; it seeds a community of MEMBERS through the services, as
# core-read.sh does) and perf (installs linux-perf if missing). Makes copies of
# `app_members_page` for the run (dropped at the end) and calls each CALLS times, one client,
# pgbench `-M prepared`, the variants in turn for ROUNDS rounds. What is measured is the CPU of
# PostgreSQL's postmaster and everything it forks (`perf stat -e task-clock -p`: pgbench's
# backend starts after perf attaches and is counted with it), per call:
#   page:      `app_members_page` as core calls it, as the services' role (the wall);
#   bypassed:  its copy without the entry, as the schema owner (no wall: core-read.sh's
#              pgbench-bypass);
#   entry:     its copy with the entry, as the owner (the bypassed read and the entry);
#   policies:  its copy as the services' role with the settings the entry would set written
#              in as literals (the bypassed read and the policies, no entry);
#   select-1:  a bare `SELECT 1` (what any call costs).
# Prints each variant's median µs a call and its rounds. The machine's spread between rounds
# is large (±20 % on two shared cores): read shares, not sums.
set -euo pipefail
cd "$(dirname "$0")/../.."

CALLS=${1:-2000}
ROUNDS=${2:-5}
MEMBERS=${3:-20}
PG_BIN=/usr/lib/postgresql/15/bin

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
if ! (echo >/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
    echo "the stack is not running: make up first" >&2
    exit 1
fi
command -v perf >/dev/null || { apt-get update -q >&2 && apt-get install -y -q linux-perf >&2; }
command -v gawk >/dev/null || { apt-get update -q >&2 && apt-get install -y -q gawk >&2; }

work=$(mktemp -d)
copies=
stop_helpers() {
    if [[ -n $copies ]]; then
        owner_psql -c "DROP FUNCTION IF EXISTS bench_wall_bypassed, bench_wall_entry, bench_wall_policies" || true
    fi
    rm -rf "$work"
}
trap stop_helpers EXIT

eval "$(python3 scripts/bench/core_read_seed.py "$MEMBERS")"
owner_psql -c "SELECT pg_get_functiondef('app_members_page'::regproc)" >"$work/page.sql"
if ! grep -q "PERFORM app_enter_as_user(viewer);" "$work/page.sql"; then
    echo "the members page's function is not what this script expects" >&2
    exit 1
fi
memberships=$(owner_psql -c "SELECT coalesce(array_agg(community_id), '{}')::text || '|' ||
    coalesce(array_agg(community_id) FILTER (WHERE role = 'admin'), '{}')::text
    FROM members WHERE user_id = '$USER_ID' AND left_at IS NULL")
literals="PERFORM set_config('app.current_user_id', viewer::text, true), set_config('app.member_communities', '${memberships%|*}', true), set_config('app.admin_communities', '${memberships#*|}', true), set_config('app.communities_of', viewer::text, true);"
copies=yes
sed 's/app_members_page/bench_wall_bypassed/g; /PERFORM app_enter_as_user(viewer);/d' "$work/page.sql" >"$work/bypassed.sql"
sed 's/app_members_page/bench_wall_entry/g' "$work/page.sql" >"$work/entry.sql"
sed "s/app_members_page/bench_wall_policies/g; s/PERFORM app_enter_as_user(viewer);/$literals/" "$work/page.sql" >"$work/policies.sql"
for copy in bypassed entry policies; do owner_psql -v ON_ERROR_STOP=1 -f "$work/$copy.sql"; done
owner_psql -v ON_ERROR_STOP=1 -c "GRANT EXECUTE ON FUNCTION bench_wall_policies(uuid, uuid, timestamptz, uuid, integer) TO orbitcove_app"

call() { echo "SELECT * FROM $1(:user_id, :community, NULL::timestamptz, NULL::uuid, 21);"; }
call app_members_page >"$work/page.pgb"
call bench_wall_bypassed >"$work/bypassed.pgb"
call bench_wall_entry >"$work/entry.pgb"
call bench_wall_policies >"$work/policies.pgb"
echo "SELECT 1;" >"$work/select-1.pgb"
# Each copy answers the page the function does, so the figures are of the same read.
expected=$(app_psql -c "$(sed "s/:user_id/'$USER_ID'/; s/:community/'$COMMUNITY'/" "$work/page.pgb")" | md5sum)
for copy in bypassed entry; do
    got=$(owner_psql -c "$(sed "s/:user_id/'$USER_ID'/; s/:community/'$COMMUNITY'/" "$work/$copy.pgb")" | md5sum)
    [[ $got == "$expected" ]] || { echo "bench_wall_$copy answers another page" >&2; exit 1; }
done
got=$(app_psql -c "$(sed "s/:user_id/'$USER_ID'/; s/:community/'$COMMUNITY'/" "$work/policies.pgb")" | md5sum)
[[ $got == "$expected" ]] || { echo "bench_wall_policies answers another page" >&2; exit 1; }

postmaster=$(head -1 .local/postgres/postmaster.pid)
# measure ROLE SCRIPT: µs of PostgreSQL's CPU a call.
measure() {
    local milliseconds
    milliseconds=$(perf stat -x, -e task-clock -p "$postmaster" -- env PGPASSWORD="$1" "$PG_BIN/pgbench" -n \
        -h 127.0.0.1 -p 55432 -U "$1" -M prepared -c 1 -j 1 -t "$CALLS" -D user_id="$USER_ID" \
        -D community="$COMMUNITY" -f "$2" orbitcove 2>&1 >/dev/null | awk -F, '/task-clock/ { print $1 }')
    if [[ -z $milliseconds ]]; then
        echo "perf or pgbench failed for $2" >&2
        return 1
    fi
    awk -v ms="$milliseconds" -v n="$CALLS" 'BEGIN { printf "%.1f", ms * 1000 / n }'
}
# row LABEL ROLE SCRIPT: one variant's line, or the script's end when it could not be measured.
row() {
    local microseconds
    microseconds=$(measure "$2" "$3") || exit 1
    echo "$1 $microseconds"
}
echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3); $CALLS calls a run, $ROUNDS rounds, $MEMBERS members"
for round in $(seq "$ROUNDS"); do
    row page orbitcove_app "$work/page.pgb"
    row bypassed orbitcove_owner "$work/bypassed.pgb"
    row entry orbitcove_owner "$work/entry.pgb"
    row policies orbitcove_app "$work/policies.pgb"
    row select-1 orbitcove_app "$work/select-1.pgb"
done | tee "$work/runs" >&2
[[ ${PIPESTATUS[0]} == 0 ]] || exit 1
gawk '{ runs[$1] = runs[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; names[++count] = $1 } }
    END { for (i = 1; i <= count; i++) { name = names[i]; n = split(substr(runs[name], 2), sorted, " "); asort(sorted)
          printf "%-9s median_us=%s rounds:%s\n", name, sorted[int((n + 1) / 2)], runs[name] } }' "$work/runs"
