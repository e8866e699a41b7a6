#!/usr/bin/env bash
# Realtime benchmark: CLIENTS WebSocket streams over two notifications instances, the people
# members of COMMUNITIES communities, while a writer makes RATE changes a second through core:
# commit-to-client latency, memory per stream, every client's changes checked against the
# change log, and what the open streams cost when nothing happens.
#
#   scripts/bench/realtime.sh [CLIENTS] [COMMUNITIES] [RATE] [SECONDS] [IDLE_SECONDS]
#                                                               (1000 50 20 60 30)
#
# Starts the local stack with release builds (so stop yours first: make down) and a second
# notifications instance on 127.0.0.1:8096, then (scripts/bench/realtime_bench.py, with the
# Python `websockets` client in .local/tools/bench):
#   seed:     CLIENTS people through the development sign-in, COMMUNITIES communities made
#             through core, the other members added straight into PostgreSQL (a data import);
#   streams:  one stream per person, dealt out between the two instances (straight to their
#             ports: the gateway has one upstream here), each subscribed to its community
#             from a sync token read just before; memory per stream from each instance's RSS
#             before and after;
#   writing:  a writer process makes RATE changes a second for SECONDS seconds through core (a
#             post, then a reaction to it, community after community; every post also writes
#             each member's notification, which reaches their streams as `unread` frames).
#             Latency per change frame: from the change's change_log.changed_at (the writing
#             transaction's start, a little before its commit; the same clock) to the
#             client's receipt. Reference on the same sockets at the same time: 100 clients
#             pinging their instance twice a second (a frame's round trip under this load);
#   checked:  each client's change frames against the change log's rows for its community
#             written during the run: none missed, none twice (the script fails otherwise);
#   idle:     IDLE_SECONDS with every stream open and nothing written: CPU of the instances
#             and of PostgreSQL's backends.
# Stops the second instance and the stack at the end. Loopback only; ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENTS=${1:-1000}
COMMUNITIES=${2:-50}
RATE=${3:-20}
SECONDS_WRITING=${4:-60}
IDLE_SECONDS=${5:-30}
SECOND_PORT=8096

work=$(mktemp -d)
second=
stop_helpers() {
    if [[ -n $second ]]; then kill -TERM "$second" 2>/dev/null && wait "$second" 2>/dev/null || true; fi
    rm -rf "$work"
}

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh

python=.local/tools/bench/bin/python
if ! "$python" -c 'import websockets' 2>/dev/null; then
    python3 -m venv .local/tools/bench
    "$python" -m pip install --quiet --retries 3 --disable-pip-version-check 'websockets==15.0.1'
fi
# A thousand sockets and more: the clients' process needs the descriptors.
ulimit -n "$(ulimit -Hn)"

start_release_stack
wait_for_queues

ORBITCOVE_HTTP_PORT=$SECOND_PORT ORBITCOVE_LOG_LEVEL=warning ORBITCOVE_ENV=development \
    setsid nohup .build/release/orbitcove-notifications >>.local/logs/notifications-2.log 2>&1 </dev/null &
second=$!
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$SECOND_PORT/health" >/dev/null 2>&1 && break
    kill -0 "$second" 2>/dev/null || { tail -20 .local/logs/notifications-2.log >&2; exit 1; }
    sleep 0.2
done

echo "seeding ($CLIENTS people in $COMMUNITIES communities) ..." >&2
PYTHONPATH=scripts/bench "$python" scripts/bench/realtime_bench.py seed "$CLIENTS" "$COMMUNITIES" "$work/seed.json"
wait_for_queues

echo "# $(date -u +%FT%TZ) $(nproc) cores; $(swift --version 2>/dev/null | grep -o 'Swift version [0-9.]*')," \
    "PostgreSQL $(/usr/lib/postgresql/15/bin/postgres --version | cut -d' ' -f3), Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-);" \
    "$CLIENTS streams, $COMMUNITIES communities, $RATE changes/s for ${SECONDS_WRITING}s, poll" \
    "${ORBITCOVE_STREAM_POLL_MS:-100} ms"
PYTHONPATH=scripts/bench "$python" scripts/bench/realtime_bench.py run "$work/seed.json" "8083,$SECOND_PORT" \
    "$RATE" "$SECONDS_WRITING" "$IDLE_SECONDS" "$(cat .local/pids/notifications.pid),$second" \
    "$(head -n 1 .local/postgres/postmaster.pid)"
echo "  notifications logs: $(grep -c -E 'warning|error' .local/logs/notifications.log .local/logs/notifications-2.log | paste -sd ' ') warning or error lines"
