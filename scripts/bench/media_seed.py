#!/usr/bin/env python3
"""The API side of the media benchmark (scripts/bench/media.sh): a member and a community,
upload URLs for files, a check of one processed image, and the clean-up. Standard library only.

    media_seed.py setup DIR

Signs a new member in (auth's development sign-in, on its loopback port) and makes a
community, whose admin may post photos. Writes DIR/state.json (the member's email, the
community) for the other modes; prints COMMUNITY=<id> USER_ID=<id>.

    media_seed.py request DIR TAG TARGET LIST OUT

For each file named in LIST (one path a line): its size and SHA-256, then
POST /api/v1/media/upload through the gateway (purpose `post`, image/jpeg, filename
TAG-<the file's name>, so the script finds a run's rows by community and TAG). Writes OUT, one
line per file: the media id, the file, the upload URL and each header the answer says to send
("Name: value"), tab-separated, for curl. TARGET `gateway` keeps the URL as answered (through
nginx on 127.0.0.1:8080); `direct` sends the same signed PUT straight to the media service on
127.0.0.1:8084 (the signature covers the key, expiry, type, length and checksum, not the host),
to show what the gateway costs. Refuses anything but the local store's PUT.

    media_seed.py check DIR MEDIA_ID OUT

Reads the media's details (must be `ready`), then GET /api/v1/media/{id}?variant=large without
following it (must be 302 to a signed URL through the gateway), and saves what that URL serves
to OUT. Prints `status=… width=… height=… variants=thumb,large,original large_bytes=…`.

    media_seed.py delete DIR OUT...

Deletes (DELETE /api/v1/media/{id}) every media listed in the OUT files, so the service's
sweep removes their files the next time it runs; prints how many. Best effort: a failure is
counted, not fatal.
"""

import hashlib
import http.client
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

from bench_api import AUTH, CORE, call

GATEWAY = "http://127.0.0.1:8080"
DIRECT = "http://127.0.0.1:8084"
UPLOAD_PATH = "/api/v1/media/files/uploads/"
CHUNK = 1 << 20


def sign_in(directory, address):
    """The member of state.json signed in again (a token lasts 15 minutes): the access token."""
    state = json.load(open(f"{directory}/state.json"))
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": state["email"], "displayName": "Media bench"},
                address=address)
    return state, data["accessToken"]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def setup(directory):
    email = f"media-bench-{uuid.uuid4().hex[:8]}@example.com"
    data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": "Media bench"},
                address="10.88.0.1")
    user, token = data["user"]["id"], data["accessToken"]
    community = call(CORE, "POST", "/api/v1/communities", {"name": "Media bench"}, token, address="10.88.0.2")["id"]
    with open(f"{directory}/state.json", "w") as out:
        json.dump({"email": email, "user": user, "community": community}, out)
    print(f"COMMUNITY={community} USER_ID={user}")


def request(directory, tag, target, listing, output):
    if target not in ("gateway", "direct"):
        sys.exit(f"seed: TARGET is gateway or direct, not {target}")
    state, token = sign_in(directory, "10.88.1.1")
    paths = [line.strip() for line in open(listing) if line.strip()]
    lines = []
    for path in paths:
        size = os.path.getsize(path)
        answer = call(GATEWAY, "POST", "/api/v1/media/upload", {
            "purpose": "post", "communityId": state["community"], "filename": f"{tag}-{os.path.basename(path)}",
            "mimeType": "image/jpeg", "sizeBytes": size, "sha256": sha256_of(path)}, token)
        upload, media = answer["upload"], answer["media"]
        url = upload["url"]
        if upload["method"] != "PUT" or not url.startswith(GATEWAY + UPLOAD_PATH):
            sys.exit(f"seed: expected the local store's PUT through {GATEWAY}, got {upload['method']} {url[:80]}")
        lengths = [value for name, value in upload["headers"].items() if name.lower() == "content-length"]
        if lengths != [str(size)]:
            sys.exit(f"seed: the upload's headers {sorted(upload['headers'])} do not carry Content-Length {size}")
        if target == "direct":
            url = DIRECT + url[len(GATEWAY):]
        headers = [f"{name}: {value}" for name, value in upload["headers"].items()]
        if any("\t" in field or "\n" in field for field in [path, url] + headers):
            sys.exit("seed: a tab or newline in a path, URL or header would break the list")
        lines.append("\t".join([media["id"], path, url] + headers))
    with open(output, "w") as out:
        out.write("".join(line + "\n" for line in lines))


def check(directory, media_id, output):
    _, token = sign_in(directory, "10.88.2.1")
    details = call(GATEWAY, "GET", f"/api/v1/media/{media_id}/details", token=token)
    if details["status"] != "ready":
        sys.exit(f"seed: media {media_id} is {details['status']} ({details.get('failureReason')}), not ready")
    connection = http.client.HTTPConnection("127.0.0.1", 8080, timeout=30)
    connection.request("GET", f"/api/v1/media/{media_id}?variant=large", headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    response.read()
    location = response.getheader("Location", "")
    if response.status != 302 or not location.startswith(GATEWAY + "/api/v1/media/files/variants/"):
        sys.exit(f"seed: GET …?variant=large answered {response.status} {location[:80]!r}, not 302 to a signed URL")
    with urllib.request.urlopen(location, timeout=30) as served, open(output, "wb") as out:
        body = served.read()
        out.write(body)
    print(f"status={details['status']} width={details['width']} height={details['height']} "
          f"variants={','.join(details['variants'])} large_bytes={len(body)}")


def delete(directory, outputs):
    _, token = sign_in(directory, "10.88.3.1")
    deleted = failed = 0
    for output in outputs:
        for line in open(output):
            media_id = line.split("\t", 1)[0].strip()
            if not media_id:
                continue
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"{GATEWAY}/api/v1/media/{media_id}", method="DELETE",
                    headers={"authorization": f"Bearer {token}"}), timeout=30).close()
                deleted += 1
            except (urllib.error.URLError, OSError):
                failed += 1
    print(f"deleted={deleted} failed={failed}")


def main():
    mode, arguments = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 2 else (None, [])
    if mode == "setup" and len(arguments) == 1:
        setup(*arguments)
    elif mode == "request" and len(arguments) == 5:
        request(*arguments)
    elif mode == "check" and len(arguments) == 3:
        check(*arguments)
    elif mode == "delete" and len(arguments) >= 2:
        delete(arguments[0], arguments[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
