#!/usr/bin/env python3
"""Seeds the core read benchmark: a community of MEMBERS people (through the services' own
API on their loopback ports, each with its own client address so sign-in limits do not
interfere) and prints shell assignments for the benchmark script:

    TOKEN=<a member's access token> COMMUNITY=<id> USER_ID=<that member's id>
"""

import json
import sys
import urllib.request
import uuid

AUTH = "http://127.0.0.1:8081"
CORE = "http://127.0.0.1:8082"


def call(base, method, path, body=None, token=None, address="10.77.0.1"):
    request = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json", "x-real-ip": address,
                 **({"authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["data"]


def sign_in(index):
    email = f"bench-{index}-{uuid.uuid4().hex[:8]}@example.com"
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": f"Bench {index}"},
                address=f"10.77.{index // 250}.{index % 250 + 1}")
    return data["user"]["id"], data["accessToken"]


def main():
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    admin_id, admin_token = sign_in(0)
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Benchmark club"}, admin_token)["id"]
    invite = call(CORE, "POST", f"/api/v1/communities/{community}/invites", {}, admin_token)["code"]
    user_id, token = admin_id, admin_token
    for index in range(1, members):
        user_id, token = sign_in(index)
        call(CORE, "POST", f"/api/v1/invites/{invite}/join", token=token, address=f"10.78.0.{index % 250 + 1}")
    print(f"TOKEN={token} COMMUNITY={community} USER_ID={user_id}")


if __name__ == "__main__":
    main()
