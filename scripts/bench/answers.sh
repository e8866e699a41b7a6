#!/usr/bin/env bash
# Answers benchmark: members answering events (the write path: gate, transaction, the
# instance's lock and places; and where an answer gives a waiting yes its place, as in "one",
# the promotion's message through the outbox, relay and notifications), beside the floor of
# one upsert per transaction in pgbench, in one run.
#
#   scripts/bench/answers.sh [SECONDS] [CONNECTIONS] [ROUNDS]   (10 16 3)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down) and seeds a community of CONNECTIONS members and CONNECTIONS + 1
# events with a capacity (scripts/bench/answers_seed.py). Then per round, at CONNECTIONS
# connections:
#   spread:  wrk through nginx, POST …/events/{id}/rsvp, each member answering an event of
#            their own, alternating yes and no;
#   one:     the same, everyone answering one event (answers to an instance are serialised
#            by its lock, by design);
#   spread-keyed: spread with a new Idempotency-Key on every answer, as an offline client's
#            queued writes carry one (the key's claim, its mark in the answer's transaction and
#            the kept response);
#   floor:   pgbench: per transaction, enter as the member (app_enter_as_user) and upsert
#            their answer (the same row, triggers and indexes); -M prepared (floor) and
#            -M extended (floor-extended, planned each time as the service's statements are);
#   one-pgbench-commit, one-pgbench-statement: the one-event shape in pgbench (-M prepared), what
#            the instance's lock costs by how an answer ends: inside BEGIN … COMMIT, the COMMIT a
#            round trip under the lock (as core answered until migration 0082); and as one
#            statement that commits as it ends (calendar_answer_committing), with the read-only
#            transaction before it and the statement confirming the commit after it, as core
#            now answers.
# After each wrk run, what each part of the stack spent (% of one core). Stops the stack again
# at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
ROUNDS=${3:-3}
PG_BIN=/usr/lib/postgresql/15/bin

work=$(mktemp -d)
stop_helpers() { rm -rf "$work"; }
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

seeded=$(python3 scripts/bench/answers_seed.py "$CONNECTIONS" "$work")
eval "$seeded"
wait_for_queues

threads=2
write_answers_lua "$work" "$COMMUNITY" "$threads"

# The one-event shape in pgbench, both ways of ending an answer. Client i answers as member i,
# yes or no at random, the event read as core reads it first.
members=$(owner_psql -c "SELECT '{' || string_agg(user_id::text, ',' ORDER BY joined_at, user_id) || '}'
    FROM members WHERE community_id = '$COMMUNITY'")
sequence=$(owner_psql -c "SELECT sequence FROM events WHERE id = '$SHARED_EVENT'")
member="('$members'::uuid[])[:client_id % $CONNECTIONS + 1]"
enter="SELECT app_enter_as_user($member);"
read="SELECT id, sequence, capacity FROM events WHERE id = '$SHARED_EVENT' AND deleted_at IS NULL;"
answer="'$SHARED_EVENT', NULL, $member, NULL, CASE WHEN :yes = 1 THEN 'yes' ELSE 'no' END::rsvp_status, 0, NULL, 1,
    $sequence, '$COMMUNITY', NULL, 'notifications', 'event.waitlist_promoted', 1, '{}'::jsonb"
printf '%s\n' '\set yes random(0, 1)' 'BEGIN;' "$enter" "$read" \
    "SELECT * FROM calendar_answer_announced($answer);" 'COMMIT;' >"$work/one-pgbench-commit.sql"
printf '%s\n' '\set yes random(0, 1)' 'BEGIN READ ONLY;' "$enter" "$read" 'COMMIT;' \
    "SELECT * FROM calendar_answer_committing(NULL, NULL, NULL, $answer);" 'SELECT 1;' >"$work/one-pgbench-statement.sql"

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); $CONNECTIONS members and connections, ${SECONDS_PER_RUN}s per run"
results="$work/results"
# answers SHAPE: one wrk run, then what each part spent during it.
answers() {
    cpu_snapshot >"$work/cpu.before"
    wrk -t "$threads" -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/$1.lua" http://127.0.0.1:8080 \
        | grep '^client=' | tee -a "$results"
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$SECONDS_PER_RUN"
    wait_for_queues
}
# floor CLIENT MODE [SCRIPT]: one pgbench run of the upsert (or SCRIPT) as the services' role.
floor() {
    PGPASSWORD=orbitcove_app "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U orbitcove_app -M "$2" \
        -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" -f "$work/${3:-floor}.sql" orbitcove \
        | awk -v client="$1" '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=%s requests_per_s=%.1f errors=%d\n", client, tps, failed }' | tee -a "$results"
}
for round in $(seq "$ROUNDS"); do
    answers spread
    answers spread-keyed
    answers one
    floor floor prepared
    floor floor-extended extended
    floor one-pgbench-commit prepared one-pgbench-commit
    floor one-pgbench-statement prepared one-pgbench-statement
done

python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit answers/s --reference floor
