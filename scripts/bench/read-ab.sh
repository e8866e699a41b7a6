#!/usr/bin/env bash
# Reads in core alone, two builds of core side by side: requests a second, p99 and the CPU core
# and PostgreSQL's backends spend per request, old against new, on the same seeded stack in
# alternating rounds; uncached unless READ_AB_CACHE_SECONDS says how long the cache keeps.
#
#   scripts/bench/read-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS] [CONNECTIONS] [MEMBERS]
#                            (NEW_CORE: this checkout's release build; 10; 3; 16; 20)
#
# OLD_CORE is an orbitcove-core binary of another revision (scripts/bench/window-ab.sh says how
# to build one). Starts the local stack with release builds (stop yours first: make down), seeds
# it as scripts/bench/core-read.sh does (a community of MEMBERS people), then runs OLD_CORE on
# 127.0.0.1:8093 and NEW_CORE on 127.0.0.1:8092 against the same servers, both with the cache off
# (ORBITCOVE_CORE_CACHE_SECONDS=0; READ_AB_CACHE_SECONDS=60 for both with it on, sharing Redis).
# It first checks that both answer the members page with the same bytes, then per round runs, with
# `wrk -t2 -c CONNECTIONS` straight to each in turn (the first of the two alternating from round to
# round):
#   members: the first members page (GET …/members?limit=20) alone;
#   community: the community (GET /communities/{id}) alone;
#   pair:    that page and the community (GET /communities/{id}) in turn, core-read.sh's
#            uncached round.
# Each run prints wrk's line and a cpu= line (scripts/bench/lib.sh, `measured`): the
# milliseconds of CPU each core and PostgreSQL's backends spent per request.
# Stops everything at the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

OLD_CORE=${1:?usage: scripts/bench/read-ab.sh OLD_CORE [NEW_CORE] [SECONDS] [ROUNDS] [CONNECTIONS] [MEMBERS]}
NEW_CORE=${2:-$(swift build -c release --show-bin-path)/orbitcove-core}
SECONDS_PER_RUN=${3:-10}
ROUNDS=${4:-3}
CONNECTIONS=${5:-16}
MEMBERS=${6:-20}
[[ -x $OLD_CORE && -x $NEW_CORE ]] || { echo "both cores must be executables: $OLD_CORE $NEW_CORE" >&2; exit 1; }

work=
pids=()
stop_helpers() {
    ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
    if [[ -n $work ]]; then rm -rf "$work"; fi
}
# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack
work=$(mktemp -d)

eval "$(python3 scripts/bench/core_read_seed.py "$MEMBERS")"
community_path=/api/v1/communities/$COMMUNITY
members_path="/api/v1/communities/$COMMUNITY/members?limit=20"
CACHE_SECONDS=${READ_AB_CACHE_SECONDS:-0}
ORBITCOVE_CORE_CACHE_SECONDS=$CACHE_SECONDS start_cores old:8093:"$OLD_CORE" new:8092:"$NEW_CORE"
export CPU_ALSO="core-old=${pids[0]} core-new=${pids[1]}"

# Both read the same page, byte for byte but for the request's id and time.
for port in 8093 8092; do
    curl -fsS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port$members_path" |
        sed 's/"requestId":"[^"]*"//; s/"timestamp":"[^"]*"//' >"$work/members-$port.json"
done
cmp -s "$work/members-8093.json" "$work/members-8092.json" || {
    echo "the two cores answer the members page differently:" >&2
    diff "$work/members-8093.json" "$work/members-8092.json" >&2
    exit 1
}
grep -q "\"userId\"" "$work/members-8092.json" || { echo "the members page is empty" >&2; exit 1; }

# One script per shape and side (wrk's done() runs in a Lua state of its own).
write_lua() { # LABEL PATHS…
    local label=$1
    shift
    cat >"$work/$label.lua" <<EOF
local paths = {$(printf '"%s", ' "$@")}
local headers = {["Authorization"] = "Bearer $TOKEN"}
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", paths[n % #paths + 1], headers)
end
$(wrk_report "$label")
EOF
}
for side in old new; do
    write_lua "members-$side" "$members_path"
    write_lua "community-$side" "$community_path"
    write_lua "pair-$side" "$community_path" "$members_path"
done
echo "# $(date -u +%FT%TZ) $(nproc) cores; $MEMBERS members, wrk -t2 -c$CONNECTIONS straight to each core" \
    "(cache kept ${CACHE_SECONDS}s; 0: off), ${SECONDS_PER_RUN}s per run"

for port in 8093 8092; do wrk -t2 -c"$CONNECTIONS" -d3s -s "$work/pair-old.lua" "http://127.0.0.1:$port" >/dev/null; done
results=$work/results
for round in $(seq "$ROUNDS"); do
    sides=(old:8093 new:8092)
    ((round % 2)) || sides=("${sides[1]}" "${sides[0]}")
    for shape in members community pair; do
        for side in "${sides[@]}"; do
            IFS=: read -r name port <<<"$side"
            echo "round $round:"
            measured "$shape-$name" "$SECONDS_PER_RUN" "$results" \
                wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" -s "$work/$shape-$name.lua" "http://127.0.0.1:$port"
        done
    done
done
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference members-old
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference pair-old --no-cpu
python3 scripts/bench/summarise.py "$results" --rate requests_per_s --unit requests/s --reference community-old --no-cpu
