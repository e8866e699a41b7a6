#!/usr/bin/env bash
# Feed benchmark (issue 22): the first feed page through the gateway beside pgbench running
# its SQL, 50 members reacting to one post at once (with the counts checked exact), and a
# search, in a community of 500 members and 50,000 posts, in one run.
#
#   scripts/bench/feed.sh [SECONDS] [CONNECTIONS] [ROUNDS] [REACTORS]   (15 16 3 50)
#
# Starts the local stack with release builds and rate limits raised out of the way (so stop
# yours first: make down) and seeds one community (scripts/bench/feed_seed.py): 500 members,
# 50,000 posts over the past year and a bit, about 10% of them with 1 to 30 reactions, 8%
# with comments, 2% polls with votes, 3 pinned. Then per round:
#   feed:      wrk through nginx on 127.0.0.1:8080 as one member, at CONNECTIONS connections:
#              GET …/posts?limit=20, the first page (the pinned posts, then 20 posts, each
#              with its author, counts, the reader's own reaction and a poll's results);
#   feed-core: the same read straight to core on 127.0.0.1:8082, to show what the gateway costs;
#   pgbench:   the statement that read runs (PostStore.feed for a first page, with
#              PostRows' columns and joins read from PostRows.swift), in one transaction entered as the
#              member (app_enter_as_user, as Database.transaction(userId:) does), planned on
#              every run as the service's unnamed statements are (-M extended);
#   search:    wrk through nginx as the same member: GET …/posts?q=carpool%20tournament, two
#              words that the seed planted to find a few hundred posts;
#   react:     REACTORS clients at once, each a member of its own (one wrk thread and
#              connection each), POST …/posts/{id}/reactions on the newest post, each client
#              going round like, love, laugh and celebrate; then the post's reactionCounts
#              from GET …/posts/{id} beside SELECT type, count(*) FROM reactions … GROUP BY
#              type, which must be equal (the run fails if they are not).
# The reader and the reactors sign in again each round (an access token lasts 15 minutes).
# After each run, what each part of the stack spent (% of one core). Stops the stack again at
# the end. Sends traffic to loopback only and ends by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${1:-15}
CONNECTIONS=${2:-16}
ROUNDS=${3:-3}
REACTORS=${4:-50}
MEMBERS=500
POSTS=50000
PG_BIN=/usr/lib/postgresql/15/bin

work=$(mktemp -d)
stop_helpers() { rm -rf "$work"; }
trap stop_helpers EXIT

# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

echo "seeding (500 members, 50,000 posts) ..." >&2
seeded=$(python3 scripts/bench/feed_seed.py seed "$work" "$MEMBERS" "$POSTS" "$REACTORS")
eval "$seeded"
# The joins tell the members before them; let the notifications service finish first.
wait_for_queues
app_pgbench() {
    PGPASSWORD=orbitcove_app "$PG_BIN/pgbench" -n -h 127.0.0.1 -p 55432 -U orbitcove_app -M extended \
        -D user_id="$USER_ID" -D community="$COMMUNITY" -f "$work/feed.sql" "$@" orbitcove
}

# PostStore.feed for a first page, as Database.transaction(userId:) runs it: no cursor, so the
# pinned branch is on (`\(page.cursor == nil)`, bound as true) and the page asks for
# PageRequest.fetchLimit = 21 rows; at most FeedLimits.pins = 5 pinned. The service binds those
# three as parameters of an unnamed statement, which PostgreSQL plans with their values, so
# here they are the values themselves. PostRows.columns and PostRows.joins are read from
# PostRows.swift itself, so the reference runs exactly the service's select list and joins.
post_rows() {
    python3 - "$1" <<'PY'
import re, sys
source = open("Services/Core/Service/Feed/PostRows.swift").read()
print(re.search(r'static let %s = """\n(.*?)"""' % sys.argv[1], source, re.S).group(1).rstrip())
PY
}
{
    cat <<'SQL'
BEGIN;
SELECT app_enter_as_user(:user_id);
WITH chosen AS (
    (SELECT p.id, TRUE AS lead, p.pinned_at AS at FROM posts p
     WHERE p.community_id = :community AND p.deleted_at IS NULL AND p.is_pinned AND (p.pinned_until IS NULL OR p.pinned_until > NOW())
       AND true
     ORDER BY p.pinned_at DESC LIMIT 5)
    UNION ALL
    (SELECT p.id, FALSE, p.created_at FROM posts p
     WHERE p.community_id = :community AND p.deleted_at IS NULL AND NOT (p.is_pinned AND (p.pinned_until IS NULL OR p.pinned_until > NOW()))
     ORDER BY p.created_at DESC, p.id DESC
LIMIT 21)
)
SQL
    echo "SELECT $(post_rows columns), chosen.lead AS lead"
    echo "FROM chosen JOIN posts p ON p.id = chosen.id"
    post_rows joins
    echo "ORDER BY chosen.lead DESC, chosen.at DESC, p.id DESC;"
    echo "COMMIT;"
} >"$work/feed.sql"

# wrk's requests, one script per client (wrk's done() runs in a Lua state of its own, which
# sees no argument, so each script carries its client's name). They read the tokens from
# tokens.lua, which feed_seed.py tokens rewrites each round.
POSTS_PATH="/api/v1/communities/$COMMUNITY/posts"
FEED_PATH="$POSTS_PATH?limit=20"
SEARCH_PATH="$POSTS_PATH?q=$QUERY"
TARGET_PATH="$POSTS_PATH/$TARGET_POST"
for client in feed feed-core search; do
    path=$FEED_PATH
    [[ $client == search ]] && path=$SEARCH_PATH
    {
        echo "dofile(\"$work/tokens.lua\")"
        echo "wrk.headers[\"Authorization\"] = \"Bearer \" .. reader"
        echo "wrk.path = \"$path\""
        wrk_report "$client"
    } >"$work/$client.lua"
done
# One wrk thread per reactor, each with one connection: thread i is member i, alone on its
# connection, and goes round the four reactions (starting at its own, so all four are in play).
{
    cat <<LUA
dofile("$work/tokens.lua")
local counter = 0
function setup(thread)
    counter = counter + 1
    thread:set("member", counter)
end
local types = {"like", "love", "laugh", "celebrate"}
function init(args)
    sent = member
    headers = {["Authorization"] = "Bearer " .. reactors[member], ["Content-Type"] = "application/json"}
end
function request()
    sent = sent + 1
    return wrk.format("POST", "$TARGET_PATH/reactions", headers, '{"type":"' .. types[sent % 4 + 1] .. '"}')
end
LUA
    wrk_report react
} >"$work/react.lua"

# The post's counts as the API gives them (GET …/posts/{id}: post_counts' slots summed) and
# the rows' GROUP BY, side by side. A request wrk gave up on at the end of its run may still
# be committing, so they are read again, twice at most, 2 s apart, before a difference counts;
# one fails the run (at the end, after the results).
counts_differ=0
compare_counts() {
    local api rows
    api=$(curl -sSf -H "Authorization: Bearer $READER_TOKEN" "http://127.0.0.1:8080$TARGET_PATH") ||
        { echo "  could not read the post through the gateway" >&2; return 1; }
    rows=$(owner_psql -F ' ' -c "SELECT type, count(*) FROM reactions WHERE post_id = '$TARGET_POST' GROUP BY type") ||
        { echo "  could not count the post's reactions in PostgreSQL" >&2; return 1; }
    API="$api" ROWS="$rows" python3 - <<'PY'
import json, os, sys
api = json.loads(os.environ["API"])["data"]["post"]["reactionCounts"]
rows = {kind: int(count) for kind, count in (line.split() for line in os.environ["ROWS"].splitlines() if line)}
kinds = ["like", "love", "laugh", "celebrate"]
def show(counts):
    return " ".join(f"{kind}={counts.get(kind, 0)}" for kind in kinds)
same = set(api) <= set(kinds) and set(rows) <= set(kinds) and all(api.get(k, 0) == rows.get(k, 0) for k in kinds)
print(f"  reaction counts of the post: API {show(api)}; rows (GROUP BY) {show(rows)};",
      f"{sum(rows.values())} in all: {'equal' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
}
check_counts() {
    local attempt
    for attempt in 1 2 3; do
        sleep "$((attempt == 1 ? 1 : 2))"
        if compare_counts; then return 0; fi
    done
    echo "!!! THE POST'S REACTION COUNTS DIFFER FROM ITS ROWS (post $TARGET_POST) !!!" >&2
    counts_differ=1
}

# measure CLIENT PORT THREADS CONNECTIONS RESULTS: one wrk run, then what each part spent.
measure() {
    cpu_snapshot >"$work/cpu.before"
    wrk -t "$3" -c "$4" -d "${SECONDS_PER_RUN}s" -s "$work/$1.lua" "http://127.0.0.1:$2" >"$work/wrk.out" 2>&1 || true
    # A run that printed no figures says why, and the benchmark goes on without it.
    grep '^client=' "$work/wrk.out" | tee -a "$5" || { echo "wrk ($1) gave no figures:" >&2; cat "$work/wrk.out" >&2; }
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$SECONDS_PER_RUN"
}
# reference: one pgbench run of the feed's statement as the services' role.
reference() {
    cpu_snapshot >"$work/cpu.before"
    app_pgbench -c "$CONNECTIONS" -j 2 -T "$SECONDS_PER_RUN" 2>/dev/null \
        | awk '/^number of failed transactions:/ { failed = $5 } /^tps = / { tps = $3 }
            END { printf "client=pgbench requests_per_s=%.1f errors=%d\n", tps, failed }' | tee -a "$work/feed.results"
    cpu_snapshot >"$work/cpu.after"
    cpu_used "$work/cpu.before" "$work/cpu.after" "$SECONDS_PER_RUN"
}

# sign_in_again: new tokens for the reader (READER_TOKEN) and the reactors (tokens.lua).
sign_in_again() {
    local signed
    signed=$(python3 scripts/bench/feed_seed.py tokens "$work")
    eval "$signed"
}

# Before measuring: the statement runs as the services' role, and returns what the API shows.
sign_in_again
if ! app_pgbench -c 1 -t 1 >"$work/pgbench.check" 2>&1; then
    cat "$work/pgbench.check" >&2
    echo "pgbench could not run the feed's statement" >&2
    exit 1
fi
# statement [SED_COMMAND]: the transaction with the member and the community written in, for psql.
statement() {
    sed -e "s/:user_id/'$USER_ID'/g" -e "s/:community/'$COMMUNITY'/g" -e "${1:-}" "$work/feed.sql"
}
statement | app_psql >"$work/statement.out"
statement_rows=$(grep -c '^[0-9a-f]\{8\}-' "$work/statement.out" || true)
statement_pinned=$(grep -c '|t$' "$work/statement.out" || true)
# Its plan's estimated cost, and whether PostgreSQL compiles it (JIT) on every run for that.
plan=$(statement 's/^WITH chosen AS ($/EXPLAIN (FORMAT JSON) &/' | app_psql | python3 -c 'import json, sys
text = sys.stdin.read()
plan = json.loads(text[text.index("["):])[0]
print("estimated cost %.0f," % plan["Plan"]["Total Cost"], "JIT-compiled" if "JIT" in plan else "not JIT-compiled")')
plan="$plan (jit $(app_psql -c 'SHOW jit'), jit_above_cost $(app_psql -c 'SHOW jit_above_cost'))"
curl -sSf -o "$work/page.json" -H "Authorization: Bearer $READER_TOKEN" "http://127.0.0.1:8080$FEED_PATH"
page=$(python3 - "$work/page.json" <<'PY'
import json, sys
posts = json.load(open(sys.argv[1]))["data"]
def number(test):
    return sum(1 for post in posts if test(post))
print(f"{len(posts)} posts ({number(lambda post: post['isPinned'])} pinned,",
      f"{number(lambda post: sum(post['reactionCounts'].values()))} with reactions,",
      f"{number(lambda post: post['myReaction'])} with the reader's own,",
      f"{number(lambda post: post['commentCount'])} with comments, {number(lambda post: post['poll'])} polls)")
PY
)
found=$(curl -sSf -H "Authorization: Bearer $READER_TOKEN" "http://127.0.0.1:8080$SEARCH_PATH" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]))')

echo "# $(date -u +%FT%TZ) $(nproc) cores; PostgreSQL $("$PG_BIN/postgres" --version | cut -d' ' -f3)," \
    "$(nginx -v 2>&1 | cut -d' ' -f3); ${SECONDS_PER_RUN}s per run; $CONNECTIONS connections (feed, search)," \
    "$REACTORS reacting"
echo "# seeded: $POSTS posts, $MEMBERS members, $REACTIONS reactions, $COMMENTS comments," \
    "$POLLS polls with $VOTES votes"
echo "# first page: $page, $(wc -c <"$work/page.json") bytes; its statement: $statement_rows rows" \
    "($statement_pinned pinned), $plan"
echo "# search \"${QUERY//%20/ }\": $SEARCH_MATCHES posts match, $found on its first page"
for round in $(seq "$ROUNDS"); do
    echo "round $round"
    if ((round > 1)); then sign_in_again; fi
    measure feed 8080 2 "$CONNECTIONS" "$work/feed.results"
    measure feed-core 8082 2 "$CONNECTIONS" "$work/feed.results"
    reference
    measure search 8080 2 "$CONNECTIONS" "$work/search.results"
    measure react 8080 "$REACTORS" "$REACTORS" "$work/react.results"
    check_counts
    wait_for_queues
done

echo
echo "## first page (GET …/posts?limit=20) beside pgbench"
python3 scripts/bench/summarise.py "$work/feed.results" --rate requests_per_s --unit requests/s --reference pgbench
python3 - "$work/feed.results" <<'PY'
import re, statistics, sys
rates = {}
for line in open(sys.argv[1]):
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    rates.setdefault(fields["client"], []).append(float(fields["requests_per_s"]))
if rates.get("pgbench") and rates.get("feed") and statistics.median(rates["pgbench"]) > 0:
    ratio = statistics.median(rates["feed"]) / statistics.median(rates["pgbench"])
    print(f"\nfeed / pgbench: {ratio:.2f}; the goal, at least 0.75, is {'met' if ratio >= 0.75 else 'NOT met'}")
PY
echo
echo "## search (GET …/posts?q=${QUERY//%20/ })"
python3 scripts/bench/summarise.py "$work/search.results" --rate requests_per_s --unit requests/s --reference pgbench
echo
echo "## $REACTORS members reacting to one post at once"
python3 scripts/bench/summarise.py "$work/react.results" --rate requests_per_s --unit reactions/s --reference pgbench

if ((counts_differ)); then
    echo "FAILED: the post's reaction counts differed from its rows after a reaction run (see above)" >&2
    exit 1
fi
