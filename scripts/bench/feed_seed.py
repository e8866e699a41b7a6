#!/usr/bin/env python3
"""Seeds the feed benchmark (scripts/bench/feed.sh): one community of MEMBERS people with
POSTS posts, on the services' loopback ports and the dev database.

    feed_seed.py seed DIR [MEMBERS] [POSTS] [REACTORS]   (500 50000 50)

Through the API, as the calendar seed does: an admin signs in and makes the community, then
REACTORS members (the clients of the reaction run) and one reader (the feed's and the
search's client) sign in and join it with an invite. The other members (448 of 500) and
all the content, everyone's, go straight into PostgreSQL as the tables' owner, like a data
import (500 joins through the API would each tell every member before them: 125,000
notifications; notifications_seed.py imports its members the same way):

  posts      POSTS over the past year and a bit, newest first about 13 minutes apart; text
             from a vocabulary of ordinary team words, 8 to 60 of them (Zipf-like), 8% photos
             (1 to 3 media URLs), 1% announcements, 2% polls (2 to 5 options, a fifth
             multiple choice, half of those older than a week closed); 3 pinned an hour
             after they were written (one until two weeks from now), all older than the
             first page;
  reactions  on about 10% of the posts, 1 to 30 each (fewer more often), from distinct
             members; like, love, laugh and celebrate about 50/25/15/10;
  comments   on about 8% of the posts, 1 to 12 each, a fifth of them replies;
  votes      on every poll, from 5% to 40% of the members;
  search     two words planted (QUERY_WORDS, "carpool tournament"): the first in 4% of the
             texts, the second in 15% (posts and comments alike), so a query of both finds a
             few hundred posts (about 480 at 50,000 posts, a third of them by a comment).
The newest 20 posts, the first page, are the busier ones as in a live community: half have
reactions (the reader's own among them at times), two fifths comments, one is a poll the
reader voted in; the newest of all is the reaction run's post.

Rows go in with COPY, so every row trigger fires as for the service's own INSERTs: each
post's search vector (posts_search), the counts in post_counts (reactions_count and
comments_count, in their slots), editable_until and the change log. The seed then checks
that post_counts equals a GROUP BY over the rows of every post and that every post has its
search vector, and counts the posts the search query finds (posts and comments, as
PostStore.search does). Writes, into DIR:

    people       the reader and the reactors (email, name), for `tokens`.

Prints shell assignments: COMMUNITY=<id> USER_ID=<the reader's id> TARGET_POST=<the reaction
run's post> QUERY=<the two words, URL-encoded> SEARCH_MATCHES=<posts the query finds> and
POSTS, MEMBERS, REACTIONS, COMMENTS, POLLS, VOTES (what was seeded).

    feed_seed.py tokens DIR

Signs the reader and the reactors in again (an access token lasts 15 minutes) and writes
DIR/tokens.lua (`reader = "<token>"`, `reactors = {"<token>", ...}`); prints
READER_TOKEN=<token>.
"""

import json
import os
import random
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from bench_api import AUTH, CORE, call, psql

# The words a team's feed is made of, most frequent first (weights fall off as 1/rank^0.9).
VOCABULARY = """
the a to and for is we on at this in be will our please of you all with are it see thanks
practice game team today tomorrow coach field kids week time bring great parents game's
reminder everyone next sunday friday morning evening pm am start meet parking water snacks
jersey jerseys shoes ball goals win lost score season fun photos pictures party bus ride
schedule change rain weather update cancelled moved gym indoor outdoor warmup stretch drills
training fitness volunteers needed sign up sheet fees payment due form forms medical
consent trip hotel rooms dinner lunch breakfast pizza cake birthday congratulations proud
awesome amazing job well done keep going hard work effort spirit together support cheer
fans sideline chairs blankets sunscreen hats cold hot late early sorry can't make who
can help drive pick drop off after before between half quarter final league cup match
opponent away home directions address map gate entrance number uniform socks shorts shin
guards bag bottle name label found jacket keys phone left behind volunteer referee
""".split()
QUERY_WORDS = ("carpool", "tournament")
QUERY_RATES = (0.04, 0.15)

POLL_QUESTIONS = [
    ("Which day works best for the end of season party?", ["Friday", "Saturday", "Sunday"]),
    ("Pizza or pasta after the final?", ["Pizza", "Pasta", "Both", "Neither"]),
    ("New jersey colour?", ["Blue", "Green", "Red", "Black", "White"]),
    ("Should we add a second practice in the week?", ["Yes", "No"]),
    ("What time suits everyone for the parents' meeting?", ["6 pm", "7 pm", "8 pm"]),
    ("Who can volunteer at the bake sale?", ["Morning", "Afternoon", "Both", "Can't this time"]),
]

REACTION_TYPES = ["like", "love", "laugh", "celebrate"]
REACTION_WEIGHTS = [50, 25, 15, 10]
FIRST_PAGE = 20
PINNED_AT = (150, 2200, 9000)  # post indexes (0 = newest): pinned, all past the first page


def dev_sign_in(email, name, address):
    """The development sign-in (bench_api.sign_in, with an email we keep): (id, access token)."""
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": name}, address=address)
    return data["user"]["id"], data["accessToken"]


def address(network, index):
    """A client address of its own per person, so the per-address sign-in limit never bites."""
    return f"10.{network}.{index // 250}.{index % 250 + 1}"


def copy(table, columns, rows):
    """A COPY … FROM STDIN block in text format (no value here holds a tab, newline or backslash)."""
    lines = ["\t".join("\\N" if value is None else str(value) for value in row) for row in rows]
    return f"COPY {table} ({', '.join(columns)}) FROM STDIN;\n" + "\n".join(lines) + ("\n" if lines else "") + "\\.\n"


def timestamp(moment):
    return moment.isoformat()


class Writer:
    """Texts from the vocabulary, with the search words planted at their rates."""

    def __init__(self, rng):
        self.rng = rng
        self.weights = [1 / (rank + 1) ** 0.9 for rank in range(len(VOCABULARY))]

    def text(self, low, high):
        words = self.rng.choices(VOCABULARY, self.weights, k=self.rng.randint(low, high))
        for word, rate in zip(QUERY_WORDS, QUERY_RATES):
            if self.rng.random() < rate:
                words.insert(self.rng.randrange(len(words) + 1), word)
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rng.choice([".", ".", ".", "!", "?"])


def seed(directory, members, posts, reactors):
    rng = random.Random(2026)
    writer = Writer(rng)
    now = datetime.now(timezone.utc)
    tag = uuid.uuid4().hex[:8]

    # Through the API: the admin, the reactors and the reader (last).
    api_people = [(f"feed-bench-{tag}-{index}@example.com", f"Bench {index}") for index in range(reactors + 2)]
    with ThreadPoolExecutor(4) as pool:
        signed = list(pool.map(lambda item: dev_sign_in(item[1][0], item[1][1], address(83, item[0])),
                               enumerate(api_people)))
    (admin_id, admin_token), (reader_id, _) = signed[0], signed[-1]
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Feed bench"}, admin_token)["id"]
    invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token)["code"]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda item: call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=item[1][1],
                                        address=address(85, item[0])),
                      enumerate(signed[1:], start=1)))
    with open(f"{directory}/people", "w") as out:
        for email, name in [api_people[-1]] + api_people[1:-1]:
            out.write(f"{email}\t{name}\n")

    # Straight into PostgreSQL: the other members, as a data import does.
    imported = [(str(uuid.uuid4()), f"feed-bench-{tag}-m{index}@example.com", f"Member {index}")
                for index in range(max(0, members - len(signed)))]
    member_ids = [user_id for user_id, _ in signed] + [user_id for user_id, _, _ in imported]
    script = ["BEGIN;",
              copy("users", ["id", "apple_id", "email", "display_name"],
                   [(user_id, f"dev:{email}", email, name) for user_id, email, name in imported]),
              copy("members", ["community_id", "user_id", "role", "joined_at", "first_joined_at", "invited_by"],
                   [(community, user_id, "member", joined, joined, admin_id)
                    for user_id, _, _ in imported
                    for joined in [timestamp(now - timedelta(days=rng.uniform(1, 700)))]])]

    def later(moment, hours):
        """Some time in the `hours` after `moment`, and not after now."""
        return timestamp(min(now, moment + timedelta(hours=rng.uniform(0, hours))))

    # Posts, newest (index 0) first.
    post_rows, comment_rows, reaction_rows, vote_rows = [], [], [], []
    clock = now - timedelta(minutes=5)
    polls = 0
    for index in range(posts):
        post_id = str(uuid.uuid4())
        created = clock
        clock -= timedelta(seconds=rng.expovariate(1 / 780))
        first_page = index < FIRST_PAGE
        kind = rng.random()
        post_type, media, poll = "text", "[]", None
        if index == 4 or (index > 0 and kind < 0.02 and index not in PINNED_AT):
            post_type = "poll"
            question, options = rng.choice(POLL_QUESTIONS)
            options = options[:rng.randint(2, len(options))]
            poll = {"allowMultiple": rng.random() < 0.2, "options": options, "question": question}
            if created < now - timedelta(days=7) and rng.random() < 0.5:
                poll["closesAt"] = (created + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            polls += 1
        elif index > 0 and kind < 0.10:
            post_type = "photo"
            media = json.dumps([f"https://media.orbitcove.test/bench/{uuid.uuid4()}.jpg"
                                for _ in range(rng.randint(1, 3))])
        elif index > 0 and kind < 0.11:
            post_type = "announcement"
        pin = PINNED_AT.index(index) if index in PINNED_AT else None
        post_rows.append((
            post_id, community, rng.choice(member_ids), post_type,
            writer.text(4, 20) if poll else writer.text(8, 60), media,
            "true" if pin is not None else "false", "true" if post_type == "announcement" else "false",
            json.dumps(poll) if poll else None,
            timestamp(created + timedelta(hours=1)) if pin is not None else None,
            timestamp(now + timedelta(days=14)) if pin == 2 else None,
            timestamp(created), timestamp(created)))
        if rng.random() < (0.5 if first_page else 0.095) or index == 0:
            count = 1 + int(29 * rng.random() ** 2)
            people = rng.sample(member_ids, count)
            if first_page and reader_id not in people and rng.random() < 0.3:
                people[0] = reader_id
            for person in people:
                kind = rng.choices(REACTION_TYPES, REACTION_WEIGHTS)[0]
                reaction_rows.append((post_id, person, kind, later(created, 48)))
        if rng.random() < (0.4 if first_page else 0.08):
            top_level, at = [], created
            for _ in range(rng.randint(1, 12)):
                comment_id = str(uuid.uuid4())
                parent = rng.choice(top_level) if top_level and rng.random() < 0.2 else None
                if parent is None:
                    top_level.append(comment_id)
                at = min(now, at + timedelta(minutes=rng.expovariate(1 / 240)))
                comment_rows.append((comment_id, post_id, rng.choice(member_ids), parent, writer.text(3, 25),
                                     timestamp(at), timestamp(at)))
        if poll:
            voters = rng.sample(member_ids, rng.randint(len(member_ids) // 20, len(member_ids) * 2 // 5))
            if first_page and reader_id not in voters:
                voters[0] = reader_id
            for voter in voters:
                chosen = rng.sample(range(len(poll["options"])), rng.randint(1, 2) if poll["allowMultiple"] else 1)
                for option in chosen:
                    vote_rows.append((post_id, voter, option, later(created, 48)))

    script += [
        copy("posts", ["id", "community_id", "author_id", "type", "content", "media_urls", "is_pinned",
                       "is_announcement", "poll_data", "pinned_at", "pinned_until", "created_at", "updated_at"],
             post_rows),
        copy("comments", ["id", "post_id", "author_id", "parent_id", "content", "created_at", "updated_at"],
             comment_rows),
        copy("reactions", ["post_id", "user_id", "type", "created_at"], reaction_rows),
        copy("poll_votes", ["post_id", "user_id", "option_index", "created_at"], vote_rows),
        "COMMIT;",
        # Settled as a database that has had these rows for a while: hint bits set, visibility
        # map and statistics current (no autovacuum catching up during the runs).
        "VACUUM (ANALYZE) users, members, posts, comments, reactions, poll_votes, post_counts, change_log;",
    ]
    psql("\n".join(script))

    # post_counts as the triggers left it, against the rows themselves, for every post; and
    # the posts the search finds, as PostStore.search's hits (in the post or in a comment).
    query = " ".join(QUERY_WORDS)
    checked = psql(f"""
        WITH counted AS (
            SELECT c.post_id, sum(c.likes) AS likes, sum(c.loves) AS loves, sum(c.laughs) AS laughs,
                   sum(c.celebrates) AS celebrates, sum(c.comments) AS comments
            FROM post_counts c JOIN posts p ON p.id = c.post_id
            WHERE p.community_id = '{community}' GROUP BY c.post_id
        ), reacted AS (
            SELECT r.post_id, count(*) FILTER (WHERE r.type = 'like') AS likes,
                   count(*) FILTER (WHERE r.type = 'love') AS loves,
                   count(*) FILTER (WHERE r.type = 'laugh') AS laughs,
                   count(*) FILTER (WHERE r.type = 'celebrate') AS celebrates
            FROM reactions r JOIN posts p ON p.id = r.post_id
            WHERE p.community_id = '{community}' GROUP BY r.post_id
        ), commented AS (
            SELECT c.post_id, count(*) AS comments
            FROM comments c JOIN posts p ON p.id = c.post_id
            WHERE p.community_id = '{community}' AND c.deleted_at IS NULL GROUP BY c.post_id
        )
        SELECT count(*) FROM counted FULL JOIN reacted USING (post_id) FULL JOIN commented USING (post_id)
        WHERE coalesce(counted.likes, 0) <> coalesce(reacted.likes, 0)
           OR coalesce(counted.loves, 0) <> coalesce(reacted.loves, 0)
           OR coalesce(counted.laughs, 0) <> coalesce(reacted.laughs, 0)
           OR coalesce(counted.celebrates, 0) <> coalesce(reacted.celebrates, 0)
           OR coalesce(counted.comments, 0) <> coalesce(commented.comments, 0);
        SELECT count(*) FROM posts WHERE community_id = '{community}' AND search_vector IS NULL;
        SELECT count(*) FROM members WHERE community_id = '{community}' AND left_at IS NULL;
        WITH q AS (SELECT feed_search_query(feed_search_config('{community}'), '{query}') AS query)
        SELECT count(DISTINCT id) FROM (
            SELECT p.id FROM posts p, q
            WHERE p.community_id = '{community}' AND p.deleted_at IS NULL AND p.search_vector @@ q.query
            UNION ALL
            SELECT p.id FROM comments c JOIN posts p ON p.id = c.post_id, q
            WHERE p.community_id = '{community}' AND p.deleted_at IS NULL AND c.deleted_at IS NULL
              AND c.search_vector @@ q.query
        ) hits;
    """).split()
    wrong_counts, without_vector, member_count, matches = (int(value) for value in checked)
    if wrong_counts or without_vector:
        sys.exit(f"seed: {wrong_counts} posts whose post_counts differ from their rows, "
                 f"{without_vector} posts without a search vector")
    print(f"COMMUNITY={community} USER_ID={reader_id} TARGET_POST={post_rows[0][0]} "
          f"QUERY={'%20'.join(QUERY_WORDS)} SEARCH_MATCHES={matches} POSTS={len(post_rows)} MEMBERS={member_count} "
          f"REACTIONS={len(reaction_rows)} COMMENTS={len(comment_rows)} POLLS={polls} VOTES={len(vote_rows)}")


def tokens(directory):
    people = [line.rstrip("\n").split("\t") for line in open(f"{directory}/people")]
    with ThreadPoolExecutor(4) as pool:
        signed = list(pool.map(lambda item: dev_sign_in(item[1][0], item[1][1], address(84, item[0])),
                               enumerate(people)))
    quoted = [f'"{token}"' for _, token in signed]
    with open(f"{directory}/tokens.lua.new", "w") as out:
        out.write(f"reader = {quoted[0]}\nreactors = {{{', '.join(quoted[1:])}}}\n")
    os.replace(f"{directory}/tokens.lua.new", f"{directory}/tokens.lua")  # whole or not at all
    print(f"READER_TOKEN={signed[0][1]}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, directory, numbers = sys.argv[1], sys.argv[2], [int(value) for value in sys.argv[3:]]
    if mode == "seed":
        defaults = [500, 50000, 50]
        members, posts, reactors = numbers + defaults[len(numbers):]
        if members < reactors + 2:
            sys.exit("seed: MEMBERS must be at least REACTORS + 2 (the admin and the reader)")
        seed(directory, members, posts, reactors)
    elif mode == "tokens":
        tokens(directory)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
