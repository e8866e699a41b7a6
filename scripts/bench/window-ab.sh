#!/usr/bin/env bash
# The calendar window read's cost in core alone, two builds of core side by side: CPU per window
# and windows a second, old against new, on the same seeded stack in alternating rounds.
#
#   scripts/bench/window-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS]   (NEW_CORE: this checkout's
#                                                                          release build; 10; 3)
#
# OLD_CORE is an orbitcove-core binary of another revision, for example:
#   git worktree add /tmp/base <rev> && (cd /tmp/base && swift build -c release --product orbitcove-core)
#   scripts/bench/window-ab.sh /tmp/base/.build/release/orbitcove-core
#
# Starts the local stack with release builds (stop yours first: make down), seeds it as
# scripts/bench/calendar.sh does (three communities in Europe/Berlin, 20 members, 200 weekly
# series and 2,000 single events each, answers from 75% of the members), then runs OLD_CORE on
# 127.0.0.1:8093 and NEW_CORE on 127.0.0.1:8092 against the same servers. It first checks that
# both answer the same window with the same bytes (an md5 of the instances), then per round runs
# `wrk -t2 -c16` on the window straight to each in turn and prints each one's windows a second
# and its CPU and minor page faults per window (from /proc, divided by the windows served).
# Stops everything at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

OLD_CORE=${1:?usage: scripts/bench/window-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS]}
NEW_CORE=${2:-$(swift build -c release --show-bin-path)/orbitcove-core}
SECONDS_PER_RUN=${3:-10}
ROUNDS=${4:-3}
[[ -x $OLD_CORE && -x $NEW_CORE ]] || { echo "both cores must be executables: $OLD_CORE $NEW_CORE" >&2; exit 1; }

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
pids=()
stop_helpers() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true; }
start_release_stack

echo "seeding (three communities of 2,200 events each) ..." >&2
eval "$(python3 scripts/bench/calendar_seed.py 3 20 200 2000)"
wait_for_queues
EMAIL=$(owner_psql -c "SELECT email FROM users WHERE id = '$USER_ID'")
TOKEN=$(curl -s -X POST -H 'content-type: application/json' -H 'x-real-ip: 10.78.0.1' \
    -d "{\"email\":\"$EMAIL\",\"displayName\":\"Bench member\"}" http://127.0.0.1:8081/api/v1/auth/dev |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["accessToken"])')
WINDOW_PATH="/api/v1/communities/$COMMUNITY/events?from=$FROM&to=$TO"

start_cores old:8093:"$OLD_CORE" new:8092:"$NEW_CORE"

work=$(mktemp -d)
trap 'rm -rf "$work"; stop_release_stack' EXIT
{
    echo "wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    echo "wrk.path = \"$WINDOW_PATH\""
} >"$work/window.lua"
digest() {
    curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$1$WINDOW_PATH" | python3 -c '
import hashlib, json, sys
data = json.load(sys.stdin)["data"]
print(len(data), hashlib.md5(json.dumps(data, sort_keys=True).encode()).hexdigest())'
}
old_digest=$(digest 8093)
new_digest=$(digest 8092)
[[ $old_digest == "$new_digest" ]] || { echo "the two cores answer differently: $old_digest / $new_digest" >&2; exit 1; }
echo "# $(date -u +%FT%TZ) $(nproc) cores; window: ${new_digest%% *} instances, the same bytes from both;" \
    "wrk -t2 -c16, ${SECONDS_PER_RUN}s per run"

# The process's CPU ticks (user and system) and its minor page faults.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
page_faults() { awk '{ sub(/^.*\) /, ""); print $8 }' "/proc/$1/stat"; }
for port in 8093 8092; do wrk -t2 -c16 -d3s -s "$work/window.lua" "http://127.0.0.1:$port" >/dev/null; done
hz=$(getconf CLK_TCK)
for round in $(seq "$ROUNDS"); do
    for side in old:8093:"${pids[0]}" new:8092:"${pids[1]}"; do
        IFS=: read -r name port pid <<<"$side"
        before=$(cpu_ticks "$pid") faults_before=$(page_faults "$pid")
        rate=$(wrk -t2 -c16 -d"${SECONDS_PER_RUN}s" -s "$work/window.lua" "http://127.0.0.1:$port" |
            awk '/^Requests\/sec:/ { print $2 }')
        after=$(cpu_ticks "$pid") faults_after=$(page_faults "$pid")
        awk -v round="$round" -v name="$name" -v rate="$rate" -v ticks=$((after - before)) -v hz="$hz" \
            -v seconds="$SECONDS_PER_RUN" -v faults=$((faults_after - faults_before)) 'BEGIN {
                printf "round %d %s: %.1f windows/s, core %.2f ms of CPU and %.0f page faults a window\n",
                    round, name, rate, ticks / hz / (rate * seconds) * 1000, faults / (rate * seconds) }'
    done
done
