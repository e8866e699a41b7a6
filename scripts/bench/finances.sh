#!/usr/bin/env bash
# Finances benchmark (issue 23): a community's balances through the gateway beside pgbench
# running their SQL, at 1,000, 5,000 and 20,000 expenses, and settling up with 20 and with 200
# members owing or owed, in one run.
#
#   scripts/bench/finances.sh [SECONDS] [CONNECTIONS] [ROUNDS]   (10 16 3)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down) and seeds three communities (scripts/bench/finances_seed.py): the
# ledger, 50 members whose expenses are added in stages; settle-20, 200 members of whom 20 take
# part in 2,000 expenses, so exactly 20 nets are not zero; settle-200, 200 members all taking
# part in 2,000 expenses, all 200 nets not zero. Every expense is paid by a random member and
# split equally among 2 to 8 (euros; in the ledger about 3% in dollars), written with COPY as
# the tables' owner so that the triggers keep ledger_balances and ledger_pairs as for the
# service's own writes; after each insert the seed checks those against the rows (against
# ledger_recomputed) and the run fails if they differ. Balances are kept, not summed per
# request, so their read should cost the same whatever the ledger's length; hence the stages:
#   1,000 and 5,000 expenses: one run each of balances and of pgbench (below);
#   20,000 expenses, per round:
#     balances:      wrk through nginx on 127.0.0.1:8080 as one member, at CONNECTIONS
#                    connections: GET …/balances (each member's net and who owes whom, per
#                    currency: token verification, rate limit and membership in Redis, RLS on);
#     balances-core: the same read straight to core on 127.0.0.1:8082, to show what the gateway
#                    costs;
#     pgbench:       the statement that read runs (LedgerStore.balancesJSONQuery, which reads
#                    the kept rows and writes the response's JSON, read from LedgerStore.swift),
#                    in one transaction entered as the member (app_enter_as_user, as
#                    Database.transaction(userId:) does), planned on every run as the service's
#                    unnamed statements are (-M extended);
#     simplified-20, simplified-200: 40 sequential GET …/balances/simplified through nginx on
#                    one kept-alive connection, in settle-20 and in settle-200: ms per call (p50,
#                    and p99, which of 40 calls is the slowest), the method ("minimum", the exact
#                    search over 2^20 subsets; "greedy" beyond 20) and the transfers; the run
#                    fails if a method or the number of members settled is not the expected one.
# Before measuring at each stage, the balances the API returns must equal the rows pgbench's
# statements return (the run fails otherwise). The reader signs in again at each stage and
# round (an access token lasts 15 minutes). After each run, what each part of the stack spent
# (% of one core). Stops the stack again at the end. Sends traffic to loopback only and ends by
# itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
ROUNDS=${3:-3}
MEMBERS=50
STAGES=(1000 5000 20000)
SETTLE_MEMBERS=200
SETTLE_EXPENSES=2000
SIMPLIFIED_CALLS=40
PG_BIN=/usr/lib/postgresql/15/bin

work=$(mktemp -d)
stop_helpers() { rm -rf "$work"; }
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

echo "seeding (three communities; the settling ones' 2 × 2,000 expenses) ..." >&2
seeded=$(python3 scripts/bench/finances_seed.py setup "$work" "$MEMBERS" "$SETTLE_MEMBERS" "$SETTLE_EXPENSES")
eval "$seeded"
# The reader's joins tell the admin; let the notifications service finish first.
wait_for_queues
app_pgbench() {
    PGPASSWORD=orbitcove_app "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U orbitcove_app -M extended \
        -D user_id="$USER_ID" -D community="$COMMUNITY" -f "$work/balances.sql" "$@" orbitcove
}

# LedgerStore.balances as Database.transaction(userId:) runs it, for the whole ledger (no
# ?currency=): balancesJSONQuery read from LedgerStore.swift itself, so the
# reference runs exactly the service's statements. The service binds $1, the community, and $2,
# the currency, NULL here, as parameters of unnamed statements, which PostgreSQL plans with
# their values; so here $1 is pgbench's :community and $2 a NULL of type text (pgbench's
# variables cannot hold a NULL).
ledger_sql() {
    python3 - "$1" <<'PY'
import re, sys, textwrap
source = open("Services/Core/Service/Finances/LedgerStore.swift").read()
found = re.search(r'static let %s = """\n(.*?)\n[ \t]*"""' % sys.argv[1], source, re.S)
if not found or "\\" in found.group(1):
    sys.exit(f"LedgerStore.{sys.argv[1]} is no longer a plain multi-line string; the benchmark cannot read it")
sql = textwrap.dedent(found.group(1)).strip()
sql = re.sub(r"\$1(?!\d)", ":community", re.sub(r"\$2(?!\d)", "NULL::text", sql))
if re.search(r"\$\d", sql):
    sys.exit(f"LedgerStore.{sys.argv[1]} takes more than the community and the currency; update the benchmark")
print(sql + ";")
PY
}
{
    echo "BEGIN;"
    echo "SELECT app_enter_as_user(:user_id);"
    ledger_sql balancesJSONQuery
    echo "COMMIT;"
} >"$work/balances.sql"
# The rows it writes out, read as settling up reads them, for the check below.
{
    echo "BEGIN;"
    echo "SELECT app_enter_as_user(:user_id);"
    ledger_sql balancesQuery
    ledger_sql debtsQuery
    echo "COMMIT;"
} >"$work/rows.sql"
# The same explained, for its plan's estimated cost and whether PostgreSQL compiles it (JIT),
# with the statements that read the same rows for settling up (balancesQuery, debtsQuery).
{
    echo "BEGIN;"
    echo "SELECT app_enter_as_user(:user_id);"
    printf 'EXPLAIN (FORMAT JSON) '
    ledger_sql balancesJSONQuery
    printf 'EXPLAIN (FORMAT JSON) '
    ledger_sql balancesQuery
    printf 'EXPLAIN (FORMAT JSON) '
    ledger_sql debtsQuery
    echo "COMMIT;"
} >"$work/explain.sql"
# statement FILE: the transaction with the member and the community written in, for psql.
statement() {
    sed -e "s/:user_id/'$USER_ID'/g" -e "s/:community/'$COMMUNITY'/g" "$1"
}

# wrk's requests (wrk's done() runs in a Lua state of its own, which sees no argument, so each
# script carries its client's name). They read the token from tokens.lua, which
# finances_seed.py tokens rewrites at each stage and round.
BALANCES_PATH="/api/v1/communities/$COMMUNITY/balances"
for client in balances balances-core; do
    {
        echo "dofile(\"$work/tokens.lua\")"
        echo "wrk.headers[\"Authorization\"] = \"Bearer \" .. reader"
        echo "wrk.path = \"$BALANCES_PATH\""
        wrk_report "$client"
    } >"$work/$client.lua"
done

# measure CLIENT PORT RESULTS: one wrk run (its line tagged with the ledger's size), then what
# each part spent.
measure() {
    cpu_snapshot >"$work/cpu.before"
    wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" -s "$work/$1.lua" "http://127.0.0.1:$2" \
        >"$work/wrk.out" 2>&1 || true
    # A run that printed no figures says why, and the benchmark goes on without it.
    grep '^client=' "$work/wrk.out" | sed "s/\$/ expenses=$EXPENSES/" | tee -a "$3" ||
        { echo "wrk ($1) gave no figures:" >&2; cat "$work/wrk.out" >&2; }
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$SECONDS_PER_RUN"
}
# reference RESULTS: one pgbench run of the balances' statements as the services' role.
reference() {
    cpu_snapshot >"$work/cpu.before"
    app_pgbench -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" 2>/dev/null \
        | awk -v expenses="$EXPENSES" '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=pgbench requests_per_s=%.1f errors=%d expenses=%d\n", tps, failed, expenses }' \
        | tee -a "$1"
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$SECONDS_PER_RUN"
}

# simplified CLIENT COMMUNITY METHOD MEMBERS: SIMPLIFIED_CALLS sequential GET …/balances/simplified
# through nginx on one connection (after three unmeasured), the settlement expected to be one
# currency's, by METHOD, among MEMBERS members; then what each part spent meanwhile.
simplified_wrong=0
simplified() {
    local started elapsed
    cpu_snapshot >"$work/cpu.before"
    started=$(date +%s.%N)
    if ! python3 - "$@" "$READER_TOKEN" "$SIMPLIFIED_CALLS" <<'PY' | tee -a "$work/simplified.results"; then
import http.client, json, math, sys, time
client, community, method, members, token, calls = sys.argv[1:7]
connection = http.client.HTTPConnection("127.0.0.1", 8080, timeout=60)
path = f"/api/v1/communities/{community}/balances/simplified"
def fetch():
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"{client}: GET …/balances/simplified answered {response.status}: {body[:300]!r}")
    return body
for _ in range(3):
    fetch()
times = []
for _ in range(int(calls)):
    started = time.perf_counter()
    body = fetch()
    times.append((time.perf_counter() - started) * 1000)
settlements = json.loads(body)["data"]
transfers = [transfer for settlement in settlements for transfer in settlement["transfers"]]
settled = {member for transfer in transfers for member in (transfer["from"], transfer["to"])}
reasons = sum(len(transfer["payerSide"]) + len(transfer["payeeSide"]) for transfer in transfers)
times.sort()
def percentile(p):
    return times[max(0, math.ceil(p / 100 * len(times)) - 1)]
print(f"client={client} calls_per_s={1000 * len(times) / sum(times):.1f} p50_ms={percentile(50):.2f}",
      f"p99_ms={percentile(99):.2f} calls={len(times)}",
      f"method={','.join(settlement['currency'] + ':' + settlement['method'] for settlement in settlements)}",
      f"transfers={len(transfers)} members_settled={len(settled)} reasons={reasons} bytes={len(body)}")
if [settlement["method"] for settlement in settlements] != [method] or len(settled) != int(members):
    sys.exit(f"{client}: expected one currency settled by {method} among {members} members")
PY
        simplified_wrong=1
    fi
    elapsed=$(awk -v started="$started" -v ended="$(date +%s.%N)" 'BEGIN { print ended - started }')
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$elapsed"
}

# sign_in_again: a new token for the reader (READER_TOKEN and tokens.lua).
sign_in_again() {
    local signed
    signed=$(python3 scripts/bench/finances_seed.py tokens "$work")
    eval "$signed"
}

# describe: the balances as the API returns them beside the rows the statements return (the
# same members, nets and debts, or the run fails at the end), and the statements' plans.
statement_differs=0
describe() {
    curl -sSf -o "$work/balances.json" -H "Authorization: Bearer $READER_TOKEN" "http://127.0.0.1:8080$BALANCES_PATH"
    statement "$work/rows.sql" | app_psql >"$work/statement.out"
    statement "$work/explain.sql" | app_psql >"$work/explain.out"
    statement "$work/balances.sql" | app_psql >"$work/json.out"
    if ! python3 - "$work/balances.json" "$work/statement.out" "$work/explain.out" "$work/json.out" <<'PY'; then
import json, os, sys
api = json.load(open(sys.argv[1]))["data"]
written = [line for line in open(sys.argv[4]) if line.startswith("[")]
members, debts = set(), set()
for line in open(sys.argv[2]):
    fields = line.strip().split("|")
    if len(fields) == 3:
        members.add((fields[0], fields[1].lower(), int(fields[2])))
    elif len(fields) == 4:
        amount = int(fields[3])
        low, high = fields[1].lower(), fields[2].lower()
        debts.add((fields[0], low, high, amount) if amount > 0 else (fields[0], high, low, -amount))
api_members = {(ledger["currency"], member["userId"].lower(), member["net"])
               for ledger in api for member in ledger["members"]}
api_debts = {(ledger["currency"], debt["from"].lower(), debt["to"].lower(), debt["amount"])
             for ledger in api for debt in ledger["debts"]}
text, plans, at = open(sys.argv[3]).read(), [], 0
while (start := text.find("[", at)) >= 0:
    plan, at = json.JSONDecoder().raw_decode(text, start)
    plans.append(plan[0])
same = api_members == members and api_debts == debts and len(written) == 1 and json.loads(written[0]) == api
shown = "; ".join(f"{ledger['currency']} {len(ledger['members'])} members with a net, {len(ledger['debts'])} debts"
                  for ledger in api)
print(f"# balances: {shown}; {os.path.getsize(sys.argv[1])} bytes; the statements' rows:",
      f"{len(members)} balances, {len(debts)} pairs, {'the same' if same else 'DIFFERENT'};",
      "plans: estimated cost", " and ".join(f"{plan['Plan']['Total Cost']:.0f}" for plan in plans) + ",",
      "JIT-compiled" if any("JIT" in plan for plan in plans) else "not JIT-compiled")
sys.exit(0 if same else 1)
PY
        echo "!!! THE BALANCES THE API RETURNS DIFFER FROM THE ROWS THE STATEMENTS RETURN !!!" >&2
        statement_differs=1
    fi
}

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); ${SECONDS_PER_RUN}s per run; $CONNECTIONS connections; $ROUNDS rounds"
echo "# scripts/bench/finances.sh $SECONDS_PER_RUN $CONNECTIONS $ROUNDS; jit $(app_psql -c 'SHOW jit')," \
    "jit_above_cost $(app_psql -c 'SHOW jit_above_cost')"
echo "# seeded: the ledger, $MEMBERS members; settle-20 and settle-200, $SETTLE_MEMBERS members each," \
    "$SETTLE_20_EXPENSES and $SETTLE_200_EXPENSES expenses, $NONZERO_20 and $NONZERO_200 members with a" \
    "non-zero net"
for stage in "${STAGES[@]}"; do
    echo "seeding the ledger up to $stage expenses ..." >&2
    grown=$(python3 scripts/bench/finances_seed.py expenses "$work" "$stage")
    eval "$grown"
    sign_in_again
    if [[ $stage == "${STAGES[0]}" ]]; then
        # Before measuring: the statements run as the services' role.
        if ! app_pgbench -c 1 -t 1 >"$work/pgbench.check" 2>&1; then
            cat "$work/pgbench.check" >&2
            echo "pgbench could not run the balances' statements" >&2
            exit 1
        fi
    fi
    echo
    echo "## the ledger at $EXPENSES expenses ($USD_EXPENSES in dollars, $SPLITS splits; ledger_balances" \
        "$BALANCE_ROWS non-zero rows, ledger_recomputed $RECOMPUTED_ROWS; ledger_pairs $PAIR_ROWS)"
    describe
    if [[ $stage != "${STAGES[-1]}" ]]; then
        measure balances 8080 "$work/sizes.results"
        reference "$work/sizes.results"
    fi
done
for round in $(seq "$ROUNDS"); do
    echo "round $round"
    if ((round > 1)); then sign_in_again; fi
    measure balances 8080 "$work/balances.results"
    measure balances-core 8082 "$work/balances.results"
    reference "$work/balances.results"
    simplified simplified-20 "$SETTLE_20" minimum "$NONZERO_20"
    simplified simplified-200 "$SETTLE_200" greedy "$NONZERO_200"
done

echo
echo "## balances (GET …/balances, $EXPENSES expenses, $MEMBERS members) beside pgbench"
python3 scripts/bench/summarise.py "$work/balances.results" --rate requests_per_s --unit requests/s --reference pgbench
echo
echo "## balances by the ledger's length (at ${STAGES[-1]}, the medians of the rounds)"
python3 - "$work/sizes.results" "$work/balances.results" <<'PY'
import re, statistics, sys
runs = {}
for name in sys.argv[1:]:
    for line in open(name):
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if fields.get("client") in ("balances", "pgbench"):
            runs.setdefault(int(fields["expenses"]), {}).setdefault(fields["client"], []).append(fields)
def median(rows, key):
    values = [float(row[key]) for row in rows if key in row]
    return statistics.median(values) if values else float("nan")
print("\n| expenses | balances requests/s | p50 ms | p99 ms | pgbench requests/s | balances / pgbench |")
print("|---|---|---|---|---|---|")
rates = {}
for size in sorted(runs):
    ours, theirs = runs[size].get("balances", []), runs[size].get("pgbench", [])
    rates[size] = median(ours, "requests_per_s")
    reference = median(theirs, "requests_per_s")
    ratio = f"{rates[size] / reference:.2f}" if reference > 0 else ""
    print(f"| {size:,} | {rates[size]:.0f} | {median(ours, 'p50_ms'):.2f} | {median(ours, 'p99_ms'):.2f} "
          f"| {reference:.0f} | {ratio} |")
if len(rates) > 1 and rates[min(rates)] > 0:
    print(f"\nbalances at {max(rates):,} expenses / at {min(rates):,}: {rates[max(rates)] / rates[min(rates)]:.2f}",
          "of the requests/s (1.00: flat)")
PY
echo
echo "## settling up (GET …/balances/simplified), $SIMPLIFIED_CALLS sequential calls a round"
python3 scripts/bench/summarise.py "$work/simplified.results" --rate calls_per_s --unit calls/s \
    --reference simplified-20
python3 - "$work/simplified.results" <<'PY'
import re, sys
seen = {}
for line in open(sys.argv[1]):
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    seen.setdefault(fields["client"], set()).add(
        f"method {fields['method']}, {fields['transfers']} transfers among {fields['members_settled']} members, "
        f"{fields['reasons']} reasons, {fields['bytes']} bytes")
for client, answers in seen.items():
    print(f"{client}: {'; '.join(sorted(answers))}")
PY

if ((statement_differs)); then
    echo "FAILED: the balances the API returned differed from the rows of pgbench's statements (see above)" >&2
    exit 1
fi
if ((simplified_wrong)); then
    echo "FAILED: a settlement was not made by the expected method among the expected members (see above)" >&2
    exit 1
fi
