#!/usr/bin/env bash
# Calendar benchmark: the window read and the ICS feed through the gateway, beside pgbench
# running the window read's SQL, in one run.
#
#   scripts/bench/calendar.sh [SECONDS] [CONNECTIONS] [ROUNDS] [FEED_BUILDS] [ANSWERS_PER_SECOND]
#                                                                              (15 16 3 20 5)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down) and seeds three communities in Europe/Berlin with the same 20
# members, each with 200 weekly series and 2,000 single events, and answers from 75% of the
# members to every instance of the next six weeks (scripts/bench/calendar_seed.py). Then:
#   window:  wrk through nginx on 127.0.0.1:8080 as one member, GET …/events for six weeks
#            (token verification, rate limiting, membership from Redis, RLS on, series expanded
#            in Berlin time, every instance with the caller's answers and its counts);
#   pgbench: the two statements that read runs (the digest of the events' versions, the kept
#            window's, so no row comes with it; each instance's counts with the
#            member's own answers, one record a row), in one transaction entered as the member (app_enter_as_user,
#            as Database.transaction(userId:) does), planned
#            on every run as the service's PostgresNIO runs them (pgbench -M extended; with
#            -M prepared PostgreSQL soon switches the answers' join to a generic plan that is
#            six times slower, which the service never uses);
#   postgresnio: pgbench's script through PostgresNIO, the driver core uses (orbitcove-sql-bench,
#            -M extended as well, one held connection per client, every row read): the most a
#            service on this driver could reach, so "window / pgbench" splits into the driver's
#            share and the service's;
#   window-core: the same read straight to core on 127.0.0.1:8082, to show what the gateway
#            and the megabyte it relays cost;
#   window-answered: the window round while another member answers an instance in it through
#            the gateway, yes then no, ANSWERS_PER_SECOND times a second
#            (scripts/bench/window_answers.py): each answer changes the counts every read
#            shows, so the next reads write the window again instead of taking the reader's
#            copy of it (KnownWindows.ReaderCopy); the window round reads a calendar nobody
#            answers, the best case. Its CPU figures include the answers' own work;
#   feed-304: wrk on the member's all-communities feed with a current If-None-Match;
# per round, and once: FEED_BUILDS sequential full builds of that feed (about 5,000 VEVENTs).
# Before the first round, 5 s of the window round not measured (a warm-up: see below).
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
FEED_BUILDS=${4:-20}
ANSWERS_PER_SECOND=${5:-5}
PG_BIN=/usr/lib/postgresql/15/bin

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

echo "seeding (three communities of 2,200 events each) ..." >&2
eval "$(python3 scripts/bench/calendar_seed.py 3 20 200 2000)"
# The seed's 6,600 new events each tell 20 members: let the notifications service finish first.
wait_for_queues
work=$(mktemp -d)
# An access token lives 15 minutes, counted from the start of the seed: sign the member in again.
EMAIL=$(owner_psql -c "SELECT email FROM users WHERE id = '$USER_ID'")
TOKEN=$(curl -s -X POST -H 'content-type: application/json' -H 'x-real-ip: 10.78.0.1' \
    -d "{\"email\":\"$EMAIL\",\"displayName\":\"Bench member\"}" http://127.0.0.1:8081/api/v1/auth/dev |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["accessToken"])')
REACH=$(date -u -d "$FROM - 32 days" +%FT%TZ)
# The window-answered round's answerer: another member of the community, and the first series
# instance of the window without a capacity (so answers move counts, not a waitlist: no
# promotions and their notices counted against the reads).
ANSWERER_EMAIL=$(owner_psql -c "SELECT u.email FROM members m JOIN users u ON u.id = m.user_id
    WHERE m.community_id = '$COMMUNITY' AND m.user_id <> '$USER_ID' AND m.left_at IS NULL ORDER BY u.email LIMIT 1")
ANSWERER_TOKEN=$(curl -s -X POST -H 'content-type: application/json' -H 'x-real-ip: 10.78.0.2' \
    -d "{\"email\":\"$ANSWERER_EMAIL\",\"displayName\":\"Bench answerer\"}" http://127.0.0.1:8081/api/v1/auth/dev |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["accessToken"])')

# EventStore.window's two statements, as Database.transaction(userId:) runs them once a window of
# these rows is kept (KnownWindows): the digest of the candidate rows' versions, which is the
# kept window's, so no row comes with it; then the answers. (When the digest is not the kept
# window's, the same statement returns every candidate's version, and the rows not seen in that
# version are then read whole by id: the first read after a change.)
EVENTS_WHERE="e.community_id = :community AND e.deleted_at IS NULL
      AND CASE
          WHEN e.recurrence_parent_id IS NOT NULL THEN (e.starts_at >= :reach AND e.starts_at < :to)
              OR (e.recurrence_id >= :reach AND e.recurrence_id < :to)
          WHEN e.recurrence_rule IS NOT NULL THEN e.starts_at < :to
              AND (e.recurrence_end IS NULL OR e.recurrence_end >= :reach)
          ELSE e.starts_at >= :reach AND e.starts_at < :to AND (e.starts_at >= :from OR e.ends_at > :from)
      END"
VERSIONS="WITH candidates AS (
    SELECT e.id, e.sequence, e.updated_at FROM events e
    WHERE $EVENTS_WHERE
), versions AS (
    SELECT count(*) AS rows, coalesce(bit_xor(uuid_hash_extended(
        c.id, timestamp_hash_extended(c.updated_at AT TIME ZONE 'UTC', c.sequence))), 0) AS hash
    FROM candidates c
)"
IFS='|' read -r DIGEST_ROWS DIGEST_HASH < <(owner_psql -F '|' -v community="'$COMMUNITY'" -v from="'$FROM'" \
    -v to="'$TO'" -v reach="'$REACH'" <<SQL
$VERSIONS
SELECT v.rows, v.hash FROM versions v;
SQL
)
# The answers statement binds the ids the first one found (series and single events), and the
# earliest instance start the window can show: each series' instances from as long before the
# window as they last, and a day more (EventRecord.instanceReach); overrides where their
# instance was. (Core's upper bound also reaches an override's instance after the window, and
# it reads by id the series of an override moved in from beyond the series' reach: the seed
# has no overrides, so neither changes what is read here.)
IFS='|' read -r IDS ANSWERS_FROM < <(owner_psql -F '|' -v community="'$COMMUNITY'" -v from="'$FROM'" -v to="'$TO'" \
    -v reach="'$REACH'" <<SQL
SELECT coalesce('{' || string_agg(e.id::text, ',') FILTER (WHERE e.recurrence_parent_id IS NULL) || '}', '{}'),
       to_char(least(
           min(:from::timestamptz
               - (greatest(extract(epoch FROM e.ends_at - e.starts_at), 0) + 86400) * interval '1 second')
               FILTER (WHERE e.recurrence_rule IS NOT NULL AND e.recurrence_parent_id IS NULL),
           min(e.recurrence_id), :from::timestamptz) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM events e
WHERE $EVENTS_WHERE;
SQL
)
cat >"$work/window.sql" <<SQL
BEGIN;
SELECT app_enter_as_user(:user_id);
$VERSIONS
SELECT v.rows, v.hash, c.id, c.sequence, c.updated_at
FROM versions v LEFT JOIN candidates c
    ON (v.rows, v.hash) IS DISTINCT FROM (:digest_rows::bigint, :digest_hash::bigint);
SELECT ROW(c.event_id, c.recurrence_id, c.going, c.seats, c.maybe, c.declined, c.waitlisted,
           r.status::text, r.family_member_id, r.plus_ones, r.note, r.waitlisted, r.responded_at,
           r.queued_at, r.id)
FROM event_instance_counts c
LEFT JOIN rsvps r ON r.user_id = :user_id::uuid AND r.event_id = ANY(:ids::uuid[])
    AND r.event_id = c.event_id AND coalesce(r.recurrence_id, '-infinity') = coalesce(c.recurrence_id, '-infinity')
WHERE c.event_id = ANY(:ids::uuid[])
  AND (c.recurrence_id IS NULL OR (c.recurrence_id >= :answers_from AND c.recurrence_id < :to));
COMMIT;
SQL

WINDOW_PATH="/api/v1/communities/$COMMUNITY/events?from=$FROM&to=$TO"
{
    echo "wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    echo "wrk.path = \"$WINDOW_PATH\""
    wrk_report window
} >"$work/window.lua"
sed 's/client=window/client=window-core/' "$work/window.lua" >"$work/window-core.lua"
sed 's/client=window/client=window-answered/' "$work/window.lua" >"$work/window-answered.lua"
read -r ANSWERED_EVENT ANSWERED_INSTANCE < <(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8080$WINDOW_PATH" |
    python3 -c 'import json, sys
events = json.load(sys.stdin)["data"]
event = next(e for e in events if e.get("recurrenceId") and e.get("capacity") is None)
print(event["id"], event["recurrenceId"])')
ETAG=$(curl -s -D - -o "$work/feed.ics" "http://127.0.0.1:8080$FEED" | awk 'tolower($1) == "etag:" { print $2 }' | tr -d '\r')
{
    echo "wrk.headers[\"If-None-Match\"] = '$ETAG'"
    echo "wrk.path = \"$FEED\""
    wrk_report feed-304
} >"$work/feed.lua"
instances=$(curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:8080$WINDOW_PATH" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
vevents=$(grep -c '^BEGIN:VEVENT' "$work/feed.ics")

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); $CONNECTIONS connections, ${SECONDS_PER_RUN}s per run;" \
    "window: $instances instances, $ANSWERS answers seeded; feed: $vevents VEVENTs, $(wc -c <"$work/feed.ics") bytes"
results="$work/results"
window_pgbench() {
    PGPASSWORD=orbitcove_app "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U orbitcove_app -M extended \
        -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" -D user_id="$USER_ID" -D community="$COMMUNITY" \
        -D from="$FROM" -D to="$TO" -D reach="$REACH" -D answers_from="$ANSWERS_FROM" -D ids="$IDS" \
        -D digest_rows="$DIGEST_ROWS" -D digest_hash="$DIGEST_HASH" \
        -f "$work/window.sql" orbitcove 2>/dev/null \
        | awk '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=pgbench requests_per_s=%.1f errors=%d\n", tps, failed }'
}
# Resolved once, before the runs: a build tool starting inside a measured run would count as
# the client's CPU.
SQL_BENCH="$(swift build -c release --show-bin-path)/orbitcove-sql-bench"
window_postgresnio() {
    "$SQL_BENCH" --script "$work/window.sql" \
        --set user_id="$USER_ID" --set community="$COMMUNITY" --set from="$FROM" --set to="$TO" --set reach="$REACH" \
        --set answers_from="$ANSWERS_FROM" --set ids="$IDS" \
        --set digest_rows="$DIGEST_ROWS" --set digest_hash="$DIGEST_HASH" \
        --clients "$CONNECTIONS" --seconds "$SECONDS_PER_RUN" --mode extended --label postgresnio
}
# The window read while the answerer answers; the answers' own rates are printed after the rounds.
window_answered() {
    python3 scripts/bench/window_answers.py "$ANSWERER_TOKEN" "$COMMUNITY" "$ANSWERED_EVENT" "$ANSWERED_INSTANCE" \
        "$SECONDS_PER_RUN" "$ANSWERS_PER_SECOND" >"$work/answers.out" &
    local answerer=$!
    wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/window-answered.lua" http://127.0.0.1:8080
    local status=0
    wait "$answerer" || status=$?
    cat "$work/answers.out" >>"$work/answers.log"
    if ((status != 0)); then
        echo "the answerer failed (every answer must land, or the round measured an unchanged calendar):" >&2
        cat "$work/answers.out" >&2
        return 1
    fi
}
# Not measured: the window through the gateway at the runs' concurrency for a few seconds, so
# that the first round finds core as the later ones do (its pool's connections open, their
# backends' caches loaded and functions compiled, its kept windows written). pgbench's backends
# are new in each of its runs and warm up inside them.
wrk -t 2 -c "$CONNECTIONS" -d 5s -s "$work/window.lua" http://127.0.0.1:8080 >/dev/null
# Each run prints its rate and, on a `cpu=` line, the CPU each part spent per read (measured).
for round in $(seq "$ROUNDS"); do
    measured window "$SECONDS_PER_RUN" "$results" \
        wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/window.lua" http://127.0.0.1:8080
    measured window-core "$SECONDS_PER_RUN" "$results" \
        wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/window-core.lua" http://127.0.0.1:8082
    measured window-answered "$SECONDS_PER_RUN" "$results" window_answered
    measured pgbench "$SECONDS_PER_RUN" "$results" window_pgbench
    measured postgresnio "$SECONDS_PER_RUN" "$results" window_postgresnio
    measured feed-304 "$SECONDS_PER_RUN" "$results" \
        wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/feed.lua" http://127.0.0.1:8080
done
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference pgbench
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference postgresnio --no-cpu
echo
echo "answers during the window-answered rounds (the answerer's rate, sent, not answered 200):"
cat "$work/answers.log" 2>/dev/null || true

# Full feed builds, one at a time (no If-None-Match): what a calendar app's first fetch costs.
for _ in $(seq "$FEED_BUILDS"); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:8080$FEED"
done | sort -n | awk '{ t[NR] = $1 * 1000 } END {
    printf "\nfeed build (%d VEVENTs over three communities), %d sequential fetches: p50 %.1f ms, max %.1f ms\n",
        '"$vevents"', NR, t[int((NR + 1) / 2)], t[NR] }'
rm -rf "$work"
