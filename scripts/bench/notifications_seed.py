#!/usr/bin/env python3
"""Seeds and times the notifications benchmark (scripts/bench/notifications.sh), on the
services' loopback ports and the dev database.

    notifications_seed.py seed [MEMBERS]                                        (500)

A coach signs in and makes a community through the API (so every cache sees them as its
admin) and registers a device through the notifications service; MEMBERS - 1 more people
are put straight into PostgreSQL as the tables' owner, like a data import, each a member with
one sandbox device. Prints shell assignments: TOKEN=<the coach's access token> COACH=<their
id> COMMUNITY=<the community's id> RECIPIENTS=<members but the coach>.

    notifications_seed.py events COMMUNITY TOKEN APNS_LOG RECIPIENTS [EVENTS] [GAP]  (20 1.0)

Creates EVENTS events one after another as the coach (POST …/events on core), GAP seconds
apart once the last one's pushes are in, and times each from t0, the event row's
`created_at`: NOW() of the transaction that commits it, so a little before the commit
(the delays below are overstated by the time the request spends in it, never understated).
  history: PostgreSQL, polled every POLL seconds on one connection, first holds a row for
           every recipient (`data->>'eventId'`); the rows commit together, so this is their
           commit, give or take one poll;
  pushes:  the latest `at` of the stand-in's log lines (APNS_LOG, one per answered request)
           accepting a push for that event, once every recipient's device has one.
Prints one line per event and p50/p99 of each (nearest rank: with 20 events p99 is the
slowest); then, from the timestamps the services left in PostgreSQL (read after the runs),
the median time at which each stage began. Same clock throughout: PostgreSQL, the stand-in
and this script share the machine.
"""

import json
import math
import subprocess
import sys
import time
import uuid

from bench_api import CORE, call, psql, sign_in

NOTIFICATIONS = "http://127.0.0.1:8083"
BUNDLE = "app.orbitcove.bench"
POLL = 0.003
TIMEOUT = 60


class Psql:
    """One psql session as the tables' owner; one statement in, its one-line answer out."""

    def __init__(self):
        self.process = subprocess.Popen(
            ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "55432",
             "-U", "orbitcove_owner", "orbitcove"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env={"PGPASSWORD": "orbitcove_owner", "PATH": "/usr/bin:/bin"})

    def one(self, sql):
        self.process.stdin.write(sql.strip().rstrip(";") + ";\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"psql ended on: {sql}")
        return line.strip()

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def seed(members):
    coach, token = sign_in(0, prefix="notifications-bench")
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Notifications bench"}, token)["id"]
    call(NOTIFICATIONS, "POST", "/api/v1/me/devices",
         {"token": uuid.uuid4().hex + uuid.uuid4().hex, "environment": "sandbox", "bundleId": BUNDLE}, token)
    tag = uuid.uuid4().hex[:8]
    sql = f"""
        WITH people AS (
            INSERT INTO users (apple_id, email, display_name)
            SELECT 'notifications-bench-{tag}-' || n, 'notifications-bench-{tag}-' || n || '@example.com',
                   'Member ' || n
            FROM generate_series(1, {members - 1}) AS n
            RETURNING id
        ), joined AS (
            INSERT INTO members (community_id, user_id, role, joined_at, first_joined_at, invited_by)
            SELECT '{community}', id, 'member', NOW() - interval '1 minute', NOW() - interval '1 minute', '{coach}'
            FROM people
            RETURNING user_id
        )
        INSERT INTO devices (token, user_id, environment, bundle_id)
        SELECT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), user_id, 'sandbox', '{BUNDLE}'
        FROM joined;
        ANALYZE users; ANALYZE members; ANALYZE devices; ANALYZE notifications;
    """
    psql(sql)
    db = Psql()
    recipients = int(db.one(f"SELECT count(*) FROM members WHERE community_id = '{community}' "
                            f"AND left_at IS NULL AND user_id <> '{coach}'"))
    db.close()
    print(f"TOKEN={token} COACH={coach} COMMUNITY={community} RECIPIENTS={recipients}")


class PushLog:
    """Follows the stand-in's log: per event id, the (at, status) of every answered push."""

    def __init__(self, path):
        self.file = open(path)
        self.partial = ""
        self.answers = {}

    def read(self):
        chunk = self.file.read()
        if not chunk:
            return False
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        for line in lines:
            record = json.loads(line)
            event = ((record.get("payload") or {}).get("data") or {}).get("eventId")
            self.answers.setdefault(event, []).append((record["at"], record["status"]))
        return True

    def accepted(self, event):
        return [at for at, status in self.answers.get(event, []) if status == 200]


def percentile(values, p):
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def time_event(db, log, community, token, recipients, number):
    """One event: its t0 and, as unix seconds, when its 201, rows and pushes came."""
    body = {"title": f"Practice {number}", "startsAt": f"2031-05-{number % 28 + 1:02d}T18:00:00+02:00"}
    event = call(CORE, "POST", f"/api/v1/communities/{community}/events", body, token)["id"].lower()
    answered = time.time()
    t0 = float(db.one(f"SELECT extract(epoch FROM created_at) FROM events WHERE id = '{event}'"))
    # The rows are written with NOW() of the handler's transaction, which starts after t0.
    poll = (f"SELECT count(*) FROM notifications WHERE created_at >= to_timestamp({t0}) - interval '1 ms' "
            f"AND type = 'event_created' AND data->>'eventId' = '{event}'")
    deadline = time.time() + TIMEOUT
    rows, history = 0, None
    while time.time() < deadline:
        rows = int(db.one(poll))
        if rows >= recipients:
            history = time.time()
            break
        time.sleep(POLL)
    while len(log.accepted(event)) < recipients and time.time() < deadline:
        if not log.read():
            time.sleep(0.005)
    accepted = log.accepted(event)
    return {"event": event, "t0": t0, "api": answered, "rows": rows, "history": history,
            "first_push": min(accepted) if len(accepted) >= recipients else None,
            "pushes": max(accepted) if len(accepted) >= recipients else None,
            "accepted": len(accepted), "refused": len(log.answers.get(event, [])) - len(accepted)}


# Where the time went, from what the services recorded (read after the runs, so no polling
# competes with them): each is NOW() of the statement's transaction.
STAGES = """
    SELECT extract(epoch FROM o.published_at), extract(epoch FROM n.created_at),
           extract(epoch FROM (SELECT min(j.published_at) FROM outbox j
                               WHERE j.message_type = 'notification.push_due' AND j.created_at = n.created_at)),
           extract(epoch FROM (SELECT min(r.sent_at) FROM push_receipts r JOIN notifications x ON x.id = r.notification_id
                               WHERE x.message_id = n.message_id))
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (SELECT message_id, created_at FROM notifications
                       WHERE type = 'event_created' AND data->>'eventId' = '{event}' LIMIT 1) AS n ON true
    LEFT JOIN outbox o ON o.id = n.message_id
"""
STAGE_NAMES = [
    ("published", "core's relay marks event.created published (after the broker's confirm)"),
    ("handler", "the history handler's transaction begins"),
    ("history", "every history row visible (polled)"),
    ("push_job", "the notifications relay marks the push job published"),
    ("push_send", "the push job's transaction begins"),
    ("first_push", "first push accepted by the stand-in"),
    ("pushes", "last push accepted by the stand-in"),
]


def events(community, token, log_path, recipients, count, gap):
    db = Psql()
    log = PushLog(log_path)
    runs = []
    for number in range(1, count + 1):
        run = time_event(db, log, community, token, recipients, number)
        runs.append(run)
        line = f"event={number} api_ms={(run['api'] - run['t0']) * 1000:.1f} rows={run['rows']}"
        for key in ("history", "first_push", "pushes"):
            line += f" {key}_ms=" + (f"{(run[key] - run['t0']) * 1000:.1f}" if run[key] else "timeout")
        print(line + f" accepted={run['accepted']} refused={run['refused']}", flush=True)
        time.sleep(gap)
    for run in runs:
        run["published"], run["handler"], run["push_job"], run["push_send"] = (
            float(value) if value else None for value in db.one(STAGES.format(event=run["event"])).split("|"))
    db.close()

    def since_t0(key):
        return [(run[key] - run["t0"]) * 1000 for run in runs if run.get(key)]

    print(f"\n{count} events to {recipients} recipients each, from t0 = the event row's created_at; "
          "p50 and p99 by nearest rank (p99 of 20 is the slowest):")
    for key, name in [("api", "201 received"), ("history", "every history row"),
                      ("first_push", "first push accepted"), ("pushes", "every push accepted")]:
        values = since_t0(key)
        if not values:
            continue
        print(f"  t0 → {name:20} p50 {percentile(values, 50):7.1f} ms  p99 {percentile(values, 99):7.1f} ms"
              f"  (n={len(values)})")
    print("\nstages, median ms since t0:")
    for key, name in STAGE_NAMES:
        values = since_t0(key)
        if values:
            print(f"  {percentile(values, 50):7.1f}  {name}")
    failures = sum(1 for run in runs if not run["history"] or not run["pushes"])
    if failures:
        print(f"  {failures} of {count} events missed rows or pushes within {TIMEOUT}s")


def main():
    mode, arguments = sys.argv[1], sys.argv[2:]
    if mode == "seed":
        seed(int(arguments[0]) if arguments else 500)
    elif mode == "events":
        community, token, log_path, recipients = arguments[:4]
        count = int(arguments[4]) if len(arguments) > 4 else 20
        gap = float(arguments[5]) if len(arguments) > 5 else 1.0
        events(community, token, log_path, int(recipients), count, gap)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
