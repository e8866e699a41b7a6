# What the benchmark scripts share (sourced): refuse to run beside a running gateway, install
# wrk if missing, and start the local stack with release builds and rate limits out of the
# way, stopped again when the script exits.
start_release_stack() {
    if (echo >/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
        echo "the gateway is already running: stop the stack first (make down); this benchmark starts its own" >&2
        exit 1
    fi
    command -v wrk >/dev/null || { apt-get update -q >&2 && apt-get install -y -q wrk >&2; }
    trap stop_release_stack EXIT
    CONFIGURATION=release \
        ORBITCOVE_CORE_READS_PER_MINUTE=1000000000 ORBITCOVE_CORE_WRITES_PER_MINUTE=1000000000 \
        ORBITCOVE_CORE_INVITE_LOOKUPS_PER_MINUTE=1000000 ORBITCOVE_CORE_FEED_FETCHES_PER_MINUTE=1000000000 \
        ORBITCOVE_LOG_LEVEL=warning \
        ./scripts/stack.sh up >&2
}

# The EXIT trap start_release_stack sets: stops the benchmark's own helpers first, if it
# defines stop_helpers, then the stack.
stop_release_stack() {
    if declare -F stop_helpers >/dev/null; then stop_helpers || true; fi
    ./scripts/stack.sh down >/dev/null 2>&1 || true
}

# Waits (up to five minutes) until the services' queues hold no messages, so what a seed set
# off (notification history for thousands of new events, say) is not measured with the reads.
# Dead letters stay until someone looks at them, so they are not waited for.
wait_for_queues() {
    local deadline=$((SECONDS + 300)) waiting
    while ((SECONDS < deadline)); do
        # A failed call counts as "still waiting", not as the end of the benchmark.
        waiting=$( (cd / && rabbitmqctl -q -n orbitcove@localhost list_queues -p orbitcove name messages \
            --no-table-headers || echo "unknown 1") |
            awk '$1 !~ /\.dead-letter$/ { total += $2 } END { print total + 0 }')
        [[ $waiting == 0 ]] && return 0
        echo "waiting for $waiting queued messages ..." >&2
        sleep 5
    done
    echo "the queues did not drain within five minutes; measuring anyway" >&2
}
