#!/usr/bin/env python3
"""Runs a test command with a deadline, and says which tests were still running if it passes.

    scripts/test-deadline.py SECONDS COMMAND...

Passes the command's output through as it comes. Swift Testing prints a line when a test starts
and one when it ends; past the deadline this prints the tests that started and never ended,
stops the command's whole process group (the test bundle included: a bundle left running would
hold the servers' connections) and exits 124, as timeout(1) does. A hung test then costs CI its
deadline, not its whole budget, and the log names it.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

STARTED = re.compile(r"Test (.+?) started\.$")
ENDED = re.compile(r"Test (.+?) (?:passed|failed|skipped)\b")


def main() -> int:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        print(__doc__.strip(), file=sys.stderr)
        return 2
    deadline = int(sys.argv[1])
    process = subprocess.Popen(
        sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    running: dict[str, float] = {}
    lock = threading.Lock()

    def relay() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace")
            sys.stdout.write(line)
            sys.stdout.flush()
            text = line.rstrip()
            with lock:
                if (match := STARTED.search(text)) is not None:
                    running[match.group(1)] = time.monotonic()
                elif (match := ENDED.search(text)) is not None:
                    running.pop(match.group(1), None)

    reader = threading.Thread(target=relay, daemon=True)
    reader.start()
    try:
        return process.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        now = time.monotonic()
        with lock:
            unfinished = sorted(running.items(), key=lambda item: item[1])
        print(f"\n==> {' '.join(sys.argv[2:])} ran past {deadline} s; {len(unfinished)} tests never ended:")
        for name, started in unfinished:
            print(f"==>   {name} (running for {now - started:.0f} s)")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return 124
    finally:
        reader.join(timeout=5)


if __name__ == "__main__":
    sys.exit(main())
