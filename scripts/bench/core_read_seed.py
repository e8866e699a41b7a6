#!/usr/bin/env python3
"""Seeds the core read benchmark: a community of MEMBERS people (through the services' own
API on their loopback ports, each with its own client address so sign-in limits do not
interfere) and prints shell assignments for the benchmark script:

    TOKEN=<a member's access token> COMMUNITY=<id> USER_ID=<that member's id>
"""

import sys

from bench_api import CORE, call, psql, sign_in


def main():
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    admin_id, admin_token = sign_in(0)
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Benchmark club"}, admin_token)["id"]
    invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token)["code"]
    user_id, token = admin_id, admin_token
    for index in range(1, members):
        user_id, token = sign_in(index)
        call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=token, address=f"10.78.0.{index % 250 + 1}")
    # Plans as a running system has them: PostgreSQL's statistics know the new community.
    # Without this, on a database of a few dozen communities (all of them in the statistics'
    # common values) one newer than the last ANALYZE is estimated to have about no members, its
    # members page's custom plan looks cheaper than the generic one, and PostgreSQL plans the
    # prepared statement again on every call (BENCHMARKS.md, "The second wall").
    psql("ANALYZE users, communities, members;")
    print(f"TOKEN={token} COMMUNITY={community} USER_ID={user_id}")


if __name__ == "__main__":
    main()
