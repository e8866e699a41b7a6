#!/usr/bin/env python3
"""Seeds the running stack for scripts/schemathesis.sh and steers schemathesis through it.

Two roles in one file:

- `python3 scripts/schemathesis_hooks.py seed --base-url URL --out DIR` signs in a few fresh
  users with the development sign-in and gives each real resources to test against: a
  community (with a second user as a plain member and two invite codes, one to join with and
  one to revoke), a spare community for the delete/restore/leave operations, a family member,
  and in the community a weekly series with a capacity (answered so that someone waits on
  its waitlist) and a spare event to delete, plus two calendar feeds, one to read and one to
  revoke; in its feed a post (mentioning the member, who comments on it and reacts), a
  poll (the member voted) and a spare post and a spare reply to delete; and in its ledger an
  expense the owner paid, shared with the member, who paid part of it back (a settlement), a
  spare expense to delete, the owner's PayPal.me handle, and monthly dues (the member paid
  part of the first period and has the second waived) with spare dues to delete; a daily
  shared care reminder (with its occurrences) and a spare reminder to delete; and in the
  media service a photo for the community's posts (uploaded through its signed URL and
  processed), a pending avatar and a spare receipt to delete. It writes
  DIR/state.json (ids and tokens) and DIR/schemathesis.toml, whose dictionaries make
  generated path parameters (and the series' instance starts, a valid window, the feed's
  address, the dues' periods, the reminder's occurrence days and their window, the member in
  ledger, dues and reminder bodies, the currency, the community an upload is for) name those
  resources most of the time.
- Loaded by schemathesis as its hooks module (SCHEMATHESIS_HOOKS=schemathesis_hooks, with
  ORBITCOVE_SCHEMATHESIS_STATE naming state.json), it puts a real access token on every request
  that carries the configured placeholder token: the token of the user who owns the resource in
  the path (a seeded one, or one a request of this run created), otherwise the user with the
  most rate-limit budget left. Several users keep the run within the core and media APIs'
  per-user budgets without loosening them. Requests without the placeholder (generated negative
  credentials) go out as generated.

Seeding needs the standard library only; the hooks run inside schemathesis's venv (they use its
PyYAML and jsonschema_rs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import zlib
from calendar import monthrange
from datetime import date, datetime, timedelta, timezone
from typing import Any

# The bearer token schemathesis is configured with; before_call swaps it for a real one.
PLACEHOLDER_TOKEN = "orbitcove-schemathesis-placeholder"

# How often a generated path parameter names a seeded resource rather than a random value.
SEEDED_PROBABILITY = 0.85


# --- seeding -----------------------------------------------------------------------------------


class SeedError(Exception):
    pass


def call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    """One JSON request; waits out a 429 (Retry-After) up to three times."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(4):
        request = urllib.request.Request(base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        request.add_header("Idempotency-Key", str(uuid.uuid4()))
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            if error.code == 429 and attempt < 3:
                wait = int(error.headers.get("Retry-After") or 5)
                print(f"seed: {method} {path} rate limited; waiting {wait}s", file=sys.stderr)
                time.sleep(min(max(wait, 1), 60))
                continue
            raise SeedError(f"{method} {path} answered {error.code}: {raw[:300]!r}") from None
    raise SeedError(f"{method} {path} stayed rate limited")


def expect(base: str, status: int, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    got, payload = call(base, method, path, body, token)
    if got != status:
        raise SeedError(f"{method} {path} answered {got}, expected {status}: {payload}")
    return payload["data"] if isinstance(payload, dict) and "data" in payload else payload


def timestamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_feed(base: str, feed_file: str, must_contain: str) -> None:
    """A calendar feed, as a calendar app reads it: no bearer token, text/calendar."""
    path = f"/api/v1/calendar/{feed_file}"
    try:
        with urllib.request.urlopen(urllib.request.Request(base + path), timeout=30) as response:
            kind, text = response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        raise SeedError(f"GET /api/v1/calendar/<feed> answered {error.code}: {error.read()[:300]!r}") from None
    if not kind.startswith("text/calendar") or "BEGIN:VCALENDAR" not in text or must_contain not in text:
        raise SeedError(f"GET /api/v1/calendar/<feed> is not the seeded calendar ({kind}): {text[:300]!r}")


def seed_calendar(base: str, item: dict[str, Any], owner: dict[str, Any], member: dict[str, Any],
                  start: datetime) -> list[str]:
    """A weekly series with a capacity of two seats in the item's community, answered on its first
    instance by the owner (with a guest: the seats are full), the owner's family member (who waits)
    and the member (maybe); a spare event to delete; and the owner's two feeds. Returns the
    series' first instance starts."""
    token = owner["token"]
    path = f"/api/v1/communities/{item['community']}"
    series = expect(base, 201, "POST", f"{path}/events", {
        "title": "Schemathesis practice",
        "startsAt": timestamp(start),
        "endsAt": timestamp(start + timedelta(minutes=90)),
        "category": "practice",
        "locationName": "Pitch 2",
        "recurrenceRule": "FREQ=WEEKLY;COUNT=26",
        "rsvpDeadline": timestamp(start - timedelta(hours=2)),
        "capacity": 2,
    }, token)
    spare = expect(base, 201, "POST", f"{path}/events", {
        "title": "Schemathesis spare", "startsAt": timestamp(start + timedelta(days=1))}, token)
    window = expect(
        base, 200, "GET", f"{path}/events?from={timestamp(start - timedelta(days=1))}"
        f"&to={timestamp(start + timedelta(days=35))}", None, token)
    instances = [event["recurrenceId"] for event in window if event["id"] == series["id"]]
    if not instances:
        raise SeedError(f"the window read has no instance of the seeded series: {window}")
    first = instances[0]
    expect(base, 200, "POST", f"{path}/events/{series['id']}/rsvp",
           {"status": "yes", "plusOnes": 1, "recurrenceId": first}, token)
    expect(base, 200, "POST", f"{path}/events/{series['id']}/rsvp",
           {"status": "yes", "familyMemberId": item["familyMember"], "recurrenceId": first}, token)
    expect(base, 200, "POST", f"{path}/events/{series['id']}/rsvp",
           {"status": "maybe", "recurrenceId": first}, member["token"])
    feed = expect(base, 201, "POST", "/api/v1/me/calendar-feeds", {"communityId": item["community"]}, token)
    revocable_feed = expect(base, 201, "POST", "/api/v1/me/calendar-feeds", {"communityId": None}, token)
    feed_file = feed["url"].rsplit("/", 1)[-1]
    read_feed(base, feed_file, f"{series['id']}@orbitcove")
    item.update({
        "event": series["id"],
        "spareEvent": spare["id"],
        "feed": feed["id"],
        "feedFile": feed_file,
        "revocableFeed": revocable_feed["id"],
    })
    return instances


def seed_feed(base: str, item: dict[str, Any], owner: dict[str, Any], member: dict[str, Any],
              closes: datetime) -> None:
    """In the item's community, as its owner: a text post that mentions the member, who comments
    on it and reacts to it; a poll taking several choices, which the member votes in; a spare post
    (sharing the seeded series) and a spare reply (to the member's comment) to delete. Checks that
    the feed and its search find the post."""
    token = owner["token"]
    path = f"/api/v1/communities/{item['community']}"
    post = expect(base, 201, "POST", f"{path}/posts",
                  {"content": "Schemathesis says hello", "mentions": [item["member"]]}, token)
    poll = expect(base, 201, "POST", f"{path}/posts", {
        "type": "poll",
        "content": "Kit colours for next season",
        "pollData": {"question": "Which away kit?", "options": ["Green", "Navy", "Orange"],
                     "allowMultiple": True, "closesAt": timestamp(closes)},
    }, token)
    spare = expect(base, 201, "POST", f"{path}/posts", {"type": "event_share", "linkedEventId": item["event"]}, token)
    comment = expect(base, 201, "POST", f"{path}/posts/{post['id']}/comments",
                     {"content": "Hello back"}, member["token"])
    spare_comment = expect(base, 201, "POST", f"{path}/posts/{post['id']}/comments",
                           {"content": "A reply to delete", "parentId": comment["id"]}, token)
    expect(base, 200, "POST", f"{path}/posts/{post['id']}/reactions", {"type": "celebrate"}, member["token"])
    expect(base, 200, "POST", f"{path}/posts/{poll['id']}/votes", {"optionIndexes": [1]}, member["token"])
    feed = expect(base, 200, "GET", f"{path}/posts?limit=20", None, token)
    if not {post["id"], poll["id"], spare["id"]} <= {entry["id"] for entry in feed}:
        raise SeedError(f"the feed does not list the seeded posts: {feed}")
    found = expect(base, 200, "GET", f"{path}/posts?q=hello", None, token)
    if post["id"] not in {entry["id"] for entry in found}:
        raise SeedError(f"searching the feed for 'hello' does not find the seeded post: {found}")
    item.update({
        "post": post["id"],
        "poll": poll["id"],
        "sparePost": spare["id"],
        "comment": comment["id"],
        "spareComment": spare_comment["id"],
    })


def next_month(day: date) -> date:
    """The same day a month later, or the month's last day when it is shorter (as dues fall due)."""
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return date(year, month, min(day.day, monthrange(year, month)[1]))


def seed_finances(base: str, item: dict[str, Any], owner: dict[str, Any], member: dict[str, Any],
                  due: date) -> None:
    """In the item's community: an expense the owner paid, split equally between the owner and the
    member, who pays part of it back (a settlement), and a spare expense to delete; the owner's
    PayPal.me handle, so the settle-up plan carries a pay link; monthly dues every member owes from
    `due` (the same day in every community, so a period names one everywhere), of which the member
    has paid part of the first period and has the second waived, and spare dues to delete. Checks
    that the balances, the plan and the standings say so."""
    token = owner["token"]
    path = f"/api/v1/communities/{item['community']}"
    split = {"method": "equal", "members": [{"userId": owner["id"]}, {"userId": member["id"]}]}
    expense = expect(base, 201, "POST", f"{path}/transactions", {
        "description": "Schemathesis minibus", "totalAmount": 3000, "currency": "EUR", "category": "travel",
        "split": split}, token)
    spare = expect(base, 201, "POST", f"{path}/transactions", {
        "description": "Schemathesis spare", "totalAmount": 100, "currency": "EUR", "split": split}, token)
    settlement = expect(base, 201, "POST", f"{path}/settlements", {
        "to": owner["id"], "amount": 500, "currency": "EUR", "method": "cash", "note": "Part of the minibus"},
        member["token"])
    expect(base, 200, "PATCH", f"{path}/members/me/payment-handles", {"paypal": "schemathesis"}, token)
    # The owner paid 3,000 and 100, each split equally: the member owes 1,550, less the 500 paid back.
    balances = expect(base, 200, "GET", f"{path}/balances?currency=EUR", None, member["token"])
    nets = {entry["userId"]: entry["net"] for ledger in balances for entry in ledger["members"]}
    if nets != {owner["id"]: 1050, member["id"]: -1050}:
        raise SeedError(f"the seeded ledger's balances are not what it holds: {balances}")
    plan = expect(base, 200, "GET", f"{path}/balances/simplified", None, member["token"])
    transfers = [transfer for ledger in plan for transfer in ledger["transfers"]]
    if ([(transfer["from"], transfer["to"], transfer["amount"]) for transfer in transfers]
            != [(member["id"], owner["id"], 1050)] or not transfers[0]["payLinks"]["paypal"]):
        raise SeedError(f"the settle-up plan is not the member paying the owner, with a pay link: {plan}")
    dues = expect(base, 201, "POST", f"{path}/dues", {
        "name": "Schemathesis season", "amount": 2500, "currency": "EUR", "dueDate": due.isoformat(),
        "recurrence": "monthly"}, token)
    spare_dues = expect(base, 201, "POST", f"{path}/dues", {
        "name": "Schemathesis spare dues", "amount": 100, "currency": "EUR", "dueDate": due.isoformat()}, token)
    if dues["currentPeriod"] != due.isoformat():
        raise SeedError(f"the seeded dues' current period is not their first due date: {dues}")
    dues_path = f"{path}/dues/{dues['id']}"
    paid = expect(base, 201, "POST", f"{dues_path}/payments",
                  {"userId": member["id"], "amount": 1000, "method": "bank_transfer"}, token)
    waived = expect(base, 200, "POST", f"{dues_path}/waivers",
                    {"userId": member["id"], "period": next_month(due).isoformat(), "reason": "Schemathesis"}, token)
    if paid["status"] != "partial" or waived["status"] != "waived":
        raise SeedError(f"the member's standings are not partly paid, then waived: {paid}, {waived}")
    detail = expect(base, 200, "GET", f"{dues_path}?period={due.isoformat()}", None, member["token"])
    standing = {entry["userId"]: entry["amountPaid"] for entry in detail["members"]}
    if standing != {owner["id"]: 0, member["id"]: 1000}:
        raise SeedError(f"the seeded dues' standings are not what was recorded: {detail}")
    item.update({
        "transaction": expense["id"],
        "settlement": settlement["id"],
        "spareTransaction": spare["id"],
        "dues": dues["id"],
        "spareDues": spare_dues["id"],
    })


def seed_reminders(base: str, item: dict[str, Any], owner: dict[str, Any]) -> list[str]:
    """In the item's community, as its owner: a daily care reminder at 07:30 on the community's
    clock (UTC, as no seeded community sets a zone), whose occurrences from yesterday on are
    made at once, and a spare reminder to delete. Checks that the list holds both. Returns the
    days of the reminder's pending occurrences, oldest first."""
    token = owner["token"]
    path = f"/api/v1/communities/{item['community']}"
    reminder = expect(base, 201, "POST", f"{path}/reminders",
                      {"title": "Walk the dog", "recurrenceRule": "FREQ=DAILY", "timeOfDay": "07:30"}, token)
    spare = expect(base, 201, "POST", f"{path}/reminders",
                   {"title": "Schemathesis spare reminder", "recurrenceRule": "FREQ=DAILY", "timeOfDay": "07:30"},
                   token)
    listed = expect(base, 200, "GET", f"{path}/reminders?limit=20", None, token)
    if not {reminder["id"], spare["id"]} <= {entry["id"] for entry in listed}:
        raise SeedError(f"the reminders list does not hold the seeded reminders: {listed}")
    occurrences = expect(base, 200, "GET", f"{path}/reminders/{reminder['id']}/occurrences", None, token)
    pending = [occurrence["date"] for occurrence in occurrences if occurrence["status"] == "pending"]
    if not pending:
        raise SeedError(f"the seeded daily reminder has no pending occurrence: {occurrences}")
    item.update({
        "reminder": reminder["id"],
        "spareReminder": spare["id"],
        "occurrenceDate": pending[0],
    })
    return pending


def png_image(width: int, height: int) -> bytes:
    """A small RGB PNG (a colour gradient) for the media service to process."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // (width - 1), y * 255 // (height - 1), 96)) for x in range(width))
        for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is the answer under test: it is read, not followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def send_upload(upload: dict[str, Any], body: bytes) -> None:
    """Sends a file's bytes as an upload answer says, as the app does: its method to its signed
    URL (the local store's through the gateway, or a bucket's) with exactly its headers and no
    bearer token."""
    request = urllib.request.Request(upload["url"], data=body, method=upload["method"])
    for name, value in upload["headers"].items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
    except urllib.error.HTTPError as error:
        raise SeedError(f"{upload['method']} <signed upload URL> answered {error.code}: {error.read()[:300]!r}") from None


def fetch_rendition(base: str, media_id: str, token: str) -> tuple[str, bytes]:
    """`GET /api/v1/media/{id}?variant=thumb`, then its redirect's signed URL without the token:
    the rendition's content type and bytes."""
    path = f"/api/v1/media/{media_id}?variant=thumb"
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        urllib.request.build_opener(_KeepRedirects).open(request, timeout=30).close()
        raise SeedError(f"GET {path} did not redirect to the rendition")
    except urllib.error.HTTPError as error:
        location = error.headers.get("Location")
        if error.code != 302 or not location or not error.headers.get("ETag"):
            raise SeedError(f"GET {path} answered {error.code} (Location {location!r}), not a 302 with an ETag") from None
    try:
        with urllib.request.urlopen(urllib.request.Request(location), timeout=30) as response:
            return response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        raise SeedError(f"GET <signed rendition URL> answered {error.code}: {error.read()[:300]!r}") from None


def seed_media(base: str, item: dict[str, Any], owner: dict[str, Any]) -> None:
    """As the item's owner: a photo for a post in the item's community, uploaded through its signed
    URL, completed and processed (checked by fetching its thumbnail through the redirect, as the
    app does); the owner's avatar, asked for and never uploaded (it stays `pending`); and a
    receipt, also never uploaded, to delete."""
    token = owner["token"]
    image = png_image(32, 24)
    photo = expect(base, 201, "POST", "/api/v1/media/upload", {
        "purpose": "post", "communityId": item["community"], "filename": "schemathesis.png",
        "mimeType": "image/png", "sizeBytes": len(image), "sha256": hashlib.sha256(image).hexdigest()}, token)
    media_id = photo["media"]["id"]
    send_upload(photo["upload"], image)
    expect(base, 202, "POST", photo["completeUrl"], None, token)
    deadline = time.monotonic() + 60
    while True:
        media = expect(base, 200, "GET", f"/api/v1/media/{media_id}/details", None, token)
        if media["status"] == "ready":
            break
        if media["status"] == "failed" or time.monotonic() > deadline:
            raise SeedError(f"the seeded photo was not processed within 60 seconds: {media}")
        time.sleep(0.5)
    if set(media["variants"]) != {"thumb", "large", "original"} or (media["width"], media["height"]) != (32, 24):
        raise SeedError(f"the seeded photo is not a 32x24 image with its three variants: {media}")
    kind, thumbnail = fetch_rendition(base, media_id, token)
    if not kind.startswith("image/jpeg") or not thumbnail.startswith(b"\xff\xd8\xff"):
        raise SeedError(f"the seeded photo's thumbnail is not a JPEG ({kind}): {thumbnail[:16]!r}")
    avatar = expect(base, 201, "POST", "/api/v1/media/upload", {
        "purpose": "avatar", "filename": "schemathesis-avatar.png", "mimeType": "image/png",
        "sizeBytes": len(image), "sha256": hashlib.sha256(image).hexdigest()}, token)
    receipt = expect(base, 201, "POST", "/api/v1/media/upload", {
        "purpose": "receipt", "communityId": item["community"], "filename": "schemathesis-receipt.pdf",
        "mimeType": "application/pdf", "sizeBytes": 1024, "sha256": hashlib.sha256(b"receipt").hexdigest()}, token)
    item.update({
        "media": media_id,
        "pendingMedia": avatar["media"]["id"],
        "spareMedia": receipt["media"]["id"],
    })


def seed(base: str, out: str, user_count: int) -> dict[str, Any]:
    run = uuid.uuid4().hex[:12]
    users = []
    for index in range(user_count):
        grant = expect(
            base, 200, "POST", "/api/v1/auth/dev",
            {"email": f"schemathesis-{run}-{index}@example.com", "displayName": f"Schemathesis {index}"})
        users.append({"id": grant["user"]["id"], "email": grant["user"]["email"], "token": grant["accessToken"]})

    seeded = []
    for index, user in enumerate(users):
        token = user["token"]
        community = expect(
            base, 201, "POST", "/api/v1/communities",
            {"name": f"Schemathesis {run} {index}", "description": "Seeded by scripts/schemathesis.sh"}, token)
        spare = expect(base, 201, "POST", "/api/v1/communities", {"name": f"Schemathesis {run} {index} spare"}, token)
        path = f"/api/v1/communities/{community['id']}"
        join_invite = expect(base, 201, "POST", f"{path}/invites", {}, token)
        revocable_invite = expect(base, 201, "POST", f"{path}/invites", {"maxUses": 5, "expiresInHours": 24}, token)
        family_member = expect(base, 201, "POST", "/api/v1/me/family-members", {"name": "Sam"}, token)
        sync = expect(base, 200, "GET", f"{path}/sync", None, token)
        seeded.append({
            "owner": index,
            "community": community["id"],
            "spareCommunity": spare["id"],
            "joinCode": join_invite["code"],
            "revocableInvite": revocable_invite["id"],
            "familyMember": family_member["id"],
            "syncToken": sync["syncToken"],
        })
    # The next user joins each community as a plain member: someone for the member operations
    # (change role, remove, readmit) to act on. Each join spends one of the invite lookups the
    # API allows per client address and minute, so the user count stays small.
    for index, item in enumerate(seeded):
        member = users[(index + 1) % len(users)]
        expect(base, 201, "POST", f"/api/v1/invites/{item['joinCode']}/join", None, member["token"])
        item["member"] = member["id"]

    # Every series starts at the same instant (a week from now, before which nothing closes), so
    # its instance starts name an instance in every seeded community.
    start = (datetime.now(timezone.utc) + timedelta(days=7)).replace(minute=0, second=0, microsecond=0)
    instances: list[str] = []
    for index, item in enumerate(seeded):
        instances = seed_calendar(base, item, users[index], users[(index + 1) % len(users)], start)
    # Each community's feed; its poll stays open for the whole run.
    for index, item in enumerate(seeded):
        seed_feed(base, item, users[index], users[(index + 1) % len(users)], start + timedelta(days=30))
    # Each community's ledger and dues; every community's dues fall due on the same days.
    due = datetime.now(timezone.utc).date() + timedelta(days=7)
    for index, item in enumerate(seeded):
        seed_finances(base, item, users[index], users[(index + 1) % len(users)], due)
    finances = {"periods": [due.isoformat(), next_month(due).isoformat()]}
    # Each community's care reminders. Every seeded community is on UTC's clock, so the days of
    # their occurrences are the same: the days pending in all of them (the first few) name an
    # occurrence of whichever reminder a request names.
    pending_days: list[list[str]] = []
    for index, item in enumerate(seeded):
        pending_days.append(seed_reminders(base, item, users[index]))
    shared_days = [day for day in pending_days[0] if all(day in days for days in pending_days[1:])]
    if not shared_days:
        raise SeedError(f"the seeded reminders have no pending occurrence on a common day: {pending_days}")
    first_day = date.fromisoformat(shared_days[0])
    reminders = {
        "occurrenceDates": shared_days[:4],
        "windowFrom": first_day.isoformat(),
        "windowTo": (first_day + timedelta(days=14)).isoformat(),
    }
    # Each owner's media: a processed photo in their community, a pending avatar, a spare receipt.
    for index, item in enumerate(seeded):
        seed_media(base, item, users[index])
    calendar = {
        "recurrenceIds": instances[:4],
        "windowFrom": timestamp(start - timedelta(days=1)),
        "windowTo": timestamp(start + timedelta(days=35)),
    }

    # A device per user, and each user's notifications (written by the notifications service
    # from the messages above: wait for them), for the device and notification operations.
    for index, item in enumerate(seeded):
        device_token = uuid.uuid4().hex + uuid.uuid4().hex
        expect(base, 201, "POST", "/api/v1/me/devices",
               {"token": device_token, "environment": "sandbox", "bundleId": "app.orbitcove.schemathesis"},
               users[index]["token"])
        item["device"] = device_token
    # Notification id -> index of the user whose it is.
    notifications: dict[str, int] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        notifications = {}
        for index, user in enumerate(users):
            page = expect(base, 200, "GET", "/api/v1/me/notifications?limit=20", None, user["token"])
            notifications.update({entry["id"]: index for entry in page})
        if len(notifications) >= len(users):
            break
        time.sleep(0.5)
    if not notifications:
        raise SeedError("no notification reached the seeded users within 30 seconds")

    state = {"baseUrl": base, "run": run, "users": users, "seeded": seeded, "calendar": calendar,
             "finances": finances, "reminders": reminders, "notifications": notifications}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "state.json"), "w") as file:
        json.dump(state, file, indent=2)
    with open(os.path.join(out, "schemathesis.toml"), "w") as file:
        file.write(config_toml(state, os.path.abspath(out)))
    return state


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def config_toml(state: dict[str, Any], out: str) -> str:
    seeded = state["seeded"]
    dictionaries = {
        "communities": [item["community"] for item in seeded],
        "spareCommunities": [item["spareCommunity"] for item in seeded],
        "members": [item["member"] for item in seeded],
        "revocableInvites": [item["revocableInvite"] for item in seeded],
        "joinCodes": [item["joinCode"] for item in seeded],
        "familyMembers": [item["familyMember"] for item in seeded],
        "syncTokens": [item["syncToken"] for item in seeded],
        "events": [item["event"] for item in seeded],
        "spareEvents": [item["spareEvent"] for item in seeded],
        "recurrenceIds": state["calendar"]["recurrenceIds"],
        "windowFrom": [state["calendar"]["windowFrom"]],
        "windowTo": [state["calendar"]["windowTo"]],
        "revocableFeeds": [item["revocableFeed"] for item in seeded],
        "feedFiles": [item["feedFile"] for item in seeded],
        "devices": [item["device"] for item in seeded],
        "notifications": list(state["notifications"]),
        "posts": [item[key] for item in seeded for key in ("post", "poll")],
        "sparePosts": [item["sparePost"] for item in seeded],
        "comments": [item["comment"] for item in seeded],
        "spareComments": [item["spareComment"] for item in seeded],
        "transactions": [item[key] for item in seeded for key in ("transaction", "settlement")],
        "spareTransactions": [item["spareTransaction"] for item in seeded],
        "dues": [item["dues"] for item in seeded],
        "spareDues": [item["spareDues"] for item in seeded],
        "duesPeriods": state["finances"]["periods"],
        "reminders": [item["reminder"] for item in seeded],
        "spareReminders": [item["spareReminder"] for item in seeded],
        "occurrenceDates": state["reminders"]["occurrenceDates"],
        "occurrenceWindowFrom": [state["reminders"]["windowFrom"]],
        "occurrenceWindowTo": [state["reminders"]["windowTo"]],
        "currencies": ["EUR"],
        "media": [item[key] for item in seeded for key in ("media", "pendingMedia")],
        "spareMedia": [item["spareMedia"] for item in seeded],
    }
    lines = [
        "# Written by scripts/schemathesis_hooks.py for one run of scripts/schemathesis.sh.",
        "",
        "# Not the default ./.schemathesis of the working directory (the checkout).",
        "[cache]",
        f"directory = {json.dumps(os.path.join(out, 'cache'))}",
        "",
        "[auth.openapi.bearerAuth]",
        f'bearer = "{PLACEHOLDER_TOKEN}"',
        "",
    ]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", f"values = {toml_list(values)}", ""]
    p = SEEDED_PROBABILITY

    def binding(name: str, probability: float = p) -> str:
        return f'{{ dictionary = "{name}", probability = {probability} }}'

    lines += [
        "# Generated values name seeded resources most of the time, random ones otherwise.",
        "[parameters]",
        f'"path.communityId" = {binding("communities")}',
        f'"path.userId" = {binding("members")}',
        f'"path.inviteId" = {binding("revocableInvites")}',
        f'"path.code" = {binding("joinCodes")}',
        f'"path.familyMemberId" = {binding("familyMembers")}',
        f'"query.since" = {binding("syncTokens", 0.5)}',
        f'"body.code" = {binding("joinCodes")}',
        f'"path.eventId" = {binding("events")}',
        f'"query.recurrenceId" = {binding("recurrenceIds")}',
        f'"body.recurrenceId" = {binding("recurrenceIds")}',
        f'"body.familyMemberId" = {binding("familyMembers")}',
        f'"query.from" = {binding("windowFrom")}',
        f'"query.to" = {binding("windowTo")}',
        f'"path.feedId" = {binding("revocableFeeds")}',
        f'"path.feed" = {binding("feedFiles")}',
        f'"body.communityId" = {binding("communities")}',
        f'"query.communityId" = {binding("communities")}',
        f'"path.token" = {binding("devices")}',
        f'"path.notificationId" = {binding("notifications")}',
        f'"path.postId" = {binding("posts")}',
        f'"path.commentId" = {binding("comments")}',
        f'"body.parentId" = {binding("comments")}',
        f'"body.linkedEventId" = {binding("events")}',
        f'"path.transactionId" = {binding("transactions")}',
        f'"path.duesId" = {binding("dues")}',
        f'"query.period" = {binding("duesPeriods")}',
        f'"body.period" = {binding("duesPeriods")}',
        f'"query.member" = {binding("members")}',
        f'"body.userId" = {binding("members")}',
        f'"body.paidBy" = {binding("members")}',
        f'"body.to" = {binding("members")}',
        f'"path.reminderId" = {binding("reminders")}',
        f'"path.date" = {binding("occurrenceDates")}',
        f'"body.assigneeId" = {binding("members")}',
        f'"query.currency" = {binding("currencies")}',
        f'"body.currency" = {binding("currencies")}',
        f'"path.mediaId" = {binding("media")}',
        "",
        "# Deleting, restoring and leaving act on each user's spare community, so the community the",
        "# other operations use stays there (and keeps its admin) for the whole run.",
        "[[operations]]",
        'include-operation-id = ["deleteCommunity", "restoreCommunity", "leaveCommunity"]',
        f'parameters = {{ "path.communityId" = {binding("spareCommunities")} }}',
        "",
        "# Deleting events acts on each community's spare event, so the seeded series (and the",
        "# answers on it) stays for the reads, changes and answers of the whole run.",
        "[[operations]]",
        'include-operation-id = "deleteEvent"',
        f'parameters = {{ "path.eventId" = {binding("spareEvents")} }}',
        "",
        "# Likewise deleting posts and comments acts on each feed's spare post and spare reply, so",
        "# the seeded post, poll and comment stay for the run.",
        "[[operations]]",
        'include-operation-id = "deletePost"',
        f'parameters = {{ "path.postId" = {binding("sparePosts")} }}',
        "",
        "[[operations]]",
        'include-operation-id = "deleteComment"',
        f'parameters = {{ "path.commentId" = {binding("spareComments")} }}',
        "",
        "# And deleting ledger entries and dues acts on each community's spare ones, so the seeded",
        "# expense, settlement and dues (with the member's payment and waiver) stay for the run.",
        "[[operations]]",
        'include-operation-id = "deleteTransaction"',
        f'parameters = {{ "path.transactionId" = {binding("spareTransactions")} }}',
        "",
        "[[operations]]",
        'include-operation-id = "deleteDues"',
        f'parameters = {{ "path.duesId" = {binding("spareDues")} }}',
        "",
        "# Deleting care reminders acts on each community's spare one, so the seeded reminder (and",
        "# its occurrences) stays for the reads, changes and marks of the whole run.",
        "[[operations]]",
        'include-operation-id = "deleteCareReminder"',
        f'parameters = {{ "path.reminderId" = {binding("spareReminders")} }}',
        "",
        "# A reminder's occurrences are read by days (`YYYY-MM-DD`), not by the calendar window's",
        "# date-times that `from` and `to` name elsewhere: the two weeks from a seeded occurrence.",
        "[[operations]]",
        'include-operation-id = "listCareOccurrences"',
        f'parameters = {{ "query.from" = {binding("occurrenceWindowFrom")}, '
        f'"query.to" = {binding("occurrenceWindowTo")} }}',
        "",
        "# Deleting media acts on each owner's spare receipt, so the processed photo and the pending",
        "# avatar stay for the reads and completions of the whole run.",
        "[[operations]]",
        'include-operation-id = "deleteMedia"',
        f'parameters = {{ "path.mediaId" = {binding("spareMedia")} }}',
        "",
        "# The local store's signed URLs. No generated signature is one the service made, so every",
        "# request is refused (403 UPLOAD_URL_INVALID or DOWNLOAD_URL_INVALID, as documented, and",
        "# what every check expects of a request it cannot authorise); the seed proves that a real",
        "# signed upload and download work. A few fuzzed requests and the coverage phase's are plenty.",
        "[[operations]]",
        'include-operation-id = ["uploadMediaFile", "getMediaFile"]',
        "generation.max-examples = 5",
        "",
        "# Every request to these spends one of the invite-code lookups allowed per client address",
        "# (10 a minute, shared by the whole run): a few fuzzed ones, mostly with real codes, rather",
        "# than the coverage phase's many malformed codes, which would get 429 all the same.",
        "[[operations]]",
        'include-operation-id = ["previewInvite", "joinByInviteCode"]',
        "phases.coverage.enabled = false",
        "generation.max-examples = 5",
        "",
        "# Its body is validated before any lookup, so its coverage phase stays. A code that is no",
        "# community's is 404 INVITE_NOT_FOUND by design (as an unknown community is), which ST302",
        "# reads as the community just created being gone: that check is off here, and since the",
        "# switch does not reach the stateful phase, the hooks' filter lets that answer through.",
        "[[operations]]",
        'include-operation-id = "joinCommunity"',
        "generation.max-examples = 5",
        "checks.ensure_resource_availability.enabled = false",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    seed_parser = commands.add_parser("seed", help="sign in users, create resources, write the config")
    seed_parser.add_argument("--base-url", default="http://127.0.0.1:8080")
    seed_parser.add_argument("--out", required=True)
    seed_parser.add_argument("--users", type=int, default=8)
    cleanup_parser = commands.add_parser("cleanup", help="schedule the seeded accounts for deletion")
    cleanup_parser.add_argument("--state", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "seed":
            state = seed(args.base_url.rstrip("/"), args.out, args.users)
            print(f"seeded run {state['run']}: {len(state['users'])} users, each with a community, a spare "
                  "community, a member, invites, a family member, events, calendar feeds, posts, a ledger, "
                  "dues, care reminders and media")
        else:
            with open(args.state) as file:
                state = json.load(file)
            # Scheduled deletion: the retention job anonymises the accounts after the grace period.
            for user in state["users"]:
                call(state["baseUrl"], "DELETE", "/api/v1/me", None, user["token"])
    except SeedError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


# --- hooks (only when schemathesis loads this module) ------------------------------------------

STATE_PATH = os.environ.get("ORBITCOVE_SCHEMATHESIS_STATE")

if STATE_PATH and __name__ != "__main__":
    import schemathesis

    # A file's bytes may be sent as any of the types it can be uploaded as. schemathesis sends a
    # sample file for the image types it knows and has no serializer for HEIC, HEIF and PDF,
    # whose bodies it would leave out: they go as raw bytes too.
    schemathesis.serializer.alias(["image/heic", "image/heif", "application/pdf"], "application/octet-stream")

    with open(STATE_PATH) as _file:
        STATE = json.load(_file)
    USERS: list[dict[str, Any]] = STATE["users"]
    TOKENS = {user["token"]: index for index, user in enumerate(USERS)}
    LOCK = threading.Lock()
    # Resource id or device token (lower case) -> index of the user who owns it: seeded ones,
    # then whatever the run creates (communities, family members, calendar feeds, devices and
    # media), so follow-up requests use the creator's token.
    OWNERS: dict[str, int] = {}
    # Community id -> its seeded resources, to keep path parameters of one request consistent.
    SEEDED_BY_COMMUNITY: dict[str, dict[str, Any]] = {}
    for _item in STATE["seeded"]:
        for _key in ("community", "spareCommunity", "familyMember", "feed", "revocableFeed", "device", "media",
                     "pendingMedia", "spareMedia"):
            OWNERS[_item[_key].lower()] = _item["owner"]
        SEEDED_BY_COMMUNITY[_item["community"].lower()] = _item
    for _id, _owner_index in STATE["notifications"].items():
        OWNERS[_id.lower()] = _owner_index
    SEEDED_MEMBERS = {item["member"].lower() for item in STATE["seeded"]}
    SEEDED_INVITES = {item["revocableInvite"].lower() for item in STATE["seeded"]}
    SEEDED_CODES = {item["joinCode"] for item in STATE["seeded"]}
    SEEDED_EVENTS = {item["event"].lower() for item in STATE["seeded"]}
    SEEDED_SPARE_EVENTS = {item["spareEvent"].lower() for item in STATE["seeded"]}
    SEEDED_FAMILY_MEMBERS = {item["familyMember"].lower() for item in STATE["seeded"]}
    # Seeded post or comment id -> its key in the seeded item ("post", "poll", "sparePost";
    # "comment", "spareComment"): the seeded comments are all on the item's "post".
    SEEDED_POSTS = {item[key].lower(): key for item in STATE["seeded"] for key in ("post", "poll", "sparePost")}
    SEEDED_COMMENTS = {item[key].lower(): key for item in STATE["seeded"] for key in ("comment", "spareComment")}
    # Seeded ledger entry or dues id -> its key in the seeded item.
    SEEDED_TRANSACTIONS = {
        item[key].lower(): key for item in STATE["seeded"] for key in ("transaction", "settlement", "spareTransaction")}
    SEEDED_DUES = {item[key].lower(): key for item in STATE["seeded"] for key in ("dues", "spareDues")}
    # Seeded care reminder id -> its key in the seeded item ("reminder", "spareReminder").
    SEEDED_REMINDERS = {
        item[key].lower(): key for item in STATE["seeded"] for key in ("reminder", "spareReminder")}
    # Seeded media id -> its key in the seeded item ("media", "pendingMedia", "spareMedia").
    SEEDED_MEDIA = {
        item[key].lower(): key for item in STATE["seeded"] for key in ("media", "pendingMedia", "spareMedia")}
    # What each user has left of each service's read and write budgets (core's and media's are
    # separate), from the RateLimit-* headers of its responses, so requests go to users with
    # budget left and a user whose budget is spent gets requests no faster than it refills
    # (GCRA: one per limit/minute).
    BUDGETS: dict[tuple[int, str], dict[str, float]] = {}
    # The longest a request waits for its user's budget; past that it goes out and may get a 429.
    MAX_WAIT_SECONDS = 3.0
    ROUND_ROBIN = [0]
    # Invite codes have a budget of their own per client address; their RateLimit-* headers may
    # describe that one, so they do not update the per-user picture.
    LOOKUP_OPERATIONS = ("previewInvite", "joinCommunity", "joinByInviteCode")

    def _operation_id(case: Any) -> str | None:
        return case.operation.definition.raw.get("operationId")

    def _kind(case: Any) -> str:
        """The budget a request spends: its service's (the operation's tag) reads or writes."""
        service = (case.operation.definition.raw.get("tags") or ["-"])[0]
        return f"{service} {'read' if case.method.upper() in ('GET', 'HEAD') else 'write'}"

    def _budget(user: int, kind: str) -> dict[str, float]:
        return BUDGETS.setdefault(
            (user, kind), {"remaining": float("inf"), "interval": 0.0, "next": 0.0, "blocked_until": 0.0})

    def _owner(case: Any) -> int | None:
        parameters = case.path_parameters or {}
        for name in ("communityId", "familyMemberId", "feedId", "token", "notificationId", "mediaId"):
            value = parameters.get(name)
            if isinstance(value, str) and value.lower() in OWNERS:
                return OWNERS[value.lower()]
        # A calendar feed of one community is made by one of its members, and a file uploaded for
        # one by its owner (an admin, who may upload for every purpose).
        community = case.body.get("communityId") if isinstance(case.body, dict) else None
        if isinstance(community, str) and community.lower() in OWNERS:
            return OWNERS[community.lower()]
        return None

    def _pick(kind: str) -> int:
        now = time.monotonic()
        ROUND_ROBIN[0] += 1
        order = [(ROUND_ROBIN[0] + offset) % len(USERS) for offset in range(len(USERS))]
        usable = [index for index in order if _budget(index, kind)["blocked_until"] <= now] or order
        return max(usable, key=lambda index: _budget(index, kind)["remaining"])

    def _reserve(user: int, kind: str) -> float:
        """Seconds to wait before this user's next request of this kind (called under LOCK)."""
        budget = _budget(user, kind)
        now = time.monotonic()
        start = now
        if budget["blocked_until"] > now:
            start = budget["blocked_until"]
        elif budget["remaining"] <= 1:
            start = max(now, budget["next"])
        start = min(start, now + MAX_WAIT_SECONDS)
        budget["next"] = start + budget["interval"]
        budget["remaining"] = max(0, budget["remaining"] - 1)
        return start - now

    SEEDED_BY_OWNER = {item["owner"]: item for item in STATE["seeded"]}
    SPARE_OPERATIONS = ("deleteCommunity", "restoreCommunity", "leaveCommunity")

    def _spread(case: Any) -> None:
        """The coverage phase sends all its variants of an operation to one resource (often one
        an earlier response returned); a community, family member, calendar feed or media the run
        knows the owner of is swapped for the same kind of seeded resource of the user with the
        most budget left, so one user's budget does not pace a whole operation (called under
        LOCK)."""
        parameters = case.path_parameters or {}
        for name, key in (("communityId", "community"), ("familyMemberId", "familyMember"),
                          ("feedId", "revocableFeed"), ("mediaId", "media")):
            value = parameters.get(name)
            if isinstance(value, str) and value.lower() in OWNERS:
                if key == "community" and _operation_id(case) in SPARE_OPERATIONS:
                    key = "spareCommunity"
                if name == "mediaId":
                    key = "spareMedia" if _operation_id(case) == "deleteMedia" else SEEDED_MEDIA.get(
                        value.lower(), "media")
                parameters[name] = SEEDED_BY_OWNER[_pick(_kind(case))][key]
                return

    def _align_with_community(case: Any) -> None:
        """Within one seeded community, seeded ids of another user's community become this one's."""
        parameters = case.path_parameters or {}
        community = parameters.get("communityId")
        item = SEEDED_BY_COMMUNITY.get(community.lower()) if isinstance(community, str) else None
        if item is None:
            return
        if isinstance(parameters.get("userId"), str) and parameters["userId"].lower() in SEEDED_MEMBERS:
            parameters["userId"] = item["member"]
        if isinstance(parameters.get("inviteId"), str) and parameters["inviteId"].lower() in SEEDED_INVITES:
            parameters["inviteId"] = item["revocableInvite"]
        event = parameters.get("eventId")
        if isinstance(event, str) and event.lower() in SEEDED_EVENTS:
            parameters["eventId"] = item["event"]
        elif isinstance(event, str) and event.lower() in SEEDED_SPARE_EVENTS:
            parameters["eventId"] = item["spareEvent"]
        post = parameters.get("postId")
        if isinstance(post, str) and post.lower() in SEEDED_POSTS:
            parameters["postId"] = item[SEEDED_POSTS[post.lower()]]
            # A seeded comment is named under the post it is on.
            comment = parameters.get("commentId")
            if isinstance(comment, str) and comment.lower() in SEEDED_COMMENTS:
                parameters["commentId"] = item[SEEDED_COMMENTS[comment.lower()]]
                parameters["postId"] = item["post"]
        transaction = parameters.get("transactionId")
        if isinstance(transaction, str) and transaction.lower() in SEEDED_TRANSACTIONS:
            parameters["transactionId"] = item[SEEDED_TRANSACTIONS[transaction.lower()]]
        dues = parameters.get("duesId")
        if isinstance(dues, str) and dues.lower() in SEEDED_DUES:
            parameters["duesId"] = item[SEEDED_DUES[dues.lower()]]
        reminder = parameters.get("reminderId")
        if isinstance(reminder, str) and reminder.lower() in SEEDED_REMINDERS:
            parameters["reminderId"] = item[SEEDED_REMINDERS[reminder.lower()]]
        query = case.query if isinstance(case.query, dict) else {}
        if isinstance(query.get("member"), str) and query["member"].lower() in SEEDED_MEMBERS:
            query["member"] = item["member"]
        body = case.body if isinstance(case.body, dict) else {}
        # Money moves between this community's members, and a care reminder is assigned to one:
        # the seeded member named anywhere in a ledger, dues or reminder body is this community's.
        for key in ("userId", "paidBy", "to", "from", "assigneeId"):
            if isinstance(body.get(key), str) and body[key].lower() in SEEDED_MEMBERS:
                body[key] = item["member"]
        split = body.get("split")
        shares = split.get("members") if isinstance(split, dict) else None
        for share in shares if isinstance(shares, list) else []:
            named = share.get("userId") if isinstance(share, dict) else None
            if isinstance(named, str) and named.lower() in SEEDED_MEMBERS:
                share["userId"] = item["member"]
        if isinstance(body.get("parentId"), str) and body["parentId"].lower() in SEEDED_COMMENTS:
            body["parentId"] = item["comment"]
        if isinstance(body.get("linkedEventId"), str) and body["linkedEventId"].lower() in SEEDED_EVENTS:
            body["linkedEventId"] = item["event"]
        if isinstance(case.body, dict) and isinstance(case.body.get("code"), str) and case.body["code"] in SEEDED_CODES:
            case.body["code"] = item["joinCode"]
        # Community requests go out as its owner: answers for a family member name the owner's.
        dependant = case.body.get("familyMemberId") if isinstance(case.body, dict) else None
        if isinstance(dependant, str) and dependant.lower() in SEEDED_FAMILY_MEMBERS:
            case.body["familyMemberId"] = item["familyMember"]

    def _scope_idempotency_key(headers: dict[str, Any], case: Any) -> None:
        """Gives each distinct request its own key.

        Generated keys repeat across different bodies ("0" is a favourite), which the API
        rightly answers with 422 IDEMPOTENCY_KEY_REUSED before the request's own logic runs. A
        valid key gets a digest of the request appended, so a repeated request still replays
        and a different one runs; keys the API must refuse are left as generated.
        """
        name = next((key for key in headers if key.lower() == "idempotency-key"), None)
        if name is None or not isinstance(headers[name], str):
            return
        key = headers[name]
        if not 1 <= len(key.encode()) <= 255:
            return
        request = json.dumps([case.method, case.formatted_path, case.body], sort_keys=True, default=repr)
        digest = hashlib.sha256(request.encode()).hexdigest()[:24]
        headers[name] = key.encode()[: 255 - 25].decode(errors="ignore") + "." + digest

    @schemathesis.hook
    def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
        headers = case.headers or {}
        name = next((key for key in headers if key.lower() == "authorization"), None)
        if name is None or headers[name] != f"Bearer {PLACEHOLDER_TOKEN}":
            return
        kind = _kind(case)
        with LOCK:
            if case.meta is not None and case.meta.phase.name.value == "coverage":
                _spread(case)
            _align_with_community(case)
            owner = _owner(case)
            # Joining is what a non-member does; anyone else acts as the owner of what they touch.
            if owner is None or _operation_id(case) in ("joinCommunity", "joinByInviteCode"):
                owner = _pick(kind)
            wait = _reserve(owner, kind)
        headers[name] = f"Bearer {USERS[owner]['token']}"
        _scope_idempotency_key(headers, case)
        case.headers = headers
        if wait > 0:
            time.sleep(wait)

    # One line per request (phase, operation, status, user), for the summary and for debugging.
    REQUEST_LOG = open(os.environ["ORBITCOVE_SCHEMATHESIS_LOG"], "a") if os.environ.get(
        "ORBITCOVE_SCHEMATHESIS_LOG") else None

    @schemathesis.hook
    def after_call(context: Any, case: Any, response: Any) -> None:
        sent = response.request.headers.get("Authorization", "")
        user = TOKENS.get(sent.removeprefix("Bearer "))
        if REQUEST_LOG is not None:
            phase = case.meta.phase.name.value if case.meta is not None else "-"
            with LOCK:
                REQUEST_LOG.write(f"{phase}\t{case.operation.label}\t{response.status_code}\t"
                                  f"{'-' if user is None else user}\n")
                REQUEST_LOG.flush()
        if user is None:
            return
        kind = _kind(case)
        headers = response.headers
        operation_id = _operation_id(case)

        def header(name: str) -> str | None:
            values = headers.get(name.lower()) or headers.get(name)
            if isinstance(values, list):
                return values[0] if values else None
            return values

        with LOCK:
            budget = _budget(user, kind)
            remaining, limit = header("RateLimit-Remaining"), header("RateLimit-Limit")
            if operation_id not in LOOKUP_OPERATIONS and remaining is not None and remaining.isdigit():
                budget["remaining"] = int(remaining)
                if limit is not None and limit.isdigit() and int(limit) > 0:
                    budget["interval"] = 60.0 / int(limit)
                if response.status_code == 429:
                    retry_after = header("Retry-After")
                    wait = int(retry_after) if retry_after and retry_after.isdigit() else 1
                    budget["blocked_until"] = time.monotonic() + wait
                    budget["remaining"] = 0
            if response.status_code == 201 and operation_id in (
                    "createCommunity", "createFamilyMember", "createCalendarFeed", "createMediaUpload"):
                try:
                    data = json.loads(response.content)["data"]
                    created = (data["media"] if operation_id == "createMediaUpload" else data)["id"]
                except (ValueError, KeyError, TypeError):
                    return
                OWNERS[str(created).lower()] = user
            # A device belongs to whoever registered it last (200 when it moved or was known).
            if response.status_code in (200, 201) and operation_id == "registerDevice":
                try:
                    token = json.loads(response.content)["data"]["token"]
                except (ValueError, KeyError, TypeError):
                    return
                OWNERS[str(token).lower()] = user

    # --- known service defects ------------------------------------------------------------------
    #
    # Each entry is a defect of a service, not of the document: the document is right and the
    # service answers otherwise. Its failures are dropped only when the defect alone explains
    # them, so any other failure of the same operation still fails the run. Remove an entry
    # when the service is fixed.

    import jsonschema_rs
    import yaml
    from schemathesis.core.failures import AcceptedNegativeData
    from schemathesis.core.parameters import ParameterLocation

    _DOCUMENT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "openapi", "openapi.yaml")
    with open(_DOCUMENT_PATH) as _file:
        DOCUMENT = yaml.safe_load(_file)
    SKIP_LOG = open(os.environ["ORBITCOVE_SCHEMATHESIS_SKIPS"], "a") if os.environ.get(
        "ORBITCOVE_SCHEMATHESIS_SKIPS") else None

    def _body_validator(case: Any) -> Any:
        operation = DOCUMENT["paths"][case.operation.path][case.method.lower()]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        return jsonschema_rs.validator_for({**schema, "components": DOCUMENT["components"]}, validate_formats=True)

    def _negative_only_at(case: Any, location: Any) -> bool:
        if case.meta is None:
            return False
        negative = {loc for loc, info in case.meta.components.items() if info.mode.is_negative}
        return negative == {location}

    # Service defects the run tolerates: functions (failure, case) -> a defect name or None, each
    # matching exactly one defect, removed with its fix. The request-body leniencies it found
    # before (null as "left out", trimmed URLs and emails), `unreadOnly` and F1 (`"memberIds":
    # null` creating dues for everyone) are fixed.
    KNOWN_DEFECTS: tuple = ()

    # Answers that are right by design but that a check misreads, each named here with why.
    # ST302 reads any 404 after a create as the created community being gone; its per-operation
    # switch does not reach the stateful phase, whose parameters all come from links and
    # bindings. So these 404s, each naming something other than the community, are let through:
    # - the finances' writes name members in their bodies (a payer, a payee, a member owing
    #   dues), bound to the seeded community's. In a community the stateful phase has just
    #   created nobody else is a member, so `404 MEMBER_NOT_FOUND` naming that field is right;
    # - joining a community by its code (`joinCommunity`) with a code that is not its invite's
    #   (the body is generated; no link supplies a real one) is `404 INVITE_NOT_FOUND`.
    RIGHT_404_AFTER_A_CREATE = {
        "createExpense": "MEMBER_NOT_FOUND", "recordSettlement": "MEMBER_NOT_FOUND", "createDues": "MEMBER_NOT_FOUND",
        "recordDuesPayment": "MEMBER_NOT_FOUND", "waiveDues": "MEMBER_NOT_FOUND",
        "withdrawDuesWaiver": "MEMBER_NOT_FOUND", "joinCommunity": "INVITE_NOT_FOUND",
    }

    def _a_right_404(failure: Any, case: Any, response: Any) -> bool:
        from schemathesis.openapi.checks import EnsureResourceAvailability

        if not isinstance(failure, EnsureResourceAvailability) or response.status_code != 404:
            return False
        expected = RIGHT_404_AFTER_A_CREATE.get(_operation_id(case))
        if expected is None:
            return False
        try:
            body = json.loads(response.content)
        except (ValueError, TypeError):
            return False
        return isinstance(body, dict) and (body.get("error") or {}).get("code") == expected

    # Nothing is filtered for the local store's signed URLs (`uploadMediaFile`, `getMediaFile`):
    # no generated signature is valid, so they answer 403, which the document gives and every
    # check accepts (ST302 reads only a 404 after a create as the resource gone, and these check
    # the signature before they look for the media).

    @schemathesis.hook
    def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
        if _a_right_404(failure, case, response):
            if SKIP_LOG is not None:
                with LOCK:
                    SKIP_LOG.write(f"right 404\t{case.operation.label}\t{response.status_code}\n")
                    SKIP_LOG.flush()
            return False
        for defect in KNOWN_DEFECTS:
            name = defect(failure, case)
            if name is not None:
                if SKIP_LOG is not None:
                    with LOCK:
                        SKIP_LOG.write(f"{name}\t{case.operation.label}\t{response.status_code}\n")
                        SKIP_LOG.flush()
                return False
        return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
