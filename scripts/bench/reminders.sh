#!/usr/bin/env bash
# Reminders benchmark: REMINDERS care reminders falling due within one minute across
# COMMUNITIES communities, fired by two replicas of the reminders service, from their due time
# to the outbox row and to the assignee's notification row; then what an idle scheduler costs.
#
#   scripts/bench/reminders.sh [COMMUNITIES] [PER_COMMUNITY] [SPREAD_SECONDS] [IDLE_SECONDS]
#                                                                        (1000 100 60 60)
#
# Starts the local stack with release builds (so stop yours first: make down) and a second
# reminders replica on 127.0.0.1:8095, then seeds straight into PostgreSQL as the tables' owner
# (a data import): COMMUNITIES communities of five members, each with PER_COMMUNITY daily care
# reminders assigned to one of them, one occurrence each, due at random within SPREAD_SECONDS
# starting LEAD (75) seconds after the seed starts, with their schedule rows (as the horizon
# plans them).
#   fired:   a psql session polls every 25 ms for rows marked fired (a transaction per
#            poll, so a row is seen once its batch has committed) and records when it saw
#            each: due -> visible in the outbox. Per row, p50/p99/max, and the fire times
#            the service took itself (fired_at, before its batch's insert and commit).
#   notified: the notification rows' created_at (the notifications service's inbox
#            transaction) against the due time, once all have arrived (at most 15 minutes).
#   checked: from the database: every row fired once, one reminder.due message per row and
#            one notification per (message, assignee): none missed, none twice.
#   floor:   the same work in SQL alone, in psql: claim 1,000 due rows FOR UPDATE SKIP
#            LOCKED, write their outbox rows (the message's JSON built in SQL), mark them
#            fired, for every row, in one transaction rolled back at the end: rows a second.
#   idle:    with nothing due for the next hour, the statements the two replicas send in
#            IDLE_SECONDS (pg_stat_statements is not loaded here: counted as the transactions
#            and statements their connections ran, from pg_stat_database deltas with every
#            other service stopped, after the pools' idle connections have closed), per minute.
#   statements: with pg_stat_statements loaded, the statements that took PostgreSQL's time
#            while firing and while idle.
# Stops the second replica and the stack at the end. Loopback only; ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

COMMUNITIES=${1:-1000}
PER_COMMUNITY=${2:-100}
SPREAD=${3:-60}
IDLE_SECONDS=${4:-60}
# Rows are planned this far ahead of the first due time (from the seed's start): the schedulers
# learn of rows planned elsewhere (here, by the seed) within their longest sleep (20 s), as they
# would of rows the horizon planned days ahead.
LEAD=${LEAD:-75}
TOTAL=$((COMMUNITIES * PER_COMMUNITY))

work=$(mktemp -d)
second=
stop_helpers() {
    if [[ -n $second ]]; then kill -TERM "$second" 2>/dev/null && wait "$second" 2>/dev/null || true; fi
    rm -rf "$work"
}

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack
wait_for_queues

ORBITCOVE_HTTP_PORT=8095 ORBITCOVE_LOG_LEVEL=warning ORBITCOVE_ENV=development \
    setsid nohup .build/release/orbitcove-reminders >>.local/logs/reminders-2.log 2>&1 </dev/null &
second=$!
for _ in $(seq 60); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8095/ready || true) == 200 ]] && break
    sleep 1
done

tag=$(date +%s)
echo "# $(date -u +%FT%TZ) $(nproc) cores; $TOTAL care reminders in $COMMUNITIES communities, due within ${SPREAD}s; two replicas"
echo "seeding ..." >&2
owner_psql -v ON_ERROR_STOP=1 <<SQL
-- As the system: the tables' triggers then neither stamp times nor mark subjects for planning.
SELECT set_config('app.system', 'on', false) \\g /dev/null
CREATE UNLOGGED TABLE IF NOT EXISTS bench_reminders_seen (id bigint PRIMARY KEY, seen_at timestamptz NOT NULL);
TRUNCATE bench_reminders_seen;
CREATE TEMP TABLE people AS
SELECT gen_random_uuid() AS id, c, k FROM generate_series(1, $COMMUNITIES) c, generate_series(0, 4) k;
INSERT INTO users (id, apple_id, email, display_name)
SELECT id, 'reminders-bench-$tag-' || c || '-' || k, 'rb-$tag-' || c || '-' || k || '@example.com', 'Member ' || k FROM people;
CREATE TEMP TABLE clubs AS SELECT gen_random_uuid() AS id, c FROM generate_series(1, $COMMUNITIES) c;
INSERT INTO communities (id, name, created_by)
SELECT b.id, 'Reminders bench ' || b.c, p.id FROM clubs b JOIN people p ON p.c = b.c AND p.k = 0;
INSERT INTO members (community_id, user_id, role)
SELECT b.id, p.id, CASE p.k WHEN 0 THEN 'admin' ELSE 'member' END::member_role FROM clubs b JOIN people p ON p.c = b.c;
CREATE TEMP TABLE cares AS
SELECT gen_random_uuid() AS id, b.id AS community_id, b.c, r,
       now() + $LEAD * interval '1 second' + random() * $SPREAD * interval '1 second' AS due_at
FROM clubs b, generate_series(1, $PER_COMMUNITY) r;
INSERT INTO care_reminders (id, community_id, title, recurrence_rule, time_of_day, starts_on, assignee_id, created_by)
SELECT x.id, x.community_id, 'Walk ' || x.r, 'FREQ=DAILY;COUNT=1', (x.due_at AT TIME ZONE 'UTC')::time,
       (x.due_at AT TIME ZONE 'UTC')::date, p.id, p.id
FROM cares x JOIN people p ON p.c = x.c AND p.k = x.r % 5;
INSERT INTO care_occurrences (reminder_id, community_id, local_date, due_at)
SELECT id, community_id, (due_at AT TIME ZONE 'UTC')::date, due_at FROM cares;
INSERT INTO reminder_subjects (kind, subject_id, community_id, filled_until, planned_at)
SELECT 'care', id, community_id, now() + interval '60 days', now() + interval '1 hour' FROM cares;
INSERT INTO reminder_schedule (community_id, kind, subject_id, occurrence, step, due_at)
SELECT community_id, 'care_due', id, to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 0, due_at FROM cares;
CREATE TABLE IF NOT EXISTS bench_reminders_run (subject_id uuid PRIMARY KEY);
TRUNCATE bench_reminders_run;
INSERT INTO bench_reminders_run SELECT id FROM cares;
ANALYZE users, communities, members, care_reminders, care_occurrences, reminder_schedule, reminder_subjects;
SQL

# Where PostgreSQL's time went, when pg_stat_statements is loaded (BENCHMARKS.md says how to
# load it for a run); otherwise these print nothing.
statements_reset() { owner_psql -c "SELECT pg_stat_statements_reset()" >/dev/null 2>&1 || true; }
statements_top() {
    owner_psql -F ' | ' -c "
        SELECT calls, round(total_exec_time) AS ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 150)
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'orbitcove')
        ORDER BY total_exec_time DESC LIMIT ${1:-12}" 2>/dev/null | sed 's/^/  /' || true
}

first_due=$(owner_psql -c "SELECT extract(epoch FROM min(s.due_at)) FROM reminder_schedule s JOIN bench_reminders_run b ON b.subject_id = s.subject_id")
# The seed wrote its rows' WAL just now; a checkpoint it set off would fall into the measured
# minute (it did: firing ran 1-2 s late for 15 s). Rows planned over days were checkpointed
# long ago, so the checkpoint is taken here, as the superuser (the owner may not).
socket_dir="$PWD/.local/postgres-run"
(cd / && runuser -u postgres -- psql -X -q -h "$socket_dir" -p 55432 -d orbitcove -c CHECKPOINT) ||
    echo "warning: could not take a checkpoint after the seed" >&2
ahead=$(python3 -c "import time; print(round($first_due - time.time()))")
echo "the seed committed ${ahead}s before the first row falls due (the schedulers look at least every 20 s)"
if ((ahead < 25)); then echo "warning: too little lead; the first rows are late because nobody knew of them: raise LEAD" >&2; fi
deadline=$(python3 -c "print(int($first_due + $SPREAD + 120))")
echo "polling until every row is fired ..." >&2
# The clock and the CPU counters start a second before the first row falls due.
python3 -c "import time; time.sleep(max(0, $first_due - 1 - time.time()))"
statements_reset
cpu_snapshot >"$work/before"
started=$SECONDS
owner_psql -v ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE
    seen bigint := 0;
    added bigint;
    mark timestamptz := clock_timestamp();
BEGIN
    LOOP
        -- Rows marked fired since a little before the newest seen (a batch's fired_at is taken
        -- before its insert and commit): each poll reads a few seconds' rows, not all of them.
        INSERT INTO bench_reminders_seen (id, seen_at)
        SELECT s.id, clock_timestamp() FROM reminder_schedule s
        WHERE s.fired_at > mark - interval '3 seconds'
        ON CONFLICT (id) DO NOTHING;
        GET DIAGNOSTICS added = ROW_COUNT;
        seen := seen + added;
        IF added > 0 THEN
            SELECT max(s.fired_at) INTO mark FROM reminder_schedule s
            WHERE s.fired_at > mark - interval '3 seconds';
        END IF;
        EXIT WHEN seen >= $TOTAL OR clock_timestamp() > to_timestamp($deadline);
        -- Each poll its own transaction: one open for the whole run would hold PostgreSQL's
        -- removal horizon at its start, and every row version the run leaves behind (each
        -- outbox and schedule row is updated twice) would stay in the services' index scans.
        COMMIT;
        PERFORM pg_sleep(0.025);
    END LOOP;
END
\$\$;
SQL
cpu_snapshot >"$work/after"
fire_seconds=$((SECONDS - started))

echo "waiting for the notifications ..." >&2
for _ in $(seq 180); do
    n=$(owner_psql -c "
        SELECT count(*) FROM notifications n JOIN outbox o ON o.id = n.message_id
        JOIN bench_reminders_run b ON b.subject_id = (o.data ->> 'subjectId')::uuid
        WHERE o.message_type = 'reminder.due'")
    [[ $n -ge $TOTAL ]] && break
    sleep 5
done

owner_psql <<SQL
\\pset footer off
SELECT 'fired' AS measure, count(*) AS rows,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM v.seen_at - s.due_at)) * 1000) AS p50_ms,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM v.seen_at - s.due_at)) * 1000) AS p99_ms,
       round(max(extract(epoch FROM v.seen_at - s.due_at)) * 1000) AS max_ms
FROM reminder_schedule s JOIN bench_reminders_run b ON b.subject_id = s.subject_id
JOIN bench_reminders_seen v ON v.id = s.id
UNION ALL
SELECT 'fired_at (service clock)', count(*),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM s.fired_at - s.due_at)) * 1000),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM s.fired_at - s.due_at)) * 1000),
       round(max(extract(epoch FROM s.fired_at - s.due_at)) * 1000)
FROM reminder_schedule s JOIN bench_reminders_run b ON b.subject_id = s.subject_id
UNION ALL
SELECT 'notified', count(*),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM n.created_at - s.due_at)) * 1000),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM n.created_at - s.due_at)) * 1000),
       round(max(extract(epoch FROM n.created_at - s.due_at)) * 1000)
FROM notifications n JOIN outbox o ON o.id = n.message_id AND o.message_type = 'reminder.due'
JOIN reminder_schedule s ON s.subject_id = (o.data ->> 'subjectId')::uuid AND s.kind = 'care_due'
JOIN bench_reminders_run b ON b.subject_id = s.subject_id;
SELECT (SELECT count(*) FROM reminder_schedule s JOIN bench_reminders_run b USING (subject_id) WHERE s.fired_at IS NULL) AS missed,
       (SELECT count(*) FROM reminder_schedule s JOIN bench_reminders_run b USING (subject_id) WHERE s.outcome <> 'sent') AS not_sent,
       (SELECT count(*) - count(DISTINCT (o.data ->> 'subjectId', o.data ->> 'occurrence'))
        FROM outbox o JOIN bench_reminders_run b ON b.subject_id = (o.data ->> 'subjectId')::uuid
        WHERE o.message_type = 'reminder.due') AS messages_twice,
       (SELECT count(*) FROM outbox o JOIN bench_reminders_run b ON b.subject_id = (o.data ->> 'subjectId')::uuid
        WHERE o.message_type = 'reminder.due') AS messages,
       (SELECT count(*) - count(DISTINCT (n.message_id, n.user_id)) FROM notifications n
        JOIN outbox o ON o.id = n.message_id AND o.message_type = 'reminder.due'
        JOIN bench_reminders_run b ON b.subject_id = (o.data ->> 'subjectId')::uuid) AS notified_twice,
       (SELECT count(*) FROM notifications n JOIN outbox o ON o.id = n.message_id AND o.message_type = 'reminder.due'
        JOIN care_reminders r ON r.id = (o.data ->> 'subjectId')::uuid AND r.assignee_id = n.user_id
        JOIN bench_reminders_run b ON b.subject_id = r.id) AS notified_assignee;
SQL
echo "firing: ${fire_seconds}s from the first due row to the last seen"
cpu_used "$work/before" "$work/after" "$fire_seconds"
statements_top 15

# The floor: the same rows (marked unfired again, inside a transaction rolled back).
echo "floor: the same claim, outbox insert and mark in SQL alone, 1,000 rows a statement group"
owner_psql -v ON_ERROR_STOP=1 <<SQL
BEGIN;
SELECT set_config('app.system', 'on', true);
UPDATE reminder_schedule s SET fired_at = NULL, outcome = NULL, recipients = NULL, due_at = now() - interval '1 second'
FROM bench_reminders_run b WHERE b.subject_id = s.subject_id;
CREATE TEMP TABLE floor_time (started timestamptz, ended timestamptz, rows bigint);
DO \$\$
DECLARE
    started timestamptz := clock_timestamp();
    moved bigint := 0;
    batch bigint;
BEGIN
    LOOP
        WITH claimed AS (
            SELECT s.id, s.community_id, s.subject_id, s.occurrence, s.due_at FROM reminder_schedule s
            JOIN bench_reminders_run b ON b.subject_id = s.subject_id
            WHERE s.fired_at IS NULL AND s.due_at <= now() ORDER BY s.due_at LIMIT 1000 FOR UPDATE OF s SKIP LOCKED
        ), sent AS (
            INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, data)
            SELECT gen_random_uuid(), 'notifications', 'reminder.floor', 1, now(), c.community_id,
                   jsonb_build_object('kind', 'care_due', 'communityId', c.community_id, 'subjectId', c.subject_id,
                                      'occurrence', c.occurrence, 'recipients', jsonb_build_array(r.assignee_id),
                                      'title', r.title, 'dueAt', c.due_at, 'firedAt', now())
            FROM claimed c JOIN care_reminders r ON r.id = c.subject_id
            RETURNING 1
        )
        UPDATE reminder_schedule s SET fired_at = clock_timestamp(), outcome = 'sent', recipients = 1
        FROM claimed c WHERE s.id = c.id;
        GET DIAGNOSTICS batch = ROW_COUNT;
        EXIT WHEN batch = 0;
        moved := moved + batch;
    END LOOP;
    INSERT INTO floor_time VALUES (started, clock_timestamp(), moved);
END
\$\$;
SELECT rows, round(extract(epoch FROM ended - started) * 1000) AS ms,
       round(rows / extract(epoch FROM ended - started)) AS rows_per_second FROM floor_time;
ROLLBACK;
SQL

# Idle: the other services stopped, so the database's counters are the two replicas'.
for name in auth core notifications media; do
    pid=$(head -n 1 ".local/pids/$name.pid" 2>/dev/null || true)
    [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null || true
done
# The pools close connections idle for a minute; what is left is the steady state.
sleep 70
statements_reset
counters() {
    owner_psql -c "SELECT xact_commit + xact_rollback, tup_returned + tup_fetched FROM pg_stat_database WHERE datname = 'orbitcove'" | tr '|' ' '
}
read -r t0 _ <<<"$(counters)"
sleep "$IDLE_SECONDS"
read -r t1 _ <<<"$(counters)"
echo "idle, two replicas, nothing due: $(((t1 - t0) * 60 / IDLE_SECONDS)) transactions a minute (the psql counting them included: 2)"
statements_top 8
