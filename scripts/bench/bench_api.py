"""What the benchmark seeds share: calls to the services' own API on their loopback ports,
each sign-in from its own client address so sign-in limits do not interfere."""

import json
import subprocess
import urllib.request
import uuid

AUTH = "http://127.0.0.1:8081"
CORE = "http://127.0.0.1:8082"


def call(base, method, path, body=None, token=None, address="10.77.0.1"):
    """The `data` of a success envelope."""
    request = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json", "x-real-ip": address,
                 **({"authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def sign_in(index, prefix="bench"):
    """A new user through the development sign-in: (id, access token)."""
    email = f"{prefix}-{index}-{uuid.uuid4().hex[:8]}@example.com"
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": f"Bench {index}"},
                address=f"10.77.{index // 250}.{index % 250 + 1}")
    return data["user"]["id"], data["accessToken"]


def psql(sql, separator="|"):
    """Runs `sql` as the tables' owner (past row-level security), like a data import; its
    output, unaligned, fields apart by `separator`."""
    return subprocess.run(["psql", "-X", "-q", "-At", "-F", separator, "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                           "-p", "55432", "-U", "orbitcove_owner", "orbitcove"], input=sql, text=True, check=True,
                          stdout=subprocess.PIPE, env={"PGPASSWORD": "orbitcove_owner", "PATH": "/usr/bin:/bin"}).stdout
