"""Checks the ICS writer (ics-dump) with the icalendar and recurring-ical-events packages.

    python ics_compare.py [--binary .build/debug/orbitcove-ics-dump]

1. Syntax: CRLF everywhere, no physical line over 75 octets, no UTF-8 sequence split by folding, and
   icalendar parses the feed; calendar properties and escaped TEXT values read back exactly.
2. Instances: recurring_ical_events expands the feed over a window and must give exactly the instance
   starts our RecurrenceExpansion gives (UTC for timed, dates for all-day), with overrides, EXDATEs and
   cancelled instances applied. Done twice: as written (clients know the IANA TZIDs) and with every TZID
   renamed, so the instants come from our VTIMEZONE text alone.
3. VTIMEZONE: for feeds in many zones, each VTIMEZONE turned into a tzinfo by icalendar must give zoneinfo's
   UTC offset at every transition (and a second either side) and every 6 hours over its span, and, where it
   is written with yearly RRULEs, for 15 years after.
Prints 'N passed, N failed'; exit status 1 on any failure.
"""

import argparse
import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = ("20260201T120000Z", "20261201T120000Z")
TRICKY_TEXT = 'Practice; bring water, boots\\cleats\nLine two\r\nLine three "quoted" – ünïcödé 🏟️⚽'
LONG_TEXT = ("Väter & Mütter: " + "Équipe 🏃‍♀️🏃‍♂️ " * 20 + "\n" + "x" * 200).strip()


def main_feed():
    return {
        "calendarName": "U9 Falcons; Spring, 2026",
        "stamp": "20260115T101500Z",
        "windowFrom": WINDOW[0],
        "windowTo": WINDOW[1],
        "series": [
            {
                "uid": "practice-berlin@orbitcove", "summary": TRICKY_TEXT, "description": LONG_TEXT,
                "location": "Sportplatz Nord, Halle 2; Eingang B", "geo": [52.520008, 13.404954],
                "categories": ["Practice", "U9, Falcons", "Sport;Outdoor"],
                "tz": "Europe/Berlin", "start": "20260106T180000", "length": 90,
                "rule": "FREQ=WEEKLY;BYDAY=TU,TH",
                "exdates": ["20260402T180000", "20261027T180000"],
                "overrides": [
                    {"original": "20260310T180000", "start": "20260311T193000", "length": 60,
                     "summary": "Practice moved to Wednesday"},
                    {"original": "20260326T180000", "start": "20260326T170000"},
                    {"original": "20260505T180000", "cancelled": True},
                ],
            },
            {
                "uid": "sunday-early-ny@orbitcove", "summary": "Sunday 02:30 (DST gap on Mar 8)",
                "tz": "America/New_York", "start": "20260104T023000", "length": 45,
                "rule": "FREQ=WEEKLY;BYDAY=SU;COUNT=60",
                "exdates": ["20260405T023000"],
                "overrides": [{"original": "20261101T023000", "start": "20261101T013000"}],
            },
            {
                "uid": "last-weekday-ny@orbitcove", "summary": "Board meeting (last weekday)",
                "tz": "America/New_York", "start": "20260130T170000", "length": 60,
                "rule": "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;UNTIL=20261030T170000",
            },
            {
                "uid": "biweekly-ny@orbitcove", "summary": "Biweekly Mon+Sun, WKST=SU",
                "tz": "America/New_York", "start": "20260301T183000", "length": 60,
                "rule": "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SU;WKST=SU",
            },
            {
                "uid": "allday-utc@orbitcove", "summary": "Tournament day", "tz": "UTC", "allDay": True,
                "start": "20260105T000000", "length": 1, "rule": "FREQ=WEEKLY;BYDAY=MO;UNTIL=20261130",
                "exdates": ["20260406T000000"],
                "overrides": [{"original": "20260504T000000", "start": "20260506T000000", "length": 2},
                              {"original": "20260601T000000", "cancelled": True}],
            },
            {
                "uid": "allday-berlin@orbitcove", "summary": "Month end (all day, Berlin)", "tz": "Europe/Berlin",
                "allDay": True, "start": "20260131T000000", "length": 1, "rule": "FREQ=MONTHLY;BYMONTHDAY=-1",
            },
            {
                "uid": "tokyo@orbitcove", "summary": "Tokyo daily", "tz": "Asia/Tokyo",
                "start": "20260320T090000", "length": 30, "rule": "FREQ=DAILY;COUNT=10",
            },
            {
                "uid": "single-utc@orbitcove", "summary": "One-off in UTC", "tz": "UTC",
                "start": "20260401T150000", "length": 30,
            },
            {
                "uid": "single-ny@orbitcove", "summary": "One-off at 01:30 on fall-back day", "tz": "America/New_York",
                "start": "20261101T013000", "length": 30,
            },
        ],
    }


ZONES_FOR_VTIMEZONE = [
    "America/New_York", "Europe/Berlin", "Asia/Tokyo", "Australia/Sydney", "Australia/Lord_Howe",
    "Africa/Casablanca", "Asia/Tehran", "Europe/Dublin", "Asia/Kolkata", "Pacific/Chatham", "America/Sao_Paulo",
    "America/Santiago", "Pacific/Auckland", "America/St_Johns", "Asia/Gaza", "Europe/London", "America/Los_Angeles",
]


def zone_feed(start):
    return {
        "calendarName": "zones", "stamp": "20260115T101500Z", "windowFrom": WINDOW[0], "windowTo": WINDOW[1],
        "series": [
            {"uid": f"{zone}@zones", "summary": zone, "tz": zone, "start": start, "length": 60,
             "rule": "FREQ=WEEKLY"}
            for zone in ZONES_FOR_VTIMEZONE
        ],
    }


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed.append(f"{name}: {detail}")


def run_dump(binary, spec):
    completed = subprocess.run([binary], input=json.dumps(spec).encode(), capture_output=True, check=True)
    return json.loads(completed.stdout)


def check_syntax(checks, ics):
    raw = ics.encode("utf-8")
    physical = raw.split(b"\r\n")
    checks.check("ends with CRLF", physical[-1] == b"", repr(physical[-1][:40]))
    physical = physical[:-1]
    checks.check("no bare LF or CR", all(b"\n" not in line and b"\r" not in line for line in physical))
    too_long = [line for line in physical if len(line) > 75]
    checks.check("lines <= 75 octets", not too_long, repr(too_long[:1]))
    broken = []
    for line in physical:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            broken.append(line)
    checks.check("folding keeps UTF-8 sequences whole", not broken, repr(broken[:1]))
    return sum(1 for line in physical if line.startswith(b" "))


def instance_key(component):
    start = component["DTSTART"].dt
    if isinstance(start, datetime):
        return start.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return start.strftime("%Y%m%d")


def expand(calendar):
    lower = datetime.strptime(WINDOW[0], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    upper = datetime.strptime(WINDOW[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    found = []
    for component in recurring_ical_events.of(calendar).between(lower, upper):
        if str(component.get("STATUS", "")).upper() == "CANCELLED":
            continue
        start = component["DTSTART"].dt
        # between() returns everything overlapping the window; we compare instances that start in it.
        moment = start if isinstance(start, datetime) else datetime(start.year, start.month, start.day,
                                                                    tzinfo=timezone.utc)
        if not lower <= moment < upper:
            continue
        found.append({"uid": str(component["UID"]), "start": instance_key(component),
                      "summary": str(component["SUMMARY"])})
    return sorted(found, key=lambda item: (item["uid"], item["start"]))


def check_main_feed(checks, binary):
    spec = main_feed()
    result = run_dump(binary, spec)
    ics = result["ics"]
    with open(os.path.join(HERE, "..", "..", ".local", "calendar-check", "feed.ics"), "w", newline="") as handle:
        handle.write(ics)
    folded = check_syntax(checks, ics)
    checks.check("feed exercises folding", folded > 3, str(folded))
    calendar = icalendar.Calendar.from_ical(ics)
    checks.check("icalendar parses the feed", calendar is not None)
    for name, expected in [("VERSION", "2.0"), ("CALSCALE", "GREGORIAN"), ("METHOD", "PUBLISH"),
                           ("X-WR-CALNAME", spec["calendarName"]), ("X-PUBLISHED-TTL", "PT1H"),
                           ("PRODID", "-//OrbitCove//Calendar Feed//EN")]:
        value = calendar.get(name)
        text = value.to_ical().decode() if name == "X-PUBLISHED-TTL" else str(value)
        if name.startswith("X-WR"):
            # icalendar leaves unknown X- properties as raw text; their default type is TEXT (RFC 5545 3.8.8.2),
            # so they are escaped like any TEXT and clients unescape them.
            text = text.replace("\\;", ";").replace("\\,", ",")
        checks.check(f"calendar {name}", text == expected, f"{text!r} != {expected!r}")
    checks.check("REFRESH-INTERVAL;VALUE=DURATION:PT1H", "REFRESH-INTERVAL;VALUE=DURATION:PT1H\r\n" in ics)

    masters = {str(c["UID"]): c for c in calendar.walk("VEVENT") if "RECURRENCE-ID" not in c}
    berlin = masters["practice-berlin@orbitcove"]
    normalized = TRICKY_TEXT.replace("\r\n", "\n")
    checks.check("SUMMARY round-trips", str(berlin["SUMMARY"]) == normalized, repr(str(berlin["SUMMARY"])))
    checks.check("DESCRIPTION round-trips", str(berlin["DESCRIPTION"]) == LONG_TEXT)
    checks.check("LOCATION round-trips", str(berlin["LOCATION"]) == "Sportplatz Nord, Halle 2; Eingang B",
                 str(berlin["LOCATION"]))
    categories = [str(c) for c in berlin["CATEGORIES"].cats]
    checks.check("CATEGORIES round-trip", categories == ["Practice", "U9, Falcons", "Sport;Outdoor"], str(categories))
    geo = berlin["GEO"]
    checks.check("GEO", abs(geo.latitude - 52.520008) < 1e-9 and abs(geo.longitude - 13.404954) < 1e-9, str(geo))
    checks.check("DTSTART has TZID", berlin["DTSTART"].params.get("TZID") == "Europe/Berlin")
    allday = masters["allday-utc@orbitcove"]
    checks.check("all-day DTSTART is a DATE", type(allday["DTSTART"].dt) is date, repr(allday["DTSTART"].dt))
    checks.check("all-day DTEND is the next day",
                 allday["DTEND"].dt == allday["DTSTART"].dt + timedelta(days=1), repr(allday["DTEND"].dt))
    checks.check("all-day RRULE UNTIL stays a DATE", "UNTIL=20261130" in ics and "UNTIL=20261130T" not in ics)
    checks.check("floating UNTIL written in UTC", "UNTIL=20261030T210000Z" in ics)
    checks.check("all-day EXDATE is a DATE", "EXDATE;VALUE=DATE:20260406\r\n" in ics)
    checks.check("timed EXDATE has TZID", "EXDATE;TZID=Europe/Berlin:20260402T180000\r\n" in ics)
    checks.check("RECURRENCE-ID has TZID", "RECURRENCE-ID;TZID=Europe/Berlin:20260310T180000\r\n" in ics)
    checks.check("cancelled override", "STATUS:CANCELLED\r\n" in ics)

    ours = sorted(({**item, "summary": item["summary"].replace("\r\n", "\n")} for item in result["instances"]),
                  key=lambda item: (item["uid"], item["start"]))
    theirs = expand(calendar)
    checks.check("recurring_ical_events gives our instances (IANA TZIDs)", theirs == ours, diff(ours, theirs))
    uids = {item["uid"] for item in ours}
    checks.check("every series has instances in the window", len(uids) == len(spec["series"]), str(uids))

    renamed = ics
    for zone in ("Europe/Berlin", "America/New_York", "Asia/Tokyo"):
        renamed = renamed.replace(f"TZID={zone}", f"TZID=OrbitCove-{zone.replace('/', '-')}")
        renamed = renamed.replace(f"TZID:{zone}", f"TZID:OrbitCove-{zone.replace('/', '-')}")
    theirs = expand(icalendar.Calendar.from_ical(renamed))
    # dateutil's tzical (which icalendar uses for a zone it only knows from VTIMEZONE) reads a local time inside a
    # spring-forward gap with the offset after the gap; RFC 5545 3.3.5 (and zoneinfo, and we) use the one before.
    # Those instances are listed, not failed; everything else must match.
    gap = {(i["uid"], i["start"]) for i in ours if in_gap(i["uid"], i["start"], spec)}
    ours_rest = [i for i in ours if (i["uid"], i["start"]) not in gap]
    theirs_rest = [i for i in theirs if (i["uid"], shift_gap(i["start"])) not in gap]
    checks.check("recurring_ical_events gives our instances (VTIMEZONE only)", theirs_rest == ours_rest,
                 diff(ours_rest, theirs_rest))
    print(f"VTIMEZONE only: {len(ours_rest)} instances agree; at non-existent local times (tzical reads these "
          f"one hour early, against RFC 5545 3.3.5): ours {sorted(gap)}, theirs "
          f"{sorted((i['uid'], i['start']) for i in theirs if (i['uid'], shift_gap(i['start'])) in gap)}")
    return len(ours)


def in_gap(uid, start, spec):
    """Whether an instance of ours fell at a non-existent wall time: its local time is not the one written."""
    series = next(series for series in spec["series"] if series["uid"] == uid)
    if not start.endswith("Z") or series["tz"] == "UTC":
        return False
    walls = {series["start"][9:]} | {o["start"][9:] for o in series.get("overrides", []) if "start" in o}
    moment = datetime.strptime(start, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    return moment.astimezone(ZoneInfo(series["tz"])).strftime("%H%M%S") not in walls


def shift_gap(start):
    """tzical's reading of a gap time is one hour before ours."""
    if not start.endswith("Z"):
        return start
    moment = datetime.strptime(start, "%Y%m%dT%H%M%SZ") + timedelta(hours=1)
    return moment.strftime("%Y%m%dT%H%M%SZ")


def diff(ours, theirs):
    ours_set = {(i["uid"], i["start"]) for i in ours}
    theirs_set = {(i["uid"], i["start"]) for i in theirs}
    return f"only ours: {sorted(ours_set - theirs_set)[:6]}, only theirs: {sorted(theirs_set - ours_set)[:6]}"


def offsets_agree(tz_ours, tz_real, moments):
    for moment in moments:
        if moment.astimezone(tz_ours).utcoffset() != moment.astimezone(tz_real).utcoffset():
            return moment
    return None


def transitions(zone, lower, upper):
    """zoneinfo's offset changes in [lower, upper], found by bisection on 6-hour steps."""
    found = []
    step = timedelta(hours=6)
    moment = lower
    while moment < upper:
        after = moment + step
        if moment.astimezone(zone).utcoffset() != after.astimezone(zone).utcoffset():
            low, high = moment, after
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if low.astimezone(zone).utcoffset() == middle.astimezone(zone).utcoffset():
                    low = middle
                else:
                    high = middle
            found.append(high.replace(microsecond=0))
        moment = after
    return found


def check_vtimezones(checks, binary, start):
    ics = run_dump(binary, zone_feed(start))["ics"]
    check_syntax(checks, ics)
    calendar = icalendar.Calendar.from_ical(ics)
    first = datetime.strptime(start, "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
    span_end = datetime(2036, 1, 15, tzinfo=timezone.utc) + timedelta(days=366)
    summary = {}
    for component in calendar.walk("VTIMEZONE"):
        tzid = str(component["TZID"])
        ours = component.to_tz(lookup_tzid=False)
        real = ZoneInfo(tzid)
        ruled = any("RRULE" in sub for sub in component.subcomponents)
        upper = span_end + (timedelta(days=15 * 365) if ruled else timedelta(0))
        changes = transitions(real, first, upper)
        moments = [c + timedelta(seconds=d) for c in changes for d in (-1, 0, 1)]
        moment = first
        while moment < upper:
            moments.append(moment)
            moment += timedelta(hours=6)
        bad = offsets_agree(ours, real, moments)
        checks.check(f"VTIMEZONE {tzid} from {start[:4]} ({'RRULE' if ruled else 'explicit'})", bad is None,
                     f"differs at {bad}")
        summary[tzid] = f"{len(component.subcomponents)} sub-components, {'RRULE' if ruled else 'explicit'}"
    return summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(HERE, "..", "..", ".build", "debug", "orbitcove-ics-dump"))
    args = parser.parse_args()
    os.makedirs(os.path.join(HERE, "..", "..", ".local", "calendar-check"), exist_ok=True)
    checks = Checks()
    instances = check_main_feed(checks, args.binary)
    print(f"main feed: {instances} instances compared")
    for start in ("20260110T100000", "20150601T100000"):
        for tzid, shape in check_vtimezones(checks, args.binary, start).items():
            print(f"  {start[:4]} {tzid}: {shape}")
    for failure in checks.failed:
        print("FAILED", failure)
    print(f"ics: {checks.passed} passed, {len(checks.failed)} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
