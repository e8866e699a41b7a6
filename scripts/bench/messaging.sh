#!/usr/bin/env bash
# Messaging benchmark: our Swift path beside a C reference on the same broker, in one run.
#
#   scripts/bench/messaging.sh [MESSAGES] [ROUNDS]     (defaults 20000 and 3)
#
# Starts the local servers if needed, builds orbitcove-bench in release mode and the C
# reference (Benchmarks/reference/amqp_reference.c, against the same rabbitmq-c), then runs,
# alternating, per round: the C reference, `orbitcove-bench --mode amqp` (our publisher and
# consumer) and `--mode outbox` (outbox → relay → consumer → inbox, the production path).
# Every client publishes persistent 200-byte messages with confirms in windows of 200 and
# acks each message with prefetch 16, on throwaway quorum queues of the production shape.
set -euo pipefail
cd "$(dirname "$0")/../.."

MESSAGES=${1:-20000}
ROUNDS=${2:-3}
WINDOW=200
PREFETCH=16
AMQP_URL=amqp://orbitcove:orbitcove@127.0.0.1:55672/orbitcove_test
DATABASE_URL=postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove_test

./scripts/stack.sh servers >&2
ORBITCOVE_MIGRATION_DATABASE_URL=postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:55432/orbitcove_test \
    ./scripts/stack.sh migrate >&2
swift build -c release --product orbitcove-bench >&2
BENCH="$(swift build -c release --show-bin-path)/orbitcove-bench"
REFERENCE=.build/amqp_reference
gcc -O2 -Wall -Wextra -o "$REFERENCE" Benchmarks/reference/amqp_reference.c -lrabbitmq -lpthread

echo "# $(date -u +%FT%TZ) $(nproc) cores; RabbitMQ $(dpkg-query -W -f='${Version}' rabbitmq-server)," \
    "PostgreSQL $(pg_config --version 2>/dev/null | cut -d' ' -f2 || echo 15); $MESSAGES messages per run"
results=$(mktemp)
for round in $(seq "$ROUNDS"); do
    "$REFERENCE" 127.0.0.1 55672 orbitcove orbitcove orbitcove_test "bench-ref-$round-$$" \
        "$MESSAGES" "$WINDOW" "$PREFETCH" | tee -a "$results"
    "$BENCH" --mode amqp --messages "$MESSAGES" --window "$WINDOW" --prefetch "$PREFETCH" \
        --amqp-url "$AMQP_URL" --database-url "$DATABASE_URL" | tee -a "$results"
    "$BENCH" --mode outbox --messages "$MESSAGES" --window "$WINDOW" --prefetch "$PREFETCH" \
        --amqp-url "$AMQP_URL" --database-url "$DATABASE_URL" | tee -a "$results"
done

python3 scripts/bench/summarise.py "$results" --rate throughput --unit msg/s --reference c-reference
rm -f "$results"
