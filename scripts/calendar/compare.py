"""Compares the Swift recurrence engine (rrule-dump) with python-dateutil (reference.py).

    python compare.py [--random 600] [--seed 5545] [--binary .build/debug/orbitcove-rrule-dump]

Cases: RFC 5545 section 3.8.5.3 examples within the supported parts (America/New_York), the must-have cases
from the brief in three zones, and random rules in America/New_York, Europe/Berlin and Asia/Tokyo. Each random
rule is compared twice: its first instances from DTSTART, and a window (a few weeks to a year, chosen to cross
DST changes) with some EXDATEs. Exit status 1 on any disagreement; details go to .local/calendar-check/mismatches.json.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

import reference

HERE = os.path.dirname(os.path.abspath(__file__))
ZONES = ["America/New_York", "Europe/Berlin", "Asia/Tokyo"]
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
NY = "America/New_York"


def rfc_examples():
    """(name, dtstart, rule) from RFC 5545 3.8.5.3, all DTSTART;TZID=America/New_York."""
    return [
        ("daily x10", "19970902T090000", "FREQ=DAILY;COUNT=10"),
        ("daily until 1997-12-24", "19970902T090000", "FREQ=DAILY;UNTIL=19971224T000000Z"),
        ("every other day", "19970902T090000", "FREQ=DAILY;INTERVAL=2"),
        ("every 10 days x5", "19970902T090000", "FREQ=DAILY;INTERVAL=10;COUNT=5"),
        ("january for 3 years (yearly)", "19980101T090000",
         "FREQ=YEARLY;UNTIL=20000131T140000Z;BYMONTH=1;BYDAY=SU,MO,TU,WE,TH,FR,SA"),
        ("january for 3 years (daily)", "19980101T090000", "FREQ=DAILY;UNTIL=20000131T140000Z;BYMONTH=1"),
        ("weekly x10", "19970902T090000", "FREQ=WEEKLY;COUNT=10"),
        ("weekly until 1997-12-24", "19970902T090000", "FREQ=WEEKLY;UNTIL=19971224T000000Z"),
        ("every other week", "19970902T090000", "FREQ=WEEKLY;INTERVAL=2;WKST=SU"),
        ("tue+thu five weeks (until)", "19970902T090000", "FREQ=WEEKLY;UNTIL=19971007T000000Z;WKST=SU;BYDAY=TU,TH"),
        ("tue+thu five weeks (count)", "19970902T090000", "FREQ=WEEKLY;COUNT=10;WKST=SU;BYDAY=TU,TH"),
        ("every other week mo/we/fr", "19970901T090000",
         "FREQ=WEEKLY;INTERVAL=2;UNTIL=19971224T000000Z;WKST=SU;BYDAY=MO,WE,FR"),
        ("every other week tu/th x8", "19970902T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=8;WKST=SU;BYDAY=TU,TH"),
        ("first friday x10", "19970905T090000", "FREQ=MONTHLY;COUNT=10;BYDAY=1FR"),
        ("first friday until", "19970905T090000", "FREQ=MONTHLY;UNTIL=19971224T000000Z;BYDAY=1FR"),
        ("every other month first+last sunday", "19970907T090000", "FREQ=MONTHLY;INTERVAL=2;COUNT=10;BYDAY=1SU,-1SU"),
        ("second-to-last monday x6", "19970922T090000", "FREQ=MONTHLY;COUNT=6;BYDAY=-2MO"),
        ("third-to-last day", "19970928T090000", "FREQ=MONTHLY;BYMONTHDAY=-3"),
        ("2nd and 15th x10", "19970902T090000", "FREQ=MONTHLY;COUNT=10;BYMONTHDAY=2,15"),
        ("first and last day x10", "19970930T090000", "FREQ=MONTHLY;COUNT=10;BYMONTHDAY=1,-1"),
        ("every 18 months 10th-15th", "19970910T090000",
         "FREQ=MONTHLY;INTERVAL=18;COUNT=10;BYMONTHDAY=10,11,12,13,14,15"),
        ("every tuesday every other month", "19970902T090000", "FREQ=MONTHLY;INTERVAL=2;BYDAY=TU"),
        ("june and july x10", "19970610T090000", "FREQ=YEARLY;COUNT=10;BYMONTH=6,7"),
        ("jan-mar every other year", "19970310T090000", "FREQ=YEARLY;INTERVAL=2;COUNT=10;BYMONTH=1,2,3"),
        ("20th monday", "19970519T090000", "FREQ=YEARLY;BYDAY=20MO"),
        ("thursdays in march", "19970313T090000", "FREQ=YEARLY;BYMONTH=3;BYDAY=TH"),
        ("thursdays in summer", "19970605T090000", "FREQ=YEARLY;BYDAY=TH;BYMONTH=6,7,8"),
        ("friday 13th", "19970902T090000", "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13"),
        ("saturday after first sunday", "19970913T090000", "FREQ=MONTHLY;BYDAY=SA;BYMONTHDAY=7,8,9,10,11,12,13"),
        ("us election day", "19961105T090000", "FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8"),
        ("third tu/we/th x3", "19970904T090000", "FREQ=MONTHLY;COUNT=3;BYDAY=TU,WE,TH;BYSETPOS=3"),
        ("second-to-last weekday", "19970929T090000", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2"),
        ("wkst=mo example", "19970805T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO"),
        ("wkst=su example", "19970805T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU"),
        ("february 30 skipped", "20070115T090000", "FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5"),
    ]


def required_rules():
    """The brief's must-have rules, each paired with a DTSTART on which it matches."""
    return [
        ("biweekly mo+su wkst=su", "20260301T183000", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SU;WKST=SU"),
        ("biweekly mo+su wkst=mo", "20260301T183000", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SU;WKST=MO"),
        ("biweekly mo+su wkst=su x12", "20260301T183000", "FREQ=WEEKLY;INTERVAL=2;COUNT=12;BYDAY=MO,SU;WKST=SU"),
        ("biweekly mo+su wkst=mo x12", "20260301T183000", "FREQ=WEEKLY;INTERVAL=2;COUNT=12;BYDAY=MO,SU;WKST=MO"),
        ("last weekday", "20260130T170000", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1"),
        ("first sunday 02:30", "20260301T023000", "FREQ=MONTHLY;BYDAY=1SU"),
        ("first sunday", "20260301T100000", "FREQ=MONTHLY;BYDAY=1SU"),
        ("last friday", "20260130T180000", "FREQ=MONTHLY;BYDAY=-1FR"),
        ("last day of month", "20260131T090000", "FREQ=MONTHLY;BYMONTHDAY=-1"),
        ("leap day", "20280229T120000", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"),
        ("leap day x5", "20240229T120000", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=5"),
        ("weekly sunday 02:30 (DST gap)", "20260104T023000", "FREQ=WEEKLY;BYDAY=SU"),
        ("weekly sunday 01:30 (DST overlap)", "20260104T013000", "FREQ=WEEKLY"),
        ("weekly 18:00 practice", "20260106T180000", "FREQ=WEEKLY;BYDAY=TU,TH;UNTIL=20261231T000000Z"),
        ("daily 02:15", "20260301T021500", "FREQ=DAILY;COUNT=60"),
        ("all-day weekly", "20260105T000000", "FREQ=WEEKLY;BYDAY=MO,WE"),
        ("all-day monthly last day, DATE until", "20260131T000000", "FREQ=MONTHLY;BYMONTHDAY=-1;UNTIL=20261231"),
        ("DATE until keeps that day", "20260106T180000", "FREQ=WEEKLY;BYDAY=TU;UNTIL=20260630"),
        ("floating until", "20260106T180000", "FREQ=WEEKLY;BYDAY=TU;UNTIL=20260630T180000"),
        ("floating until one second early", "20260106T180000", "FREQ=WEEKLY;BYDAY=TU;UNTIL=20260630T175959"),
    ]


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def random_weekdays(rng, low, high):
    return rng.sample(DAYS, rng.randint(low, high))


def random_ordinals(rng, largest, count):
    picks = set()
    while len(picks) < count:
        number = rng.choice([n for n in range(-largest, largest + 1) if n != 0])
        picks.add(f"{number}{rng.choice(DAYS)}")
    return sorted(picks)


def random_monthdays(rng, count):
    return rng.sample([n for n in range(-31, 32) if n != 0], count)


def random_rule_parts(rng):
    freq = rng.choice(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"])
    parts = {"FREQ": freq}
    if rng.random() < 0.6:
        parts["INTERVAL"] = str(rng.randint(1, 4))
    byday = None
    if freq == "DAILY":
        if rng.random() < 0.5:
            byday = random_weekdays(rng, 1, 5)
        if rng.random() < 0.3:
            parts["BYMONTH"] = ",".join(map(str, rng.sample(range(1, 13), rng.randint(1, 6))))
        if rng.random() < 0.2:
            parts["BYMONTHDAY"] = ",".join(map(str, random_monthdays(rng, rng.randint(3, 12))))
    elif freq == "WEEKLY":
        if rng.random() < 0.8:
            byday = random_weekdays(rng, 1, 4)
        if rng.random() < 0.2:
            parts["BYMONTH"] = ",".join(map(str, rng.sample(range(1, 13), rng.randint(2, 8))))
    elif freq == "MONTHLY":
        shape = rng.choice(["none", "monthday", "weekday", "ordinal", "weekday+monthday", "setpos"])
        if shape in ("monthday", "weekday+monthday"):
            parts["BYMONTHDAY"] = ",".join(map(str, random_monthdays(rng, rng.randint(1, 4 if shape == "monthday" else 10))))
        if shape in ("weekday", "weekday+monthday", "setpos"):
            byday = random_weekdays(rng, 1, 5)
        if shape == "ordinal":
            byday = random_ordinals(rng, 5, rng.randint(1, 3))
        if rng.random() < 0.25:
            parts["BYMONTH"] = ",".join(map(str, rng.sample(range(1, 13), rng.randint(2, 8))))
    else:
        shape = rng.choice(["none", "month", "month+monthday", "month+weekday", "month+ordinal",
                            "year-ordinal", "weekday", "monthday", "setpos"])
        if shape.startswith("month"):
            parts["BYMONTH"] = ",".join(map(str, rng.sample(range(1, 13), rng.randint(1, 3))))
        if shape in ("month+monthday", "monthday"):
            parts["BYMONTHDAY"] = ",".join(map(str, random_monthdays(rng, rng.randint(1, 3))))
        if shape in ("month+weekday", "weekday"):
            byday = random_weekdays(rng, 1, 2 if shape == "weekday" else 3)
        if shape == "month+ordinal":
            byday = random_ordinals(rng, 5, rng.randint(1, 2))
        if shape == "year-ordinal":
            byday = random_ordinals(rng, 53, rng.randint(1, 2))
        if shape == "setpos":
            parts["BYMONTH"] = ",".join(map(str, rng.sample(range(1, 13), rng.randint(1, 3))))
            byday = random_weekdays(rng, 1, 3)
    if byday:
        parts["BYDAY"] = ",".join(byday)
    selectors = [p for p in ("BYDAY", "BYMONTHDAY", "BYMONTH") if p in parts]
    if selectors and rng.random() < 0.35:
        # Rule validation refuses positions a period cannot hold (a DAILY period holds one day).
        choices = [1, -1] if freq == "DAILY" else [1, 2, 3, -1, -2, -3, 4, -4, 5]
        positions = {rng.choice(choices)} | ({-1} if rng.random() < 0.5 else set())
        parts["BYSETPOS"] = ",".join(map(str, sorted(positions)))
    if rng.random() < 0.5:
        parts["WKST"] = rng.choice(DAYS)
    return parts


def random_seed_time(rng):
    day = datetime(2020, 1, 1) + timedelta(days=rng.randint(0, 3650))
    # Hours 1-3 on DST days exercise skipped and repeated local times.
    hour = rng.choice([0, 1, 2, 2, 3, 9, 12, 17, 18, 18, 19, 23])
    return day.replace(hour=hour, minute=rng.choice([0, 0, 15, 30]), second=rng.choice([0, 0, 0, 45]))


def first_instance(rule_text, seed):
    signal.alarm(2)
    try:
        return next(iter(rrulestr(rule_text, dtstart=seed)), None)
    except Timeout:
        return None
    finally:
        signal.alarm(0)


def dst_crossing_window(rng, tz_name, start):
    """A window beginning a little before a March, October or November DST change after `start`."""
    year = start.year + rng.randint(0, 3)
    month = rng.choice([3, 10, 11])
    lower = datetime(year, month, 1, tzinfo=ZoneInfo(tz_name)) - timedelta(days=rng.randint(0, 40))
    length = timedelta(days=rng.choice([42, 42, 90, 200, 400]))
    return lower.astimezone(timezone.utc), (lower + length).astimezone(timezone.utc)


def random_cases(rng, count, stats):
    cases = []
    while len(cases) < 2 * count:
        parts = random_rule_parts(rng)
        open_rule = ";".join(f"{k}={v}" for k, v in parts.items())
        seed = random_seed_time(rng)
        first = first_instance(open_rule, seed)
        if first is None:
            stats["skipped (no instance within 2 s in dateutil)"] += 1
            stats.setdefault("never", []).append({"id": f"never-{len(stats['never'])}", "rule": open_rule,
                "dtstart": seed.strftime("%Y%m%dT%H%M%S"), "tz": rng.choice(ZONES), "limit": 5})
            continue
        end = rng.choice(["count", "until", "none"])
        if end == "count":
            parts["COUNT"] = str(rng.randint(1, 40))
        elif end == "until":
            until_local = first + timedelta(days=rng.randint(0, 1500), hours=rng.randint(0, 23))
            form = rng.choices(["utc", "floating", "date"], [8, 1, 1])[0]
            if form == "utc":
                aware = until_local.replace(tzinfo=timezone.utc)
                parts["UNTIL"] = aware.strftime("%Y%m%dT%H%M%SZ")
            elif form == "floating":
                parts["UNTIL"] = until_local.strftime("%Y%m%dT%H%M%S")
            else:
                parts["UNTIL"] = until_local.strftime("%Y%m%d")
        items = list(parts.items())
        rng.shuffle(items)
        rule = ";".join(f"{k}={v}" for k, v in items)
        tz_name = rng.choice(ZONES)
        dtstart = first.strftime("%Y%m%dT%H%M%S")
        index = len(cases) // 2
        first_case = {"id": f"random-{index}-first", "rule": rule, "dtstart": dtstart, "tz": tz_name, "limit": 60}
        cases.append(first_case)
        lower, upper = dst_crossing_window(rng, tz_name, first)
        instances = reference.expand(first_case)
        if len(instances) > 1 and rng.random() < 0.6:
            # Start among the instances so the window sees some; its length still spans a DST change.
            lower = reference.parse_utc(rng.choice(instances[1:])) - timedelta(days=rng.randint(0, 20))
            upper = lower + timedelta(days=rng.choice([42, 42, 90, 200, 400]))
        window = {
            "id": f"random-{index}-window", "rule": rule, "dtstart": dtstart, "tz": tz_name, "limit": 500,
            "windowFrom": lower.strftime("%Y%m%dT%H%M%SZ"), "windowTo": upper.strftime("%Y%m%dT%H%M%SZ"),
        }
        cases.append(window)
    return cases


def add_exdates(rng, cases):
    """Turns some of each window case's reference instances into EXDATEs (COUNT still counts them)."""
    for case in cases:
        if not case["id"].endswith("-window") or rng.random() < 0.5:
            continue
        try:
            instances = reference.expand(case)
        except Exception:  # noqa: BLE001 - the comparison reports it
            continue
        if instances:
            case["exdates"] = rng.sample(instances, min(len(instances), rng.randint(1, 3)))


def fixed_cases():
    cases = []
    for name, dtstart, rule in rfc_examples():
        cases.append({"id": f"rfc: {name}", "rule": rule, "dtstart": dtstart, "tz": NY, "limit": 200})
        cases.append({"id": f"rfc: {name} [window]", "rule": rule, "dtstart": dtstart, "tz": NY, "limit": 500,
                      "windowFrom": "19980301T000000Z", "windowTo": "19991115T000000Z"})
    for name, dtstart, rule in required_rules():
        for tz_name in ZONES + ["UTC"]:
            cases.append({"id": f"required: {name} [{tz_name}]", "rule": rule, "dtstart": dtstart, "tz": tz_name,
                          "limit": 80})
            cases.append({"id": f"required: {name} [{tz_name}] [window]", "rule": rule, "dtstart": dtstart,
                          "tz": tz_name, "limit": 500, "windowFrom": "20270301T000000Z",
                          "windowTo": "20271201T000000Z"})
    return cases


def run_swift(binary, cases):
    completed = subprocess.run([binary], input=json.dumps(cases).encode(), capture_output=True, check=True)
    return {result["id"]: result for result in json.loads(completed.stdout)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--random", type=int, default=600, help="random rules (each compared twice)")
    parser.add_argument("--seed", type=int, default=5545)
    parser.add_argument("--binary", default=os.path.join(HERE, "..", "..", ".build", "debug", "orbitcove-rrule-dump"))
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, on_alarm)
    rng = random.Random(args.seed)
    stats = {"skipped (no instance within 2 s in dateutil)": 0}

    cases = fixed_cases() + random_cases(rng, args.random, stats)
    add_exdates(rng, cases)
    swift = run_swift(args.binary, cases)

    groups = {}
    mismatches = []
    for case in cases:
        group = case["id"].split(":")[0].split("-")[0]
        tally = groups.setdefault(group, {"cases": 0, "agree": 0, "instances": 0})
        tally["cases"] += 1
        try:
            expected = {"occurrences": reference.expand(case)}
        except Exception as error:  # noqa: BLE001 - a reference failure is a disagreement to look at
            expected = {"error": repr(error)}
        got = swift.get(case["id"], {"error": "missing from rrule-dump output"})
        if "occurrences" in expected and got.get("occurrences") == expected["occurrences"]:
            tally["agree"] += 1
            tally["instances"] += len(expected["occurrences"])
        else:
            mismatches.append({"case": case, "dateutil": expected, "swift": got})

    by_id = {case["id"]: case for case in cases}
    su = run_swift(args.binary, [by_id["required: biweekly mo+su wkst=su x12 [America/New_York]"]])
    mo = run_swift(args.binary, [by_id["required: biweekly mo+su wkst=mo x12 [America/New_York]"]])
    wkst_differs = list(su.values())[0]["occurrences"] != list(mo.values())[0]["occurrences"]

    os.makedirs(os.path.join(HERE, "..", "..", ".local", "calendar-check"), exist_ok=True)
    with open(os.path.join(HERE, "..", "..", ".local", "calendar-check", "mismatches.json"), "w") as handle:
        json.dump(mismatches, handle, indent=1)
    total = sum(g["cases"] for g in groups.values())
    agree = sum(g["agree"] for g in groups.values())
    for name, tally in groups.items():
        print(f"{name:10} {tally['agree']:5}/{tally['cases']:<5} agree  ({tally['instances']} instances compared)")
    never = stats.pop("never", [])
    for reason, number in stats.items():
        print(f"{reason}: {number}")
    started = datetime.now()
    never_results = run_swift(args.binary, never)
    seconds = (datetime.now() - started).total_seconds()
    found = [result for result in never_results.values() if result.get("occurrences")]
    refused = [result for result in never_results.values() if "error" in result]
    print(f"those rules in Swift: {len(never) - len(found) - len(refused)} of {len(never)} empty, "
          f"{len(refused)} refused, all in {seconds:.2f} s (non-empty: {found})")
    print(f"WKST=SU and WKST=MO give different instances for INTERVAL=2;BYDAY=MO,SU: {wkst_differs}")
    print(f"compare: {agree} passed, {total - agree} failed")
    sys.exit(0 if agree == total and wkst_differs else 1)


if __name__ == "__main__":
    main()
