#!/usr/bin/env bash
# The services' HTTP plumbing alone, two builds side by side: orbitcove-http-floor --plumbing
# service (request ids, trace context, metrics, the error envelope, idle timeouts; no token, rate
# limit, cache or database) answering one small body, old against new, in alternating rounds.
#
#   scripts/bench/floor-ab.sh OLD_FLOOR [NEW_FLOOR] [SECONDS] [ROUNDS]   (NEW_FLOOR: this checkout's
#                                                                          release build; 5; 3)
#
# OLD_FLOOR is an orbitcove-http-floor binary of another revision, for example:
#   git worktree add /tmp/base <rev> && (cd /tmp/base && swift build -c release --product orbitcove-http-floor)
#   scripts/bench/floor-ab.sh /tmp/base/.build/release/orbitcove-http-floor
#
# Per round, each build in turn on 127.0.0.1:8198: `wrk -t2 -c16` straight to it, once with no
# request id and once with a 32-hex X-Request-Id as the gateway sends (its trace id is then the
# request id); prints requests a second and the floor's CPU per request in µs (from /proc).
# Needs no stack. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

OLD_FLOOR=${1:?usage: scripts/bench/floor-ab.sh OLD_FLOOR [NEW_FLOOR] [SECONDS] [ROUNDS]}
NEW_FLOOR=${2:-$(swift build -c release --show-bin-path)/orbitcove-http-floor}
SECONDS_PER_RUN=${3:-5}
ROUNDS=${4:-3}
[[ -x $OLD_FLOOR && -x $NEW_FLOOR ]] || { echo "both floors must be executables: $OLD_FLOOR $NEW_FLOOR" >&2; exit 1; }

work=$(mktemp -d)
floor=
stop() {
    if [[ -n $floor ]]; then kill -TERM "$floor" 2>/dev/null && wait "$floor" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop EXIT
echo '{"data":{"id":"x","name":"Club"}}' >"$work/body.json"
cat >"$work/request-id.lua" <<'LUA'
request = function()
    return wrk.format("GET", "/a", {["X-Request-Id"] = "0123456789abcdef0123456789abcdef"})
end
LUA
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)

echo "# $(date -u +%FT%TZ) $(nproc) cores; wrk -t2 -c16, ${SECONDS_PER_RUN}s per run"
for round in $(seq "$ROUNDS"); do
    for build in old new; do
        binary=$OLD_FLOOR
        [[ $build == new ]] && binary=$NEW_FLOOR
        "$binary" --port 8198 --plumbing service --answer "/a=$work/body.json" >/dev/null 2>&1 &
        floor=$!
        for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:8198/a 2>/dev/null && break; sleep 0.1; done
        for shape in plain request-id; do
            script=()
            [[ $shape == request-id ]] && script=(-s "$work/request-id.lua")
            before=$(cpu_ticks "$floor")
            rate=$(wrk -t2 -c16 -d"${SECONDS_PER_RUN}s" "${script[@]}" http://127.0.0.1:8198/a \
                | awk '/Requests\/sec/ { print $2 }')
            after=$(cpu_ticks "$floor")
            awk -v round="$round" -v build="$build" -v shape="$shape" -v rate="$rate" -v s="$SECONDS_PER_RUN" \
                -v ticks=$((after - before)) -v hz="$ticks_per_second" 'BEGIN {
                    printf "round=%d build=%s shape=%s requests_per_s=%.0f cpu_us_per_request=%.1f\n",
                        round, build, shape, rate, ticks / hz * 1e6 / (rate * s) }'
        done
        kill -TERM "$floor" && wait "$floor" 2>/dev/null || true
        floor=
    done
done
