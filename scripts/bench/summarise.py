#!/usr/bin/env python3
"""Summarises a benchmark script's results: lines of `key=value` fields, one per client and
round, in round order. Prints a Markdown table of medians per client and, for every other
client, its rate against the reference client's, per round and of the medians. Lines of the
CPU each part spent per request (`cpu=CLIENT cpu_ms_<part>=…`, lib.sh's `measure`) make a
second table, of their medians, with the parts as columns.

    summarise.py RESULTS --rate throughput --unit msg/s --reference c-reference
"""

import argparse
import re
import statistics


def median(rows, key, digits=2):
    values = [float(row[key]) for row in rows if key in row]
    return f"{statistics.median(values):.{digits}f}" if values else ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--rate", required=True, help="the field holding each run's rate")
    parser.add_argument("--unit", required=True, help="the rate's unit, for the table heading")
    parser.add_argument("--reference", required=True, help="the client the others are compared with")
    parser.add_argument("--no-cpu", action="store_true", help="leave out the CPU table (printed once already)")
    arguments = parser.parse_args()

    runs = {}
    spending = {}
    for line in open(arguments.results):
        fields = dict(re.findall(r"([\w-]+)=(\S+)", line))
        if "client" in fields:
            runs.setdefault(fields["client"], []).append(fields)
        elif "cpu" in fields:
            spending.setdefault(fields["cpu"], []).append(fields)

    print(f"\n| client | median {arguments.unit} | median p50 ms | median p99 ms | errors | runs |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for client, rows in runs.items():
        medians[client] = statistics.median(float(row[arguments.rate]) for row in rows)
        errors = sum(int(row.get("errors", 0)) for row in rows)
        print(f"| {client} | {medians[client]:.0f} | {median(rows, 'p50_ms')} | {median(rows, 'p99_ms')} "
              f"| {errors} | {len(rows)} |")

    if not arguments.no_cpu:
        print_spending(spending)
    reference = runs.get(arguments.reference)
    if not reference:
        return
    for client, rows in runs.items():
        if client == arguments.reference:
            continue
        rounds = ", ".join(f"{float(ours[arguments.rate]) / float(theirs[arguments.rate]):.2f}"
                           for ours, theirs in zip(rows, reference))
        ratio = medians[client] / medians[arguments.reference]
        print(f"\n{client} / {arguments.reference}: {ratio:.2f} of the medians; per round {rounds}")


def print_spending(spending):
    """The median milliseconds of CPU per request each part spent, per client."""
    if not spending:
        return
    parts = []
    for rows in spending.values():
        for row in rows:
            parts += [key for key in row if key.startswith("cpu_ms_") and key not in parts]
    # The total last, the client before it, the stack's parts by name.
    order = sorted(part for part in parts if part not in ("cpu_ms_client", "cpu_ms_total"))
    order += [part for part in ("cpu_ms_client", "cpu_ms_total") if part in parts]
    names = [part.removeprefix("cpu_ms_") for part in order]
    print("\n| CPU ms per request (median) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for client, rows in spending.items():
        cells = [median(rows, part, 3) or "–" for part in order]
        print(f"| {client} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
