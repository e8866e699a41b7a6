#!/usr/bin/env bash
# The API's JSON encoder (JSONCoding.encoder) beside Foundation's JSONEncoder, set up as the
# project says they are equivalent, on a members page (100 members) and a three-month calendar
# window (120 events with answers and counts), through Encodable:
#
#   scripts/bench/json.sh [SECONDS] [ROUNDS]     (defaults 1 and 3; each side of a round encodes for SECONDS)
#
# Needs no servers. Builds orbitcove-json-bench in release mode (SCRATCH=dir builds under another
# .build, so a long release build does not hold the tree's lock), checks both encoders write the
# same bytes (UUIDs aside), then prints encodes per second for each side by side, alternating.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_SIDE=${1:-1}
ROUNDS=${2:-3}
flags=(-c release --product orbitcove-json-bench ${SCRATCH:+--scratch-path "$SCRATCH"})
swift build "${flags[@]}" >&2
BENCH="$(swift build "${flags[@]}" --show-bin-path)/orbitcove-json-bench"
echo "# $(date -u +%FT%TZ) $(nproc) cores; $(swift --version 2>/dev/null | head -1)"
"$BENCH" --seconds "$SECONDS_PER_SIDE" --rounds "$ROUNDS"
