#!/usr/bin/env python3
"""Summarises a benchmark script's results: lines of `key=value` fields, one per client and
round, in round order. Prints a Markdown table of medians per client and, for every other
client, its rate against the reference client's, per round and of the medians.

    summarise.py RESULTS --rate throughput --unit msg/s --reference c-reference
"""

import argparse
import re
import statistics


def median(rows, key):
    values = [float(row[key]) for row in rows if key in row]
    return f"{statistics.median(values):.2f}" if values else ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--rate", required=True, help="the field holding each run's rate")
    parser.add_argument("--unit", required=True, help="the rate's unit, for the table heading")
    parser.add_argument("--reference", required=True, help="the client the others are compared with")
    arguments = parser.parse_args()

    runs = {}
    for line in open(arguments.results):
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if "client" in fields:
            runs.setdefault(fields["client"], []).append(fields)

    print(f"\n| client | median {arguments.unit} | median p50 ms | median p99 ms | errors | runs |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for client, rows in runs.items():
        medians[client] = statistics.median(float(row[arguments.rate]) for row in rows)
        errors = sum(int(row.get("errors", 0)) for row in rows)
        print(f"| {client} | {medians[client]:.0f} | {median(rows, 'p50_ms')} | {median(rows, 'p99_ms')} "
              f"| {errors} | {len(rows)} |")

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


if __name__ == "__main__":
    main()
