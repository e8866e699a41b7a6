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

# CPU seconds used so far by each part of the stack, one "name seconds" line each: the
# processes recorded in .local/pids (their threads included) and PostgreSQL's backends
# together (every child of the postmaster). For cpu_used's figures around a measured run.
cpu_snapshot() {
    local ticks file pid name postmaster
    ticks=$(getconf CLK_TCK)
    for file in .local/pids/*.pid; do
        name=$(basename "$file" .pid)
        pid=$(head -n 1 "$file" 2>/dev/null) || continue
        [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/stat ]] || continue
        # Fields 14 and 15 (user, system) after the command's closing parenthesis.
        awk -v name="$name" -v hz="$ticks" '{ sub(/^.*\) /, ""); printf "%s %.2f\n", name, ($12 + $13) / hz }' \
            "/proc/$pid/stat"
    done
    postmaster=$(head -n 1 .local/postgres/postmaster.pid 2>/dev/null) || return 0
    # A backend can end between pgrep and the read (its connection closed): it is skipped.
    for pid in $(pgrep -P "$postmaster"); do
        awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || true
    done | awk -v hz="$ticks" '{ total += $1 } END { printf "postgres-backends %.2f\n", total / hz }'
}

# cpu_used BEFORE AFTER SECONDS: each part's share of one core between two cpu_snapshot
# outputs (files) taken SECONDS apart, on one line, busiest first.
cpu_used() {
    awk -v seconds="$3" 'NR == FNR { before[$1] = $2; next }
        { used = ($2 - before[$1]) / seconds * 100; if (used >= 0.5) printf "%s %.0f%%\n", $1, used }' "$1" "$2" \
        | sort -k2 -nr | paste -sd ' ' | sed 's/^/  cpu (% of one core): /'
}

# psql on the local stack's database as its owner (past row-level security) and as the
# services' role (under it), quiet and unaligned, for the scripts' checks and seeds.
owner_psql() {
    PGPASSWORD=orbitcove_owner psql -X -q -At -h 127.0.0.1 -p 55432 -U orbitcove_owner orbitcove "$@"
}
app_psql() {
    PGPASSWORD=orbitcove_app psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 55432 -U orbitcove_app orbitcove "$@"
}
