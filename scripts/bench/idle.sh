#!/usr/bin/env bash
# Idle benchmark: what the stack costs when nobody uses it.
#
#   scripts/bench/idle.sh [SECONDS] [ROUNDS]   (60 3)
#
# Starts the local stack with release builds (so stop yours first: make down), waits until its
# queues are empty and it has been quiet for 10 s, then per round prints each part's CPU over
# SECONDS (% of one core: the five services, nginx, Redis, RabbitMQ, PostgreSQL's processes
# together), the transactions PostgreSQL ran meanwhile (pg_stat_database's commits and
# rollbacks of the services' database, per minute) and each process's context switches a
# second (all its threads: how often something in it wakes). Stops the stack again at the end. Sends
# no traffic.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-60}
ROUNDS=${2:-3}

work=$(mktemp -d)
stop_helpers() { rm -rf "$work"; }
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack
wait_for_queues
sleep 10

transactions() {
    PGPASSWORD=orbitcove_owner /usr/lib/postgresql/15/bin/psql -X -At -h 127.0.0.1 -p 55432 -U orbitcove_owner orbitcove \
        -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'orbitcove'"
}
echo "# $(date -u +%FT%TZ) $(nproc) cores; idle, ${SECONDS_PER_RUN}s per round"
# Each service's threads' context switches so far (voluntary and not): a thread that wakes to
# look for work and finds none switches twice a turn, so these say how often each wakes.
switches() {
    local file pid
    for file in .local/pids/*.pid; do
        pid=$(head -n 1 "$file" 2>/dev/null) || continue
        [[ $pid =~ ^[0-9]+$ && -d /proc/$pid/task ]] || continue
        cat /proc/"$pid"/task/*/status 2>/dev/null |
            awk -v name="$(basename "$file" .pid)" '/ctxt_switches:/ { total += $2 } END { print name, total }'
    done
}
for round in $(seq "$ROUNDS"); do
    cpu_snapshot >"$work/before"
    switches >"$work/switches-before"
    before=$(transactions)
    sleep "$SECONDS_PER_RUN"
    after=$(transactions)
    switches >"$work/switches-after"
    cpu_snapshot >"$work/after"
    echo "round $round: $(((after - before) * 60 / SECONDS_PER_RUN)) transactions a minute"
    cpu_used "$work/before" "$work/after" "$SECONDS_PER_RUN"
    awk -v seconds="$SECONDS_PER_RUN" 'NR == FNR { before[$1] = $2; next }
        $1 in before { line = line sprintf(" %s=%.0f", $1, ($2 - before[$1]) / seconds) }
        END { print "  context switches a second:" line }' "$work/switches-before" "$work/switches-after"
done
