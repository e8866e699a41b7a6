#!/usr/bin/env python3
"""One member answering one instance again and again, yes then no, at a steady rate, through
the gateway: the calendar benchmark's `window-answered` round reads the window while this runs,
so each answer changes the counts every reader sees and the next read of each reader cannot
take the text last written for them (KnownWindows.ReaderCopy): what a calendar being answered
costs, beside the unchanged calendar the `window` round reads. Sends to loopback only and
stops by itself after SECONDS. Prints one line:

    client=answers answers_per_s=<rate reached> answers=<sent> failed=<not 200>

    window_answers.py TOKEN COMMUNITY EVENT RECURRENCE_ID SECONDS PER_SECOND

RECURRENCE_ID is `-` for a single event.
"""

import http.client
import json
import sys
import time
import urllib.request

GATEWAY = "http://127.0.0.1:8080"


def main():
    token, community, event, recurrence_id = sys.argv[1:5]
    seconds, per_second = float(sys.argv[5]), float(sys.argv[6])
    path = f"{GATEWAY}/api/v1/communities/{community}/events/{event}/rsvp"
    start = time.monotonic()
    sent = failed = 0
    while time.monotonic() - start < seconds:
        body = {"status": "yes" if sent % 2 == 0 else "no"}
        if recurrence_id != "-":
            body["recurrenceId"] = recurrence_id
        request = urllib.request.Request(path, method="POST", data=json.dumps(body).encode(), headers={
            "content-type": "application/json", "authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                failed += response.status != 200
        except (OSError, http.client.HTTPException):
            # URLError and HTTPError (any status not 2xx) are OSErrors; a dropped connection
            # may be either.
            failed += 1
        sent += 1
        # Paced from the start, so a slow answer is not followed by a burst.
        time.sleep(max(0.0, start + sent / per_second - time.monotonic()))
    elapsed = time.monotonic() - start
    print(f"client=answers answers_per_s={sent / elapsed:.1f} answers={sent} failed={failed}")
    # A round whose answers did not land measured an unchanged calendar: say so.
    sys.exit(1 if failed or not sent else 0)


if __name__ == "__main__":
    main()
