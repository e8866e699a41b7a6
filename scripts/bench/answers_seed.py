#!/usr/bin/env python3
"""Seeds the answers benchmark (scripts/bench/answers.sh), through the services' own API on
their loopback ports: MEMBERS people sign in, the first makes a community and the others
join it; the first then makes 2 × MEMBERS + 1 single events next week (a capacity of 12 on
each, so every answer places the instance's yeses, as a team event with limited places does):
one per member for the spread shape, one for everyone, one per member for the floor (whose
upserts place nothing, so they must not touch the service's instances).
Writes, into DIR:

    tokens.lua   a Lua table of the members' access tokens, then one of event ids
                 (member i answers event i in the spread shape; everyone answers the last
                 event in the one-event shape);
    floor.sql    pgbench's reference: the same answer as one upsert per transaction, entered
                 as the member (app_enter_as_user, as the service does), client i as member i.

Prints shell assignments: COMMUNITY=<id> SHARED_EVENT=<the last event's id>.
"""

import sys
from datetime import datetime, timedelta, timezone

from bench_api import CORE, call, sign_in


def main():
    members, directory = int(sys.argv[1]), sys.argv[2]
    people = [sign_in(index, prefix="answers-bench") for index in range(members)]
    admin_token = people[0][1]
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Answers bench"}, admin_token)["id"]
    invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token)["code"]
    for index, (_, token) in enumerate(people[1:], start=1):
        call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=token, address=f"10.81.0.{index % 250 + 1}")
    start = (datetime.now(timezone.utc) + timedelta(days=7)).replace(minute=0, second=0, microsecond=0)
    events = []
    for index in range(2 * members + 1):
        body = {"title": f"Game {index}", "category": "game", "capacity": 12,
                "startsAt": (start + timedelta(hours=index)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "endsAt": (start + timedelta(hours=index + 2)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        events.append(call(CORE, "POST", f"/api/v1/communities/{community}/events", body, admin_token)["id"])

    def lua(values):
        return "{" + ", ".join(f'"{value}"' for value in values) + "}"

    with open(f"{directory}/tokens.lua", "w") as out:
        out.write(f"tokens = {lua(token for _, token in people)}\nevents = {lua(events[:members + 1])}\n")

    users = "{" + ",".join(user for user, _ in people) + "}"
    floor = "{" + ",".join(events[members + 1:]) + "}"
    # pgbench's :client_id runs 0..clients-1; the status alternates at random, as answers do.
    with open(f"{directory}/floor.sql", "w") as out:
        out.write(f"""\\set yes random(0, 1)
BEGIN;
SELECT app_enter_as_user(('{users}'::uuid[])[:client_id % {members} + 1]);
INSERT INTO rsvps AS r (event_id, recurrence_id, user_id, family_member_id, status, plus_ones, note, responded_at,
                        updated_at, queued_at)
VALUES (('{floor}'::uuid[])[:client_id % {members} + 1], NULL, ('{users}'::uuid[])[:client_id % {members} + 1], NULL,
        CASE WHEN :yes = 1 THEN 'yes' ELSE 'no' END::rsvp_status, 0, NULL,
        clock_timestamp(), clock_timestamp(), clock_timestamp())
ON CONFLICT (event_id, recurrence_id, user_id, family_member_id) DO UPDATE SET
    status = EXCLUDED.status, plus_ones = EXCLUDED.plus_ones, note = EXCLUDED.note,
    responded_at = clock_timestamp(), updated_at = clock_timestamp(),
    queued_at = CASE WHEN EXCLUDED.status = 'yes' AND (r.status <> 'yes' OR EXCLUDED.plus_ones > r.plus_ones)
                     THEN clock_timestamp() ELSE r.queued_at END
RETURNING 1;
COMMIT;
""")
    print(f"COMMUNITY={community} SHARED_EVENT={events[members]}")


if __name__ == "__main__":
    main()
