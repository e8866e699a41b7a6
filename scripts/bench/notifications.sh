#!/usr/bin/env bash
# Notifications benchmark: a new event in a 500-member community, from its commit to every
# member's history row and to every member's push accepted by a local APNs, beside the floor
# (the same rows written by one INSERT … SELECT in psql), in one run.
#
#   scripts/bench/notifications.sh [MEMBERS] [EVENTS] [PUSH_CONCURRENCY]   (500 20 100)
#
# Makes a throwaway APNs provider key, starts the local stack with release builds and the
# notifications service pushing over HTTP/2 to the APNs stand-in (orbitcove-apns-standin on a
# free loopback port, trusting the stack's local CA; so stop yours first: make down), and
# seeds one community: the coach through the API, the other MEMBERS - 1 members straight into
# PostgreSQL, each with one sandbox device (scripts/bench/notifications_seed.py). Then:
#   events: EVENTS events created one after another as the coach (POST …/events on core), a
#           second apart once the last one's pushes are in; per event, from its row's
#           created_at (the creating transaction's start, a little before its commit): when
#           PostgreSQL first holds every recipient's history row (polled every 3 ms), and
#           the stand-in's times of accepting the first and the last of their pushes (its
#           request log); afterwards, from the services' own timestamps, when each stage began,
#           and from the notifications service's timers (/metrics), the parts of its push jobs:
#           reading the rows with badges and devices and building the payloads (targets), the
#           first and the last answer from APNs after sending began, writing the receipts;
#   floor:  EVENTS times, in psql with \timing, the INSERT … SELECT of one row per recipient
#           into notifications, each inside BEGIN … ROLLBACK.
# Stops the stand-in and the stack again at the end. Sends traffic to loopback only and ends
# by itself (at most a minute per event).
set -euo pipefail
cd "$(dirname "$0")/../.."

MEMBERS=${1:-500}
EVENTS=${2:-20}
PUSH_CONCURRENCY=${3:-100}
PG_BIN=/usr/lib/postgresql/15/bin
KEY_ID=BENCHKEY01
TEAM_ID=BENCHTEAM1

work=$(mktemp -d)
standin=
stop_helpers() {
    if [[ -n $standin ]]; then
        kill -TERM "$standin" 2>/dev/null && wait "$standin" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh

# A provider key of our own (an APNs .p8 is a PKCS#8 P-256 key); the stand-in checks the
# provider tokens signed with it against its public half.
(umask 077 && openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$work/apns.p8")
openssl ec -in "$work/apns.p8" -pubout -out "$work/apns.pub" 2>/dev/null
APNS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ORBITCOVE_PUSH_PROVIDER=apns ORBITCOVE_APNS_KEY_FILE="$work/apns.p8" \
    ORBITCOVE_APNS_KEY_ID=$KEY_ID ORBITCOVE_APNS_TEAM_ID=$TEAM_ID \
    ORBITCOVE_APNS_SANDBOX_URL="https://localhost:$APNS_PORT" ORBITCOVE_APNS_PRODUCTION_URL="https://localhost:$APNS_PORT" \
    ORBITCOVE_APNS_CA_FILE="$PWD/.local/tls/ca.pem" ORBITCOVE_APNS_TOPICS=app.orbitcove.bench \
    ORBITCOVE_PUSH_CONCURRENCY=$PUSH_CONCURRENCY
start_release_stack

swift build -c release --product orbitcove-apns-standin >&2
: >"$work/standin.out"
"$(swift build -c release --show-bin-path)/orbitcove-apns-standin" --port "$APNS_PORT" \
    --certificate-chain .local/tls/server.pem --private-key .local/tls/server.key \
    --provider-public-key "$work/apns.pub" --team-id $TEAM_ID --key-id $KEY_ID --log "$work/apns.log" \
    >"$work/standin.out" 2>&1 &
standin=$!
for _ in $(seq 100); do
    grep -q '^listening on' "$work/standin.out" && break
    kill -0 "$standin" 2>/dev/null || { cat "$work/standin.out" >&2; exit 1; }
    sleep 0.1
done
grep -q '^listening on' "$work/standin.out" || { echo "the APNs stand-in did not start" >&2; exit 1; }

echo "seeding (one community of $MEMBERS members, a device each) ..." >&2
seeded=$(python3 scripts/bench/notifications_seed.py seed "$MEMBERS")
eval "$seeded"
owner_psql() {
    PGPASSWORD=orbitcove_owner psql -X -At -h 127.0.0.1 -p 55432 -U orbitcove_owner orbitcove "$@"
}
log_lines=$(wc -l <.local/logs/notifications.log)

echo "# $(date -u +%FT%TZ) $(nproc) cores; $(swift --version 2>/dev/null | grep -o 'Swift version [0-9.]*')," \
    "PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3), RabbitMQ $(dpkg-query -W -f='${Version}' rabbitmq-server);" \
    "$MEMBERS members ($RECIPIENTS recipients, one device each), $EVENTS events, push concurrency $PUSH_CONCURRENCY"
curl -fsS http://127.0.0.1:8083/metrics >"$work/metrics.before"
python3 scripts/bench/notifications_seed.py events "$COMMUNITY" "$TOKEN" "$work/apns.log" "$RECIPIENTS" "$EVENTS"
curl -fsS http://127.0.0.1:8083/metrics >"$work/metrics.after"

# Inside the push jobs, from the service's own timers (/metrics): the mean of each stage over
# the jobs of the events above.
awk '
    /^orbitcove_push_job_stage_seconds_(sum|count)\{/ {
        match($0, /stage="[a-z_]+"/); stage = substr($0, RSTART + 7, RLENGTH - 8)
        kind = ($1 ~ /_sum\{/) ? "sum" : "count"
        value[FILENAME, kind, stage] = $2; stages[stage] = 1
    }
    END {
        line = "push jobs (mean per job, /metrics):"
        split("targets first_answer last_answer record", order, " ")
        for (i = 1; i <= 4; i++) {
            s = order[i]
            jobs = value[ARGV[2], "count", s] - value[ARGV[1], "count", s]
            if (jobs > 0) line = line sprintf(" %s %.1f ms;", s,
                (value[ARGV[2], "sum", s] - value[ARGV[1], "sum", s]) / jobs * 1000)
        }
        print line " jobs: " value[ARGV[2], "count", "targets"] - value[ARGV[1], "count", "targets"]
    }' "$work/metrics.before" "$work/metrics.after"

# What the service recorded for the events: every push final (a receipt), none left owed.
owner_psql -q <<SQL | sed 's/^/  /'
SELECT 'receipts: ' || coalesce(string_agg(status || ' × ' || n, ', '), 'none') FROM (
    SELECT r.status, count(*) AS n FROM push_receipts r JOIN notifications n ON n.id = r.notification_id
    WHERE n.community_id = '$COMMUNITY' AND n.type = 'event_created' GROUP BY r.status ORDER BY r.status) AS s;
SELECT 'history rows still owed a push: ' || count(*) FROM notifications
WHERE community_id = '$COMMUNITY' AND type = 'event_created' AND push_at IS NOT NULL;
SQL
echo "  notifications log: $(($(wc -l <.local/logs/notifications.log) - log_lines)) lines (warnings, errors) during the events"
awk -v from="$log_lines" 'NR > from && NR <= from + 5 { print "    " $0 }' .local/logs/notifications.log

# The floor: the same rows from one INSERT … SELECT, client-timed by psql, rolled back.
{
    echo '\timing on'
    for _ in $(seq "$EVENTS"); do
        cat <<SQL
BEGIN;
INSERT INTO notifications (user_id, community_id, type, title, body, data, message_id)
SELECT user_id, '$COMMUNITY', 'event_created', 'x', 'y', '{}'::jsonb, gen_random_uuid()
FROM members WHERE community_id = '$COMMUNITY' AND left_at IS NULL AND user_id <> '$COACH';
ROLLBACK;
SQL
    done
} | owner_psql >"$work/floor.out"
floor_rows=$(awk '/^INSERT 0 / { print $3; exit }' "$work/floor.out")
awk '/^INSERT 0 / { take = 1; next } take && /^Time: / { print $2; take = 0 }' "$work/floor.out" | sort -n \
    | awk -v rows="$floor_rows" '{ t[NR] = $1 } END {
        p99 = int(NR * 0.99); if (p99 < NR * 0.99) p99++
        printf "\nfloor: one INSERT … SELECT of %d rows in psql (\\timing, rolled back), %d times: p50 %.1f ms, p99 %.1f ms\n",
            rows, NR, t[int((NR + 1) / 2)], t[p99] }'
