#!/usr/bin/env bash
# Answers to one event in core alone, two builds of core side by side: answers a second, p99 and
# core's CPU per answer, old against new, on the same seeded stack in alternating rounds.
#
#   scripts/bench/answers-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS] [CONNECTIONS]
#                               (NEW_CORE: this checkout's release build; 10; 3; 16)
#
# OLD_CORE is an orbitcove-core binary of another revision (scripts/bench/window-ab.sh says how
# to build one). Starts the local stack with release builds (stop yours first: make down), seeds
# it as scripts/bench/answers.sh does, then runs OLD_CORE on 127.0.0.1:8093 and NEW_CORE on
# 127.0.0.1:8092 against the same servers, and per round runs answers.sh's "one" shape (every
# member answering the same event, yes and no in turn) with `wrk -t2 -c CONNECTIONS` straight to
# each in turn, then the "spread" shape (each member an event of their own) the same way; the
# first of the two alternates from round to round.
# Stops everything at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

OLD_CORE=${1:?usage: scripts/bench/answers-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS] [CONNECTIONS]}
NEW_CORE=${2:-$(swift build -c release --show-bin-path)/orbitcove-core}
SECONDS_PER_RUN=${3:-10}
ROUNDS=${4:-3}
CONNECTIONS=${5:-16}
[[ -x $OLD_CORE && -x $NEW_CORE ]] || { echo "both cores must be executables: $OLD_CORE $NEW_CORE" >&2; exit 1; }

work=$(mktemp -d)
pids=()
stop_helpers() {
    ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
    rm -rf "$work"
}
# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

seeded=$(python3 scripts/bench/answers_seed.py "$CONNECTIONS" "$work")
eval "$seeded"
wait_for_queues
for side in old:8093:"$OLD_CORE" new:8092:"$NEW_CORE"; do
    IFS=: read -r name port binary <<<"$side"
    ORBITCOVE_HTTP_PORT=$port ORBITCOVE_LOG_LEVEL=warning ORBITCOVE_CORE_READS_PER_MINUTE=1000000000 \
        ORBITCOVE_CORE_WRITES_PER_MINUTE=1000000000 "$binary" >>".local/logs/core-$name.log" 2>&1 &
    pids+=($!)
done
for port in 8093 8092; do
    for _ in $(seq 100); do
        curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null && break
        sleep 0.2
    done
    curl -fsS -o /dev/null "http://127.0.0.1:$port/health" || { echo "the core on $port did not start" >&2; exit 1; }
done

# Each of wrk's two threads takes half the members and goes round them; each member alternates
# yes and no. SHAPE: one (everyone the last event) or spread (member i event i).
for shape in one spread; do
    cat >"$work/$shape.lua" <<LUA
dofile("$work/tokens.lua")
local counter = 0
function setup(thread)
    thread:set("slice", counter)
    counter = counter + 1
end
function init(args)
    local per = math.floor(#tokens / 2)
    first, last = slice * per + 1, slice * per + per
    next_member, answered = first, {}
end
function request()
    local member = next_member
    next_member = next_member == last and first or next_member + 1
    answered[member] = not answered[member]
    local event = "$shape" == "one" and events[#events] or events[member]
    local body = answered[member] and '{"status":"yes"}' or '{"status":"no"}'
    local headers = {["Authorization"] = "Bearer " .. tokens[member], ["Content-Type"] = "application/json"}
    return wrk.format("POST", "/api/v1/communities/$COMMUNITY/events/" .. event .. "/rsvp", headers, body)
end
function done(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout
    io.write(string.format("%.1f %d %.2f\n", summary.requests / (summary.duration / 1e6), errors,
        latency:percentile(99) / 1000))
end
LUA
done
echo "# $(date -u +%FT%TZ) $(nproc) cores; $CONNECTIONS members, wrk -t2 -c$CONNECTIONS straight to each core," \
    "${SECONDS_PER_RUN}s per run"

cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for port in 8093 8092; do wrk -t2 -c"$CONNECTIONS" -d3s -s "$work/one.lua" "http://127.0.0.1:$port" >/dev/null; done
for round in $(seq "$ROUNDS"); do
    sides=(old:8093:"${pids[0]}" new:8092:"${pids[1]}")
    ((round % 2)) || sides=("${sides[1]}" "${sides[0]}")
    for shape in one spread; do
        for side in "${sides[@]}"; do
            IFS=: read -r name port pid <<<"$side"
            before=$(cpu_ticks "$pid")
            read -r rate errors p99 < <(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" -s "$work/$shape.lua" \
                "http://127.0.0.1:$port" | tail -1) || true
            after=$(cpu_ticks "$pid")
            [[ -n ${rate:-} ]] || { echo "wrk printed no result for $shape on $name" >&2; exit 1; }
            awk -v round="$round" -v shape="$shape" -v name="$name" -v rate="$rate" -v errors="$errors" \
                -v p99="$p99" -v ticks=$((after - before)) -v hz="$hz" -v seconds="$SECONDS_PER_RUN" 'BEGIN {
                    printf "round %d %s %s: %.1f answers/s, %d errors, p99 %.1f ms, core %.2f ms of CPU an answer\n",
                        round, shape, name, rate, errors, p99, ticks / hz / (rate * seconds) * 1000 }'
            wait_for_queues
        done
    done
done
