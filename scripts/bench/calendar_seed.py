#!/usr/bin/env python3
"""Seeds the calendar benchmark through the services' own API (on their loopback ports):
COMMUNITIES communities in Europe/Berlin, each with the same MEMBERS people, 200 weekly
series and 2,000 single events spread over the year around now; then the members answer the
next six weeks' instances (yes, maybe or no, some for a dependant) straight into PostgreSQL,
as many answers as a busy team gives. Prints shell assignments for the benchmark script:

    TOKEN=<a member's access token> USER_ID=<their id> COMMUNITY=<the first community's id>
    FROM=<window start> TO=<six weeks later> FEED=<path of the member's all-communities feed>

    calendar_seed.py [COMMUNITIES] [MEMBERS] [SERIES] [SINGLES]   (3 20 200 2000)
"""

import random
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from bench_api import CORE, call, psql, sign_in

BERLIN = ZoneInfo("Europe/Berlin")
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def events(rng, now, series, singles):
    """Weekly practices started over the past year (some ending), and one-off events."""
    bodies = []
    for index in range(series):
        start = (now - timedelta(days=rng.randrange(0, 365))).astimezone(BERLIN)
        start = start.replace(hour=rng.choice([9, 16, 17, 18, 19]), minute=rng.choice([0, 30]),
                              second=0, microsecond=0)
        rule = f"FREQ=WEEKLY;BYDAY={DAYS[start.weekday()]}"
        if index % 5 == 0:
            rule += f";COUNT={rng.randrange(20, 80)}"
        bodies.append({"title": f"Practice {index}", "category": "practice", "recurrenceRule": rule,
                       "startsAt": start.isoformat(), "endsAt": (start + timedelta(minutes=90)).isoformat(),
                       "locationName": f"Field {index % 7}", "capacity": 18 if index % 3 == 0 else None})
    for index in range(singles):
        start = (now + timedelta(days=rng.uniform(-180, 180))).astimezone(BERLIN)
        start = start.replace(minute=0, second=0, microsecond=0)
        bodies.append({"title": f"Game {index}", "category": rng.choice(["game", "meeting", "social"]),
                       "startsAt": start.isoformat(), "endsAt": (start + timedelta(hours=2)).isoformat(),
                       "locationName": f"Venue {index % 40}", "locationAddress": f"{index} Main Street"})
    return bodies


def main():
    defaults = [3, 20, 200, 2000]
    arguments = [int(value) for value in sys.argv[1:]]
    communities, members, series, singles = arguments + defaults[len(arguments):]
    rng = random.Random(2026)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    people = [sign_in(index, prefix="calendar-bench") for index in range(members)]
    (admin_id, admin_token), (user_id, token) = people[0], people[-1]
    window_from, window_to = now, now + timedelta(weeks=6)
    window = (window_from.strftime("%Y-%m-%dT%H:%M:%SZ"), window_to.strftime("%Y-%m-%dT%H:%M:%SZ"))
    answers = []
    ids = []
    for number in range(communities):
        community = call(CORE, "POST", "/api/v1/communities",
                         {"name": f"Calendar bench {number}", "settings": {"timezone": "Europe/Berlin"}},
                         admin_token)["id"]
        ids.append(community)
        invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token)["code"]
        for index, (_, member_token) in enumerate(people[1:], start=1):
            call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=member_token,
                 address=f"10.80.{number}.{index % 250 + 1}")
        bodies = events(rng, now, series, singles)

        def create(body):
            return call(CORE, "POST", f"/api/v1/communities/{community}/events",
                        {k: v for k, v in body.items() if v is not None}, admin_token)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create, bodies))
        instances = call(CORE, "GET", f"/api/v1/communities/{community}/events?from={window[0]}&to={window[1]}",
                         token=admin_token)
        for instance in instances:
            for member_id, _ in people:
                if rng.random() < 0.75:
                    answers.append((instance["id"], instance["recurrenceId"], member_id,
                                    rng.choice(["yes", "yes", "yes", "maybe", "no"])))
    rows = ",\n".join(
        f"('{event}', {('%s' % repr(rid)) if rid else 'NULL'}, '{user}', '{status}')"
        for event, rid, user, status in answers)
    psql(f"""
        INSERT INTO rsvps (event_id, recurrence_id, user_id, status)
        SELECT v.event_id::uuid, v.recurrence_id::timestamptz, v.user_id::uuid, v.status::rsvp_status
        FROM (VALUES {rows}) AS v(event_id, recurrence_id, user_id, status)
        ON CONFLICT DO NOTHING;
        ANALYZE;
    """)
    feed = call(CORE, "POST", "/api/v1/me/calendar-feeds", {}, token)["url"]
    feed_path = feed[feed.index("/api/v1/calendar/"):]
    print(f"TOKEN={token} USER_ID={user_id} COMMUNITY={ids[0]} FROM={window[0]} TO={window[1]} "
          f"FEED={feed_path} ANSWERS={len(answers)}")


if __name__ == "__main__":
    main()
