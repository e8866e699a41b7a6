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
start_cores old:8093:"$OLD_CORE" new:8092:"$NEW_CORE"

write_answers_lua "$work" "$COMMUNITY" 2
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
                "http://127.0.0.1:$port" | sed -n 's/^client=.* requests_per_s=\([^ ]*\) errors=\([^ ]*\) .* p99_ms=\([^ ]*\)$/\1 \2 \3/p') || true
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
