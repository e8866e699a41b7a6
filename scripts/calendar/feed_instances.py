"""Expands a calendar feed the way a calendar app would, for the API comparison test.

    python feed_instances.py FEED.ics FROM TO

FROM and TO are ISO 8601 instants. Prints a JSON list, one object per instance that overlaps
the window, as icalendar and recurring-ical-events read the feed: the UID, the start (UTC
ISO 8601 with Z for a timed event, YYYY-MM-DD for an all-day one), the RECURRENCE-ID (UTC)
if any, the summary and the STATUS.
"""

import json
import sys
from datetime import date, datetime, timezone

import icalendar
import recurring_ical_events


def utc(value):
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value.isoformat()


def main():
    path, lower, upper = sys.argv[1:4]
    with open(path, "rb") as feed:
        calendar = icalendar.Calendar.from_ical(feed.read())
    lower = datetime.fromisoformat(lower.replace("Z", "+00:00"))
    upper = datetime.fromisoformat(upper.replace("Z", "+00:00"))
    instances = []
    for component in recurring_ical_events.of(calendar).between(lower, upper):
        start = component["DTSTART"].dt
        recurrence = component.get("RECURRENCE-ID")
        instances.append({
            "uid": str(component["UID"]),
            "start": utc(start) if isinstance(start, datetime) else start.isoformat(),
            "recurrenceId": utc(recurrence.dt) if recurrence is not None else None,
            "summary": str(component.get("SUMMARY", "")),
            "status": str(component.get("STATUS", "CONFIRMED")),
        })
    instances.sort(key=lambda item: (item["start"], item["uid"]))
    json.dump(instances, sys.stdout)


if __name__ == "__main__":
    main()
