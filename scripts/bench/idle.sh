#!/usr/bin/env bash
# Idle benchmark: what the stack costs when nobody uses it.
#
#   scripts/bench/idle.sh [SECONDS] [ROUNDS]   (60 3)
#
# Starts the local stack with release builds (so stop yours first: make down), waits until its
# queues are empty and it has been quiet for 10 s, then per round prints each part's CPU over
# SECONDS (% of one core: the five services, nginx, Redis, RabbitMQ, PostgreSQL's processes
# together) and the transactions PostgreSQL ran meanwhile (pg_stat_database's commits and
# rollbacks of the services' database, per minute). Stops the stack again at the end. Sends
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
for round in $(seq "$ROUNDS"); do
    cpu_snapshot >"$work/before"
    before=$(transactions)
    sleep "$SECONDS_PER_RUN"
    after=$(transactions)
    cpu_snapshot >"$work/after"
    echo "round $round: $(((after - before) * 60 / SECONDS_PER_RUN)) transactions a minute"
    cpu_used "$work/before" "$work/after" "$SECONDS_PER_RUN"
done
