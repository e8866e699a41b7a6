"""The realtime benchmark's seed, clients, writer and check (scripts/bench/realtime.sh runs it).

    realtime_bench.py seed USERS COMMUNITIES FILE
        USERS people through the development sign-in (each with an access token), COMMUNITIES
        communities made through core by their first member, the others added straight into
        PostgreSQL as the tables' owner (a data import); writes FILE (JSON).
    realtime_bench.py run FILE PORTS RATE SECONDS IDLE PIDS POSTMASTER
        One WebSocket per person on the notifications instances at PORTS (comma-separated, the
        people dealt out in turn), each subscribed to its community from a sync token its
        creator read just before. Once every stream is subscribed, a writer (a process of its
        own) makes RATE changes a second for SECONDS through core: a post, then a reaction to
        it, community after community. Meanwhile 100 of the clients ping their instance twice
        a second (the reference: a frame's round trip on the same sockets, under the same load).
        Then IDLE seconds with every stream open and nothing written. Prints the figures and
        checks every client's received changes against the change log.
    realtime_bench.py write FILE RATE SECONDS
        The writer alone (run's own child process).
"""

import asyncio
import json
import math
import os
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

from bench_api import AUTH, CORE, call, psql

PINGERS = 100


def percentile(values, fraction):
    """The nearest-rank percentile of a sorted list."""
    if not values:
        return float("nan")
    return values[min(len(values), max(1, math.ceil(len(values) * fraction))) - 1]


def seed(users, communities, path):
    tag = uuid.uuid4().hex[:8]

    def sign_in(index):
        email = f"realtime-{tag}-{index}@example.com"
        data = call(AUTH, "POST", "/api/v1/auth/dev", {"email": email, "displayName": f"Streamer {index}"},
                    address=f"10.91.{index // 250}.{index % 250 + 1}")
        return {"id": data["user"]["id"], "token": data["accessToken"]}

    with ThreadPoolExecutor(8) as pool:
        people = list(pool.map(sign_in, range(users)))
    groups = [people[index::communities] for index in range(communities)]
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda group: call(CORE, "POST", "/api/v1/communities",
                                               {"name": f"Realtime bench {tag}"}, group[0]["token"])["id"], groups))
    rows = [f"{community}\t{person['id']}\tmember\t{group[0]['id']}"
            for community, group in zip(ids, groups) for person in group[1:]]
    psql("BEGIN;\nCOPY members (community_id, user_id, role, invited_by) FROM STDIN;\n" + "\n".join(rows)
         + "\n\\.\nCOMMIT;\n")
    for community, group in zip(ids, groups):
        for person in group:
            person["community"] = community
    with open(path, "w") as out:
        json.dump({"people": people, "communities": [{"id": community, "creator": group[0]}
                                                     for community, group in zip(ids, groups)]}, out)


def write(path, rate, seconds):
    """A post, then a reaction to it, community after community, RATE a second; prints a summary."""
    with open(path) as source:
        communities = json.load(source)["communities"]
    total = int(rate * seconds)
    started = time.monotonic()
    late, failures, post = 0.0, 0, None
    for step in range(total):
        due = started + step / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            late = max(late, -pause)
        community = communities[(step // 2) % len(communities)]
        base = f"/api/v1/communities/{community['id']}/posts"
        try:
            if step % 2 == 0:
                post = call(CORE, "POST", base, {"content": f"Update {step}"}, community["creator"]["token"])["id"]
            else:
                kind = ["like", "celebrate", "love", "laugh"][(step // 2) % 4]
                call(CORE, "POST", f"{base}/{post}/reactions", {"type": kind}, community["creator"]["token"])
        except Exception as error:  # noqa: BLE001 - counted and reported, the run goes on
            failures += 1
            print(f"writer: step {step}: {error}", file=sys.stderr)
    elapsed = time.monotonic() - started
    print(json.dumps({"writes": total - failures, "failures": failures, "seconds": elapsed,
                      "most_behind": late}))


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far (its threads included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backends_cpu(postmaster):
    """CPU seconds of every PostgreSQL backend (the postmaster's children) alive now."""
    children = subprocess.run(["pgrep", "-P", str(postmaster)], text=True, stdout=subprocess.PIPE).stdout.split()
    total = 0.0
    for child in children:
        try:
            total += cpu_seconds(child)
        except OSError:
            pass
    return total


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Client:
    def __init__(self, person, port):
        self.person, self.port = person, port
        self.subscribed = asyncio.Event()
        self.changes = []  # (community, kind, id, operation, received at), after `subscribed`
        self.unread = 0
        self.other = Counter()  # reset, refused, removed, error frames
        self.pings = []
        self.close_code = None
        self.socket = None



def once_per_commit(rows):
    """The change log as the stream sends it: one entry per row per commit, where it first came,
    saying what the commit left (a deletion if its last write deleted the row, an insertion if
    its first made it, else its last: StreamBatch.Change.oncePerCommit)."""
    kept, first, at = [], [], {}
    for community, kind, entity, operation, moment, txid in rows:
        key = (community, kind, entity, txid)
        if key not in at:
            at[key] = len(kept)
            kept.append([community, kind, entity, operation, moment])
            first.append(operation)
            continue
        index = at[key]
        kept[index][3] = "insert" if operation != "delete" and first[index] == "insert" else operation
    return kept

async def stream(client, token, stop, connect):
    person = client.person
    try:
        async with connect(f"ws://127.0.0.1:{client.port}/api/v1/me/stream",
                           additional_headers={"Authorization": f"Bearer {person['token']}"},
                           ping_interval=None, max_queue=None, open_timeout=60) as socket:
            client.socket = socket
            await socket.send(json.dumps({"type": "subscribe", "communities": [
                {"communityId": person["community"], "syncToken": token}]}))
            reader = asyncio.ensure_future(read(client, socket))
            await stop.wait()
            await socket.close()
            await reader
            client.close_code = socket.close_code
    except Exception as error:  # noqa: BLE001 - reported per client
        client.other[f"failed: {type(error).__name__} {error}"[:120]] += 1
        client.subscribed.set()


async def read(client, socket):
    from websockets.exceptions import ConnectionClosed
    try:
        async for message in socket:
            received = time.time()
            frame = json.loads(message)
            kind = frame["type"]
            if kind == "change":
                if client.subscribed.is_set():
                    client.changes.append((frame["communityId"].lower(), frame["kind"], frame["id"].lower(),
                                           frame["operation"], received))
            elif kind == "subscribed":
                client.subscribed.set()
            elif kind == "unread":
                client.unread += 1
            elif kind != "joined":
                client.other[kind] += 1
    except ConnectionClosed:
        pass
    finally:
        client.subscribed.set()
        client.close_code = socket.close_code


async def pinger(client, stop):
    await client.subscribed.wait()
    while not stop.is_set() and client.socket is not None:
        try:
            waiter = await client.socket.ping()
            client.pings.append(await asyncio.wait_for(waiter, 5))
        except Exception:  # noqa: BLE001 - the socket closed under it
            return
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except asyncio.TimeoutError:
            pass


def report_latencies(name, values):
    values = sorted(values)
    print(f"  {name}: {len(values)}; p50 {percentile(values, 0.5) * 1000:.1f} ms, "
          f"p90 {percentile(values, 0.9) * 1000:.1f} ms, p99 {percentile(values, 0.99) * 1000:.1f} ms, "
          f"max {values[-1] * 1000 if values else float('nan'):.1f} ms")


async def run(path, ports, rate, seconds, idle, pids, postmaster):
    from websockets.asyncio.client import connect
    with open(path) as source:
        seeded = json.load(source)
    people, communities = seeded["people"], seeded["communities"]
    tokens = {community["id"]: call(CORE, "GET", f"/api/v1/communities/{community['id']}/sync",
                                    token=community["creator"]["token"])["syncToken"] for community in communities}
    rss_before = [rss_kib(pid) for pid in pids]
    stop = asyncio.Event()
    clients = [Client(person, ports[index % len(ports)]) for index, person in enumerate(people)]
    opening = time.monotonic()
    tasks = []
    gate = asyncio.Semaphore(50)

    async def opened(client):
        async with gate:
            task = asyncio.ensure_future(stream(client, tokens[client.person["community"]], stop, connect))
            await client.subscribed.wait()
            return task

    tasks = await asyncio.gather(*(opened(client) for client in clients))
    failed = sum(1 for client in clients if client.other)
    print(f"opened and subscribed {len(clients) - failed} streams over {len(ports)} instances in "
          f"{time.monotonic() - opening:.1f}s; failed {failed}")
    for reason, count in Counter(reason for client in clients for reason in client.other).most_common(5):
        print(f"  {count} × {reason}")
    await asyncio.sleep(3)  # the catch-up frames and the subscriptions' own traffic settle
    rss_after = [rss_kib(pid) for pid in pids]
    per_instance = Counter(client.port for client in clients)
    for port, pid, before, after in zip(ports, pids, rss_before, rss_after):
        print(f"  instance :{port}: {per_instance[port]} streams, RSS {before / 1024:.1f} MiB -> "
              f"{after / 1024:.1f} MiB, {(after - before) / max(1, per_instance[port]):.1f} KiB per stream")

    marker = int(psql("SELECT coalesce(max(id), 0) FROM change_log;").strip())
    cpu_before = [cpu_seconds(pid) for pid in pids] + [backends_cpu(postmaster), cpu_seconds(os.getpid())]
    writer = await asyncio.create_subprocess_exec(sys.executable, __file__, "write", path, str(rate), str(seconds),
                                                  stdout=asyncio.subprocess.PIPE)
    ping_stop = asyncio.Event()
    pingers = [asyncio.ensure_future(pinger(client, ping_stop)) for client in clients[:PINGERS]]
    started = time.monotonic()
    output, _ = await writer.communicate()
    written = json.loads(output)
    # Let the last changes arrive: until every expected frame is in, or 10 seconds.
    log = once_per_commit([line.split("\t") for line in psql(
        f"SELECT community_id, entity_kind, entity_id, operation, extract(epoch FROM changed_at), txid "
        f"FROM change_log WHERE id > {marker} ORDER BY id;", separator="\t").splitlines()])
    by_community = Counter(row[0] for row in log)
    expected_frames = sum(by_community[client.person["community"]] for client in clients)
    for _ in range(100):
        if sum(len(client.changes) for client in clients) >= expected_frames:
            break
        await asyncio.sleep(0.1)
    busy = time.monotonic() - started
    cpu_after = [cpu_seconds(pid) for pid in pids] + [backends_cpu(postmaster), cpu_seconds(os.getpid())]
    ping_stop.set()
    await asyncio.gather(*pingers)

    print(f"writer: {written['writes']} changes in {written['seconds']:.1f}s "
          f"({written['writes'] / written['seconds']:.1f}/s; failures {written['failures']}, "
          f"at most {written['most_behind'] * 1000:.0f} ms behind its pace); {len(log)} change-log rows")
    names = [f"instance :{port}" for port in ports] + ["postgres backends", "clients (this process)"]
    print("  cpu while writing (% of one core): " + ", ".join(
        f"{name} {(after - before) / busy * 100:.0f}%" for name, before, after in zip(names, cpu_before, cpu_after)))

    # Every client's received changes against the log: nothing missed, nothing twice.
    times = defaultdict(list)
    for community, kind, entity, operation, at in log:
        times[(community.lower(), kind, entity.lower(), operation)].append(float(at))
    expected = {community: Counter() for community in by_community}
    for key, moments in times.items():
        expected.setdefault(key[0], Counter())[key] = len(moments)
    missing = extra = clients_short = clients_over = 0
    latencies, by_port, frames = [], defaultdict(list), 0
    for client in clients:
        got = Counter(change[:4] for change in client.changes)
        want = expected.get(client.person["community"].lower(), Counter())
        short, over = want - got, got - want
        missing += sum(short.values())
        extra += sum(over.values())
        clients_short += bool(short)
        clients_over += bool(over)
        seen = Counter()
        for change in client.changes:
            key = change[:4]
            moments = times.get(key, [])
            if seen[key] < len(moments):
                latency = change[4] - moments[seen[key]]
                latencies.append(latency)
                by_port[client.port].append(latency)
            seen[key] += 1
        frames += len(client.changes)
    print(f"checked against the change log: {frames} change frames received, {expected_frames} expected; "
          f"missed {missing} (on {clients_short} clients), twice or unexpected {extra} (on {clients_over} clients); "
          f"unread frames {sum(client.unread for client in clients)}; "
          f"other frames {dict(sum((client.other for client in clients), Counter()))}")
    print("commit (the change's transaction, from change_log.changed_at) to client:")
    report_latencies("all", latencies)
    for port in ports:
        report_latencies(f"instance :{port}", by_port[port])
    print("reference, the same sockets at the same time: a ping's round trip (client -> instance -> client):")
    report_latencies(f"{PINGERS} clients, twice a second", [ping for client in clients for ping in client.pings])

    if idle > 0:
        before = [cpu_seconds(pid) for pid in pids] + [backends_cpu(postmaster)]
        await asyncio.sleep(idle)
        after = [cpu_seconds(pid) for pid in pids] + [backends_cpu(postmaster)]
        print(f"idle, {len(clients)} streams open, nothing written, {idle}s (% of one core): " + ", ".join(
            f"{name} {(b - a) / idle * 100:.1f}%" for name, a, b in zip(names, before, after)))

    stop.set()
    await asyncio.gather(*tasks)
    codes = Counter(client.close_code for client in clients)
    print(f"closed by the clients: close codes {dict(codes)}")
    if missing or extra:
        sys.exit(1)


def main():
    mode = sys.argv[1]
    if mode == "seed":
        seed(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif mode == "write":
        write(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    elif mode == "run":
        asyncio.run(run(sys.argv[2], [int(port) for port in sys.argv[3].split(",")], float(sys.argv[4]),
                        float(sys.argv[5]), float(sys.argv[6]), [int(pid) for pid in sys.argv[7].split(",")],
                        int(sys.argv[8])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
