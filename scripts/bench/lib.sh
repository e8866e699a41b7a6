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
# processes recorded in .local/pids (their threads included), nginx (its master and workers)
# and PostgreSQL's backends together: every child of the postmaster, and what the children
# that ended (a benchmark client's connections) used, which the postmaster holds once it has
# reaped them. For the figures of cpu_used and measured around a run.
cpu_snapshot() {
    local ticks file pid name master postmaster
    ticks=$(getconf CLK_TCK)
    for file in .local/pids/*.pid; do
        name=$(basename "$file" .pid)
        pid=$(head -n 1 "$file" 2>/dev/null) || continue
        [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/stat ]] || continue
        # Fields 14 and 15 (user, system) after the command's closing parenthesis.
        awk -v name="$name" -v hz="$ticks" '{ sub(/^.*\) /, ""); printf "%s %.2f\n", name, ($12 + $13) / hz }' \
            "/proc/$pid/stat"
    done
    master=$(head -n 1 .local/nginx/nginx.pid 2>/dev/null) || master=""
    # And what a benchmark started of its own (CPU_ALSO="name=pid …": a second core, a second
    # nginx), each with its children.
    for entry in ${master:+nginx=$master} ${CPU_ALSO:-}; do
        name=${entry%%=*}
        pid=${entry#*=}
        [[ $pid =~ ^[0-9]+$ ]] || continue
        for child in "$pid" $(pgrep -P "$pid"); do
            awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$child/stat" 2>/dev/null || true
        done | awk -v name="$name" -v hz="$ticks" '{ total += $1 } END { printf "%s %.2f\n", name, total / hz }'
    done
    postmaster=$(head -n 1 .local/postgres/postmaster.pid 2>/dev/null) || return 0
    # A backend can end between pgrep and the read (its connection closed): it is skipped, and
    # counted with the reaped ones next time. Fields 16 and 17: the reaped children's time.
    {
        awk '{ sub(/^.*\) /, ""); print $14 + $15 }' "/proc/$postmaster/stat" 2>/dev/null || true
        for pid in $(pgrep -P "$postmaster"); do
            awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || true
        done
    } | awk -v hz="$ticks" '{ total += $1 } END { printf "postgres-backends %.2f\n", total / hz }'
}

# cpu_used BEFORE AFTER SECONDS: each part's share of one core between two cpu_snapshot
# outputs (files) taken SECONDS apart, on one line, busiest first.
cpu_used() {
    awk -v seconds="$3" 'NR == FNR { before[$1] = $2; next }
        { used = ($2 - before[$1]) / seconds * 100; if (used >= 0.5) printf "%s %.0f%%\n", $1, used }' "$1" "$2" \
        | sort -k2 -nr | paste -sd ' ' | sed 's/^/  cpu (% of one core): /'
}

# measured LABEL SECONDS RESULTS COMMAND…: runs a load COMMAND (for SECONDS) whose output has a
# `client=LABEL … requests_per_s=N` line, and appends to RESULTS (and prints) that line and a
# `cpu=LABEL cpu_ms_<part>=…` line: the milliseconds of CPU each part of the stack, and the
# load's client itself, spent per request (parts under 5 µs left out), and their total.
# The machine's cores are what every part shares, so this says where a rate's time went
# (summarise.py tabulates it). A COMMAND that fails, or prints no rate, stops the benchmark
# with what it said.
measured() {
    local label=$1 seconds=$2 results=$3 dir line requests client
    shift 3
    dir=$(mktemp -d)
    cpu_snapshot >"$dir/before"
    # The shell's `time` counts the command's children too: the client's own CPU.
    local TIMEFORMAT='cpu %U %S'
    if ! { time "$@" >"$dir/out" 2>"$dir/err"; } 2>"$dir/time" || ! grep -q "^client=$label .*requests_per_s=" "$dir/out"
    then
        echo "the $label run failed:" >&2
        cat "$dir/out" "$dir/err" >&2
        rm -rf "$dir"
        return 1
    fi
    cpu_snapshot >"$dir/after"
    line=$(grep -m 1 "^client=$label " "$dir/out")
    echo "$line" | tee -a "$results"
    requests=$(sed -n 's/.*requests_per_s=\([0-9.]*\).*/\1/p' <<<"$line" | awk -v s="$seconds" '{ print $1 * s }')
    client=$(awk '$1 == "cpu" { print $2 + $3 }' "$dir/time")
    if awk -v n="$requests" 'BEGIN { exit !(n > 0) }'; then
        awk -v label="$label" -v requests="$requests" -v client="$client" 'NR == FNR { before[$1] = $2; next }
            { ms = ($2 - before[$1]) * 1000 / requests
              if (ms >= 0.005) { line = line sprintf(" cpu_ms_%s=%.3f", $1, ms); total += ms } }
            END { ms = client * 1000 / requests; total += ms
                  printf "cpu=%s%s cpu_ms_client=%.3f cpu_ms_total=%.3f\n", label, line, ms, total }' \
            "$dir/before" "$dir/after" | tee -a "$results"
    fi
    rm -rf "$dir"
}

# psql on the local stack's database as its owner (past row-level security) and as the
# services' role (under it), quiet and unaligned, for the scripts' checks and seeds.
owner_psql() {
    PGPASSWORD=orbitcove_owner psql -X -q -At -h 127.0.0.1 -p 55432 -U orbitcove_owner orbitcove "$@"
}
app_psql() {
    PGPASSWORD=orbitcove_app psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 55432 -U orbitcove_app orbitcove "$@"
}

# write_answers_lua DIR COMMUNITY THREADS: wrk's scripts for the answers benchmarks
# (answers.sh, answers-ab.sh), one per shape, DIR/spread.lua, DIR/spread-keyed.lua and
# DIR/one.lua, from DIR/tokens.lua (answers_seed.py). Each of wrk's THREADS threads takes its own
# slice of the members and goes round them; each member alternates yes and no. Each prints one
# line at the end: client=SHAPE requests_per_s=… errors=… p50_ms=… p99_ms=… (SHAPE is written
# into each script: wrk's done() runs in a Lua state of its own, which sees no argument).
write_answers_lua() {
    cat >"$1/answers.lua.in" <<EOF
dofile("$1/tokens.lua")
local counter = 0
function setup(thread)
    thread:set("slice", counter)
    counter = counter + 1
end
local shape = "SHAPE"
local keyed = shape == "spread-keyed"
local sent = 0
function init(args)
    local per = math.floor(#tokens / $3)
    first, last = slice * per + 1, slice * per + per
    next_member, answered = first, {}
    started = os.time()
end
function request()
    local member = next_member
    next_member = next_member == last and first or next_member + 1
    answered[member] = not answered[member]
    local event = shape == "one" and events[#events] or events[member]
    local body = answered[member] and '{"status":"yes"}' or '{"status":"no"}'
    local headers = {["Authorization"] = "Bearer " .. tokens[member], ["Content-Type"] = "application/json"}
    if keyed then
        -- A key no earlier run used: this run's start, the thread's slice and a count.
        sent = sent + 1
        headers["Idempotency-Key"] = string.format("bench-%s-%d-%d", started, slice, sent)
    end
    return wrk.format("POST", "/api/v1/communities/$2/events/" .. event .. "/rsvp", headers, body)
end
function done(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout
    io.write(string.format("client=%s requests_per_s=%.1f errors=%d p50_ms=%.2f p99_ms=%.2f\n",
        shape, summary.requests / (summary.duration / 1e6), errors,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
    local shape
    for shape in spread spread-keyed one; do sed "s/SHAPE/$shape/" "$1/answers.lua.in" >"$1/$shape.lua"; done
}

# start_cores NAME:PORT:BINARY ...: starts each BINARY as a core on 127.0.0.1:PORT beside the
# stack's, against the same servers, with rate limits out of the way (its log
# .local/logs/core-NAME.log, its pid appended to the caller's array `pids`), and waits until
# each answers /health. For the scripts that set two builds side by side (window-ab.sh,
# answers-ab.sh).
start_cores() {
    local side name port binary
    for side in "$@"; do
        IFS=: read -r name port binary <<<"$side"
        ORBITCOVE_HTTP_PORT=$port ORBITCOVE_LOG_LEVEL=warning ORBITCOVE_CORE_READS_PER_MINUTE=1000000000 \
            ORBITCOVE_CORE_WRITES_PER_MINUTE=1000000000 "$binary" >>".local/logs/core-$name.log" 2>&1 &
        pids+=($!)
    done
    for side in "$@"; do
        IFS=: read -r name port binary <<<"$side"
        for _ in $(seq 100); do
            curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null && break
            sleep 0.2
        done
        curl -fsS -o /dev/null "http://127.0.0.1:$port/health" || { echo "the core on $port did not start" >&2; exit 1; }
    done
}

# wrk_report LABEL: wrk's done() for a Lua script, printing one line at the end:
# client=LABEL requests_per_s=… errors=… p50_ms=… p99_ms=… (the label is written in: done() runs
# in a Lua state of its own, which sees no argument). Errors are failed statuses and sockets.
wrk_report() {
    cat <<LUA
done = function(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read
        + summary.errors.write + summary.errors.timeout
    io.write(string.format("client=$1 requests_per_s=%.1f errors=%d p50_ms=%.2f p99_ms=%.2f\n",
        summary.requests / (summary.duration / 1e6), errors,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
LUA
}
