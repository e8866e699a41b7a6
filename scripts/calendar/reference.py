"""Reference expansion with python-dateutil, in the JSON case format that rrule-dump reads.

A case is {id, rule, dtstart "YYYYMMDDTHHMMSS" (wall clock in tz), tz, windowFrom?, windowTo?, limit, exdates?}
with windowFrom/windowTo/exdates as "YYYYMMDDTHHMMSSZ". The result is a list of instance starts in UTC, in
the same format, or an error string.

DTSTART is made aware with zoneinfo.ZoneInfo (fold=0), which is the behaviour the Swift engine copies for
skipped and repeated local times. dateutil refuses a floating or DATE UNTIL next to an aware DTSTART, so such
an UNTIL is first turned into the UTC instant the Swift engine treats as its bound:
floating -> that wall time in tz; DATE -> 23:59:59 that day in tz (every instance on that local date).

Usable as a module (compare.py) or as a filter: reference.py < cases.json > results.json
"""

import json
import re
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr, rruleset

UNTIL = re.compile(r"UNTIL=(\d{8})(T(\d{6})(Z?))?", re.IGNORECASE)


def parse_utc(text):
    return datetime.strptime(text, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)


def format_utc(moment):
    return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def rule_with_utc_until(rule, tz):
    match = UNTIL.search(rule)
    if not match or match.group(4):
        return rule
    day = match.group(1)
    wall = day + "T" + (match.group(3) if match.group(2) else "235959")
    local = datetime.strptime(wall, "%Y%m%dT%H%M%S").replace(tzinfo=tz)
    return rule[: match.start()] + "UNTIL=" + format_utc(local) + rule[match.end():]


def expand(case):
    tz = ZoneInfo(case["tz"])
    dtstart = datetime.strptime(case["dtstart"], "%Y%m%dT%H%M%S").replace(tzinfo=tz)
    rule = rrulestr(rule_with_utc_until(case["rule"], tz), dtstart=dtstart)
    series = rruleset()
    series.rrule(rule)
    for exdate in case.get("exdates") or []:
        series.exdate(parse_utc(exdate))
    lower = parse_utc(case["windowFrom"]) if case.get("windowFrom") else None
    upper = parse_utc(case["windowTo"]) if case.get("windowTo") else None
    found = []
    if case["limit"] <= 0:
        return found
    for moment in series:
        if upper is not None and moment >= upper:
            break
        if lower is not None and moment < lower:
            continue
        found.append(format_utc(moment))
        if len(found) >= case["limit"]:
            break
    return found


def main():
    results = []
    for case in json.load(sys.stdin):
        try:
            results.append({"id": case["id"], "occurrences": expand(case)})
        except Exception as error:  # noqa: BLE001 - reported per case
            results.append({"id": case["id"], "error": repr(error)})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
