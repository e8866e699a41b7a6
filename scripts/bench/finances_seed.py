#!/usr/bin/env python3
"""Seeds the finances benchmark (scripts/bench/finances.sh): three communities on the
services' loopback ports and the dev database, one of them grown in stages.

    finances_seed.py setup DIR [MEMBERS] [SETTLE_MEMBERS] [SETTLE_EXPENSES]   (50 200 2000)

Through the API, as the feed seed does: an admin signs in and makes the three communities, and
one reader (every client of the benchmark) signs in and joins each with an invite. The other
members go straight into PostgreSQL as the tables' owner, like a data import (feed_seed.py and
notifications_seed.py import theirs the same way):

  ledger      MEMBERS members (the admin and the reader among them); no expenses yet, `expenses`
              adds them;
  settle-20   SETTLE_MEMBERS members, SETTLE_EXPENSES expenses among 20 of them only, so exactly
              20 members have a non-zero net (owing and owed mixed, as nets that add up to zero
              are): GET …/balances/simplified settles them by the exact search ("minimum");
  settle-200  SETTLE_MEMBERS members, SETTLE_EXPENSES expenses among all of them, every one left
              with a non-zero net: more than 20, so the greedy plan ("greedy").
The two settling communities are in euros only, so each settles one currency of 20 and of 200
nets (a few dollar expenses would add a second, smaller settlement beside it).

Writes DIR/state.json (the communities, the members, the reader's email) for the other modes.
Prints shell assignments: COMMUNITY=<the ledger's id> USER_ID=<the reader's id>
SETTLE_20=<id> SETTLE_200=<id> MEMBERS SETTLE_MEMBERS, SETTLE_20_EXPENSES SETTLE_200_EXPENSES
(with the few added to give a member left at zero a net) and NONZERO_20 NONZERO_200 (members
with a non-zero net, from ledger_balances).

    finances_seed.py expenses DIR TARGET

Adds expenses to the ledger community until it holds TARGET (the benchmark grows it 1,000 →
5,000 → 20,000), each as the service writes one: paid by a random member, split equally
(`equal`, largest remainder, the leftover minor units to the members listed first, so the
amounts add up to the total) among 2 to 8 random members, the payer usually among them; in
euros, about 3% in US dollars; a log-normal amount around 25.00 (1.00 to 2,000.00); a
description and category from a team's usual spending; one about every 80 minutes back from
the setup's time, so each stage adds older history (20,000 cover about three years). Prints
EXPENSES=<live expenses in the community> USD_EXPENSES SPLITS, and BALANCE_ROWS RECOMPUTED_ROWS
PAIR_ROWS (non-zero rows of ledger_balances, of ledger_recomputed and of ledger_pairs).

Rows go in with COPY as the owner, so every trigger fires as for the service's own INSERTs: each
split takes its transaction's community, currency, payer and liveness (splits_from_transaction)
and moves ledger_balances and ledger_pairs (splits_to_balances), and the change log gets its
rows. No revisions or messages: an import, not a member's request. After every insert the seed
checks the kept rows against the rows they are kept from: ledger_balances against
`ledger_recomputed(community)` and ledger_pairs against the same sum per pair, non-zero rows
only, printing both counts (to stderr); it exits with an error if they differ, or if a
settling community does not have exactly its number of non-zero nets.

    finances_seed.py tokens DIR

Signs the reader in again (an access token lasts 15 minutes) and writes DIR/tokens.lua
(`reader = "<token>"`); prints READER_TOKEN=<token>.
"""

import json
import math
import os
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone

from bench_api import AUTH, CORE, call, psql

# What a team spends on, with the category the app files it under.
SPENDING = [
    ("Pitch hire", "other"), ("Referee fee", "other"), ("Kit washing", "other"), ("Trophy engraving", "other"),
    ("Team dinner", "food"), ("Pizza after the match", "food"), ("Snacks and water", "food"),
    ("End of season party", "food"), ("Coffee and cake for the parents", "food"),
    ("Fuel to the away game", "travel"), ("Minibus hire", "travel"), ("Train tickets", "travel"),
    ("Parking at the tournament", "travel"), ("Tournament entry", "dues"), ("League fees", "dues"),
    ("New balls", "equipment"), ("Bibs and cones", "equipment"), ("First aid kit", "equipment"),
    ("Goalkeeper gloves", "equipment"), ("Water bottles", "equipment"),
]
USD_RATE = 0.03
MINUTES_APART = 80
BATCH = 1000


def numbers(sql):
    """The integers `sql` answers, every field of every row in order."""
    return [int(value) for value in psql(sql).replace("|", "\n").split()]


def dev_sign_in(email, name, address):
    """The development sign-in (bench_api.sign_in, with an email we keep): (id, access token)."""
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": name}, address=address)
    return data["user"]["id"], data["accessToken"]


def copy(table, columns, rows):
    """A COPY … FROM STDIN block in text format (no value here holds a tab, newline or backslash)."""
    lines = ["\t".join("\\N" if value is None else str(value) for value in row) for row in rows]
    return f"COPY {table} ({', '.join(columns)}) FROM STDIN;\n" + "\n".join(lines) + ("\n" if lines else "") + "\\.\n"


def equal_split(total, people):
    """SplitAllocation's `equal`: the floor each, the leftover units one each to the members
    listed first (equal weights leave equal remainders, so listing order decides)."""
    base, extra = divmod(total, len(people))
    return [(person, base + (1 if index < extra else 0)) for index, person in enumerate(people)]


class Ledger:
    """Expense rows for COPY, with the nets they leave (as the triggers will keep them)."""

    def __init__(self, community, rng, now):
        self.community, self.rng, self.now = community, rng, now
        self.transactions, self.splits = [], []  # the splits: one list per transaction
        self.nets = {}

    def add(self, payer, sharers, total, currency, index):
        """One equal-split expense, `index` steps of about MINUTES_APART back from now."""
        transaction_id = str(uuid.uuid4())
        description, category = self.rng.choice(SPENDING)
        created = self.now - timedelta(minutes=index * MINUTES_APART + self.rng.uniform(0, MINUTES_APART / 2))
        self.transactions.append((
            transaction_id, self.community, payer, "expense", description, total, currency, payer, category,
            created.date().isoformat(), "equal", created.isoformat(), created.isoformat()))
        self.splits.append([])
        for person, amount in equal_split(total, sharers):
            self.splits[-1].append((transaction_id, person, amount))
            if person != payer:
                self.nets[(currency, payer)] = self.nets.get((currency, payer), 0) + amount
                self.nets[(currency, person)] = self.nets.get((currency, person), 0) - amount

    def random_expense(self, people, index, usd_rate):
        """Paid by a random member, split equally among 2 to 8 random members (the payer among
        them four times in five), an amount around 25.00."""
        payer = self.rng.choice(people)
        sharers = self.rng.sample(people, min(len(people), self.rng.randint(2, 8)))
        if payer not in sharers and self.rng.random() < 0.8:
            sharers[0] = payer
        total = max(100, min(200000, round(math.exp(self.rng.gauss(math.log(2500), 0.9)))))
        if self.rng.random() < 0.5:
            total = max(100, round(total, -2))  # whole euros, as receipts often are
        currency = "USD" if self.rng.random() < usd_rate else "EUR"
        self.add(payer, sharers, total, currency, index)

    def script(self):
        """The expenses in transactions of BATCH: every split updates two balance rows and a
        pair row, and in one transaction each update walks past the versions the earlier ones
        left, which nobody can prune before it commits (adding 15,000 expenses at once took
        35 s on a scratch database, in batches 10 s)."""
        script = []
        for start in range(0, len(self.transactions), BATCH):
            script += [
                "BEGIN;",
                copy("transactions", ["id", "community_id", "created_by", "type", "description", "total_amount",
                                      "currency", "paid_by", "category", "transaction_date", "split_method",
                                      "created_at", "updated_at"], self.transactions[start:start + BATCH]),
                # community_id, currency, payer_id and live come from the transaction (the trigger).
                copy("splits", ["transaction_id", "user_id", "amount"],
                     [row for rows in self.splits[start:start + BATCH] for row in rows]),
                "COMMIT;",
            ]
        return script


# Settled as a database that has had these rows for a while: the balance rows were updated
# once per split, so vacuumed; statistics current (no autovacuum catching up during the runs).
SETTLED = "VACUUM (ANALYZE) users, members, transactions, splits, ledger_balances, ledger_pairs, change_log;"


def check_ledger(community, name):
    """The kept rows beside the rows they are kept from (non-zero rows only); exits if they
    differ. Returns the non-zero rows: kept balances, recomputed balances, kept pairs."""
    kept_balances, summed_balances, balances_differ, kept_pairs, summed_pairs, pairs_differ = numbers(f"""
        WITH kept AS (
            SELECT currency, user_id, net FROM ledger_balances WHERE community_id = '{community}' AND net <> 0
        ), summed AS (
            SELECT currency, user_id, net FROM ledger_recomputed('{community}') WHERE net <> 0
        )
        SELECT (SELECT count(*) FROM kept), (SELECT count(*) FROM summed),
               (SELECT count(*) FROM kept FULL JOIN summed USING (currency, user_id)
                WHERE kept.net IS DISTINCT FROM summed.net);
        WITH kept AS (
            SELECT currency, low_user, high_user, amount FROM ledger_pairs
            WHERE community_id = '{community}' AND amount <> 0
        ), summed AS (
            -- As ledger_apply keeps them: positive, the lower id owes the higher.
            SELECT s.currency, least(s.user_id, t.paid_by) AS low_user, greatest(s.user_id, t.paid_by) AS high_user,
                   sum(CASE WHEN s.user_id < t.paid_by THEN s.amount ELSE -s.amount END)::bigint AS amount
            FROM splits s JOIN transactions t ON t.id = s.transaction_id AND t.deleted_at IS NULL
            WHERE t.community_id = '{community}' AND s.user_id <> t.paid_by
            GROUP BY 1, 2, 3
        ), nonzero AS (SELECT * FROM summed WHERE amount <> 0)
        SELECT (SELECT count(*) FROM kept), (SELECT count(*) FROM nonzero),
               (SELECT count(*) FROM kept FULL JOIN nonzero USING (currency, low_user, high_user)
                WHERE kept.amount IS DISTINCT FROM nonzero.amount);
    """)
    same = balances_differ == 0 and pairs_differ == 0
    print(f"ledger check, {name}: ledger_balances {kept_balances} non-zero rows, ledger_recomputed "
          f"{summed_balances} ({balances_differ} differ); ledger_pairs {kept_pairs} non-zero rows, summed from the "
          f"splits {summed_pairs} ({pairs_differ} differ): {'equal' if same else 'DIFFERENT'}", file=sys.stderr)
    if not same:
        sys.exit(f"seed: the kept balances of {name} ({community}) differ from the rows they are kept from")
    return kept_balances, summed_balances, kept_pairs


def import_members(community, admin_id, tag, label, count, rng, now):
    """`count` new users, members of `community` since some time in the past two years: their
    ids and the COPY blocks that make them."""
    people = [(str(uuid.uuid4()), f"finances-bench-{tag}-{label}{index}@example.com", f"Member {label}{index}")
              for index in range(count)]
    return [user_id for user_id, _, _ in people], [
        copy("users", ["id", "apple_id", "email", "display_name"],
             [(user_id, f"dev:{email}", email, name) for user_id, email, name in people]),
        copy("members", ["community_id", "user_id", "role", "joined_at", "first_joined_at", "invited_by"],
             [(community, user_id, "member", joined, joined, admin_id)
              for user_id, _, _ in people
              for joined in [(now - timedelta(days=rng.uniform(1, 700))).isoformat()]]),
    ]


def settling(community, members, takers, expenses, rng, now):
    """SETTLE_EXPENSES euro expenses among `takers` members only, then, while one of them has a
    zero net, one more that gives them one (they pay, split with a member whose net it does
    not zero): every taker ends owing or owed, everyone else at zero."""
    ledger = Ledger(community, rng, now)
    people = rng.sample(members, takers)
    for index in range(expenses):
        ledger.random_expense(people, index, usd_rate=0)
    index = expenses
    while zeroed := [person for person in people if ledger.nets.get(("EUR", person), 0) == 0]:
        payer = zeroed[0]
        total = 2 * rng.randint(500, 5000)  # even: each of the two owes exactly half
        other = next(person for person in people
                     if person != payer and ledger.nets.get(("EUR", person), 0) - total // 2 != 0)
        ledger.add(payer, [payer, other], total, "EUR", index)
        index += 1
    return ledger


def nonzero_nets(community):
    """Members with a non-zero net (ledger_balances), owed and owing."""
    return numbers(f"""
        SELECT count(*), count(*) FILTER (WHERE net > 0), count(*) FILTER (WHERE net < 0)
        FROM ledger_balances WHERE community_id = '{community}' AND net <> 0;
    """)


def setup(directory, members, settle_members, settle_expenses):
    rng = random.Random(2026)
    now = datetime.now(timezone.utc)
    tag = uuid.uuid4().hex[:8]

    # Through the API: the admin makes the three communities; the reader joins each.
    admin_email, reader_email = f"finances-bench-{tag}-admin@example.com", f"finances-bench-{tag}-reader@example.com"
    admin_id, admin_token = dev_sign_in(admin_email, "Bench admin", "10.86.0.1")
    reader_id, reader_token = dev_sign_in(reader_email, "Bench reader", "10.86.0.2")
    communities = {}
    for index, (key, name) in enumerate([("ledger", "Finances bench"), ("settle-20", "Finances bench: 20 owing"),
                                         ("settle-200", "Finances bench: 200 owing")]):
        community = call(CORE, "POST", "/api/v1/communities", {"name": name}, admin_token, address="10.86.1.1")["id"]
        invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token,
                      address="10.86.1.1")["code"]
        call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=reader_token, address=f"10.86.2.{index + 1}")
        communities[key] = community

    # Straight into PostgreSQL: everyone else, then the settling communities' expenses.
    script = ["BEGIN;"]
    ids = {}
    for key, count in [("ledger", members), ("settle-20", settle_members), ("settle-200", settle_members)]:
        imported, blocks = import_members(communities[key], admin_id, tag, key.replace("-", ""), count - 2, rng, now)
        ids[key] = [admin_id, reader_id] + imported
        script += blocks
    ledgers = {
        "settle-20": settling(communities["settle-20"], ids["settle-20"], 20, settle_expenses, rng, now),
        "settle-200": settling(communities["settle-200"], ids["settle-200"], settle_members, settle_expenses, rng, now),
    }
    script.append("COMMIT;")
    for ledger in ledgers.values():
        script += ledger.script()
    psql("\n".join(script + [SETTLED]))

    nonzero = {}
    for key, wanted in [("settle-20", 20), ("settle-200", settle_members)]:
        check_ledger(communities[key], key)
        count, owed, owing = nonzero_nets(communities[key])
        print(f"{key}: {count} members with a non-zero net ({owed} owed, {owing} owing), "
              f"{len(ledgers[key].transactions)} expenses", file=sys.stderr)
        if count != wanted or not owed or not owing:
            sys.exit(f"seed: {key} has {count} non-zero nets ({owed} owed, {owing} owing); it should have {wanted}")
        nonzero[key] = count
    member_count, = numbers(f"SELECT count(*) FROM members WHERE community_id = '{communities['ledger']}' "
                           "AND left_at IS NULL;")

    state = {"now": now.isoformat(), "tag": tag, "communities": communities, "ledger_members": ids["ledger"],
             "reader": {"id": reader_id, "email": reader_email, "name": "Bench reader"}}
    with open(f"{directory}/state.json", "w") as out:
        json.dump(state, out)
    print(f"COMMUNITY={communities['ledger']} USER_ID={reader_id} SETTLE_20={communities['settle-20']} "
          f"SETTLE_200={communities['settle-200']} MEMBERS={member_count} SETTLE_MEMBERS={settle_members} "
          f"SETTLE_20_EXPENSES={len(ledgers['settle-20'].transactions)} "
          f"SETTLE_200_EXPENSES={len(ledgers['settle-200'].transactions)} "
          f"NONZERO_20={nonzero['settle-20']} NONZERO_200={nonzero['settle-200']}")


def expenses(directory, target):
    state = json.load(open(f"{directory}/state.json"))
    community = state["communities"]["ledger"]
    present, = numbers(f"SELECT count(*) FROM transactions WHERE community_id = '{community}';")
    if present < target:
        # Seeded by how many there are, so the same stages give the same ledger.
        ledger = Ledger(community, random.Random(2026 + present), datetime.fromisoformat(state["now"]))
        for index in range(present, target):
            ledger.random_expense(state["ledger_members"], index, USD_RATE)
        psql("\n".join(ledger.script() + [SETTLED]))
    balance_rows, recomputed_rows, pair_rows = check_ledger(community, f"the ledger at {target} expenses")
    live, usd, splits = numbers(f"""
        SELECT count(*), count(*) FILTER (WHERE currency = 'USD'),
               (SELECT count(*) FROM splits WHERE community_id = '{community}' AND live)
        FROM transactions WHERE community_id = '{community}' AND deleted_at IS NULL AND type = 'expense';
    """)
    print(f"EXPENSES={live} USD_EXPENSES={usd} SPLITS={splits} BALANCE_ROWS={balance_rows} "
          f"RECOMPUTED_ROWS={recomputed_rows} PAIR_ROWS={pair_rows}")


def tokens(directory):
    reader = json.load(open(f"{directory}/state.json"))["reader"]
    _, token = dev_sign_in(reader["email"], reader["name"], "10.86.3.1")
    with open(f"{directory}/tokens.lua.new", "w") as out:
        out.write(f'reader = "{token}"\n')
    os.replace(f"{directory}/tokens.lua.new", f"{directory}/tokens.lua")  # whole or not at all
    print(f"READER_TOKEN={token}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, directory, numbers = sys.argv[1], sys.argv[2], [int(value) for value in sys.argv[3:]]
    if mode == "setup":
        defaults = [50, 200, 2000]
        members, settle_members, settle_expenses = numbers + defaults[len(numbers):]
        if members < 2 or settle_members < 21:
            sys.exit("seed: MEMBERS must be at least 2 (the admin and the reader), SETTLE_MEMBERS at least 21")
        setup(directory, members, settle_members, settle_expenses)
    elif mode == "expenses" and len(numbers) == 1:
        expenses(directory, numbers[0])
    elif mode == "tokens":
        tokens(directory)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
