#!/usr/bin/env python3
"""The driver of scripts/bench-scale: adserve at scale, on a private stack.

Loads a large generated inventory (100k line items, 5k ad units, 200k
creatives by default) and measures what the issue of the per-node snapshot
asks for: the full load, the snapshot's memory per worker and per node at
each worker count, freshness (one API write to the first ad request that
reflects it, and to every worker), and serving under load across
`nginx -s reload` and across a full load of the running node (the slowest
request and the failed ones).

Standard library only. Prints progress on stderr and the figures, as a
table, on stdout. Exit status: 0, or 2 on an error.
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ)
PORT = int(ENV["ADSERVE_PORT"])
REDIS_PORT = ENV["ADSERVE_REDIS_PORT"]
UNITS = int(ENV.get("SCALE_UNITS", "5000"))
LINE_ITEMS = int(ENV.get("SCALE_LINE_ITEMS", "100000"))
CREATIVES = int(ENV.get("SCALE_CREATIVES", "200000"))
PACED = int(ENV.get("SCALE_PACED", "50"))
WORKERS = [int(w) for w in ENV.get("SCALE_WORKERS", "2 8").split()]
WRITES = int(ENV.get("SCALE_WRITES", "20"))
RELOAD_SECONDS = float(ENV.get("SCALE_RELOAD_SECONDS", "20"))
RELOAD_CLIENTS = int(ENV.get("SCALE_RELOAD_CLIENTS", "4"))
KEPT_CONNECTIONS = 4            # each client's, for the full load under load
BODY = b'{"version":"0.1.0","user":{"id":"scale-user"},"device":{"ua":"Mozilla/5.0"}}'


def say(msg):
    print("==> " + msg, file=sys.stderr, flush=True)


def fail(msg):
    print("error: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


def script(name, *args, **env):
    e = dict(ENV, **{k: str(v) for k, v in env.items()})
    r = subprocess.run([os.path.join(ROOT, "scripts", name), *args], env=e,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("scripts/%s %s: %s" % (name, " ".join(args), r.stderr.strip()[-2000:]))
    return r.stdout


def redis(*args):
    r = subprocess.run(["redis-cli", "-p", REDIS_PORT, *args], capture_output=True,
                       text=True, timeout=60)
    return r.stdout.strip()


def request(method, path, body=None, token=None, timeout=30):
    """One request on a fresh connection: (status, parsed JSON or None)."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    c.request(method, path, body=None if body is None else
              (body if isinstance(body, bytes) else json.dumps(body).encode()), headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data) if data else None
    except ValueError:
        return r.status, None


def api(method, path, body=None, token=None, want=(200, 201)):
    status, j = request(method, "/api" + path, body, token)
    if status not in want:
        fail("%s /api%s: %s %s" % (method, path, status, j))
    return j


def status_of_workers(n, deadline=600):
    """pid -> status of every worker, asking on fresh connections."""
    seen = {}
    end = time.time() + deadline
    while time.time() < end:
        try:
            st, j = request("GET", "/app/v0/status", timeout=5)
        except OSError:
            time.sleep(0.05)
            continue
        if st == 200 and j:
            seen[j["pid"]] = j
            pids = worker_pids()
            if pids and all(p in seen for p in pids):
                return {p: seen[p] for p in pids}
    fail("not every worker answered its status")


def nginx_master():
    with open(os.path.join(ENV["ADSERVE_VAR"], "nginx", "nginx.pid")) as f:
        return int(f.read().strip())


def worker_pids():
    master = nginx_master()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                parts = f.read().split(") ")
            if len(parts) > 1 and parts[0].endswith("(nginx") \
                    and int(parts[1].split()[1]) == master:
                pids.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return sorted(pids)


def memory_kib(pid):
    """(rss, pss) of a process in KiB, from smaps_rollup."""
    rss = pss = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def wait_rev(rev, nworkers, deadline=900):
    end = time.time() + deadline
    while time.time() < end:
        st = status_of_workers(nworkers)
        if all(s["rev"] >= rev for s in st.values()):
            return st
        time.sleep(0.2)
    fail("the workers did not reach revision %d" % rev)


# ---- the fixture the writes toggle ------------------------------------------

def fixture(token):
    """An ad unit served by one line item only, through the API."""
    adv = api("POST", "/advertisers", {"name": "Scale"}, token)
    order = api("POST", "/orders", {"advertiser_id": adv["id"], "name": "Scale"}, token)
    api("PATCH", "/orders/" + order["id"], {"status": "APPROVED"}, token)
    unit = api("POST", "/ad-units", {"code": "scale-%d" % os.getpid(), "name": "Scale",
                                     "status": "ACTIVE", "display": {"w": 300, "h": 250}}, token)
    li = api("POST", "/line-items", {
        "order_id": order["id"], "name": "Scale", "type": "SPONSORSHIP", "cost_type": "CPM",
        "rate": 9, "start_at": "2020-01-01T00:00:00Z", "end_at": "2099-01-01T00:00:00Z",
        "targeting": {"ad_units": {"include": [unit["id"]]}}}, token)
    cr = api("POST", "/creatives", {"advertiser_id": adv["id"], "name": "Scale", "type": "IMAGE",
                                    "w": 300, "h": 250, "image_url": "https://cdn.example/s.png",
                                    "landing_url": "https://advertiser.example/"}, token)
    api("POST", "/licas", {"line_item_id": li["id"], "creative_id": cr["id"]}, token)
    api("PATCH", "/line-items/" + li["id"], {"status": "ACTIVE"}, token)
    return unit["id"], li["id"]


def freshness(token, unit, li, nworkers):
    """WRITES writes of the line item's status; for each, the time to the
    first ad request that reflects it, and to every worker's revision."""
    firsts, alls = [], []
    active = True
    for i in range(WRITES):
        active = not active
        want = 200 if active else 204
        t0 = time.time()
        api("PATCH", "/line-items/" + li, {"status": "ACTIVE" if active else "PAUSED"}, token)
        rev = int(redis("GET", "adserve:rev"))
        first = None
        while time.time() - t0 < 120:
            st, _ = request("POST", "/app/v0/ad/" + unit, BODY)
            if st == want:
                first = time.time() - t0
                break
            time.sleep(0.005)
        if first is None:
            fail("write %d never served" % (i + 1))
        wait_rev(rev, nworkers)
        firsts.append(first * 1000)
        alls.append((time.time() - t0) * 1000)
        say("write %2d/%d: first request reflects it after %6.0f ms, every worker after %6.0f ms"
            % (i + 1, WRITES, firsts[-1], alls[-1]))
    return firsts, alls


class Kept:
    """Requests in turn on KEPT_CONNECTIONS keep-alive connections, each
    opened again when it fails: a browser's, held by one worker (a fresh
    connection goes to whichever worker is free to accept it, so it never
    sees one worker's event loop held)."""

    def __init__(self):
        self.conns = [None] * KEPT_CONNECTIONS
        self.turn = 0

    def post(self, path):
        i = self.turn = (self.turn + 1) % len(self.conns)
        if self.conns[i] is None:
            self.conns[i] = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        try:
            self.conns[i].request("POST", path, body=BODY,
                                  headers={"Content-Type": "application/json"})
            r = self.conns[i].getresponse()
            r.read()
            return r.status
        except (OSError, http.client.HTTPException):
            self.conns[i].close()
            self.conns[i] = None
            raise


def under_load(unit, event, kept=False):
    """Requests back to back from RELOAD_CLIENTS threads for RELOAD_SECONDS,
    on fresh connections or kept ones, event() a quarter of the way in."""
    results = []
    lock = threading.Lock()
    stop = time.time() + RELOAD_SECONDS

    def client():
        mine = []
        conns = Kept() if kept else None
        while time.time() < stop:
            t0 = time.time()
            try:
                if conns:
                    st = conns.post("/app/v0/ad/" + unit)
                else:
                    st, _ = request("POST", "/app/v0/ad/" + unit, BODY, timeout=30)
            except (OSError, http.client.HTTPException) as e:
                st = "error: %s" % e
            mine.append((t0, (time.time() - t0) * 1000, st))
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(RELOAD_CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(RELOAD_SECONDS / 4)
    at = time.time()
    event()
    for t in threads:
        t.join()
    failed = [x for x in results if x[2] not in (200, 204)]
    slow = max(results, key=lambda x: x[1])
    lat = sorted(x[1] for x in results)
    return {"requests": len(results), "failed": len(failed),
            "slowest_ms": slow[1], "slowest_at": slow[0] - at,
            "p99_ms": lat[int(len(lat) * 0.99) - 1], "p50_ms": lat[len(lat) // 2],
            "errors": sorted({str(x[2]) for x in failed})[:5]}


def reload():
    r = subprocess.run(["/usr/sbin/nginx", "-p", ENV["ADSERVE_VAR"] + "/nginx/", "-c",
                        ENV["ADSERVE_VAR"] + "/nginx/nginx.conf", "-e",
                        ENV["ADSERVE_VAR"] + "/log/nginx-error.log", "-s", "reload"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("nginx -s reload: " + r.stderr)


def full_load():
    """A revision with no change log entry, as a writer outside the
    contract makes: only a full load can tell what changed. The builder
    reads every hash again, builds, and frees its previous records."""
    redis("INCR", "adserve:rev")


def node_full_loads(nworkers):
    return sum(s["full_loads"] for s in status_of_workers(nworkers).values())


def print_under_load(what, r):
    print("%s (%d workers): %d requests, %d failed, slowest %.0f ms (%.1f s after it "
          "began), p99 %.1f ms, p50 %.1f ms%s"
          % (what, WORKERS[0], r["requests"], r["failed"], r["slowest_ms"], r["slowest_at"],
             r["p99_ms"], r["p50_ms"],
             ("; errors: " + ", ".join(r["errors"])) if r["errors"] else ""))


# ---- main ----------------------------------------------------------------------

def adoptions():
    """From nginx's log: how long each adoption held a worker's event loop
    (the carry-over of its pace table), for every worker and publication,
    and apart a new worker's first (its table and the snapshot's pages are
    new to it; a reload's new worker takes it in its initialisation, before
    its event loop accepts a connection, and a cold start's workers when
    the first snapshot is published): each as (on the clock, on a core),
    the clock's including the time the worker waited for a core."""
    seen, later, first = set(), [], []
    try:
        with open(os.path.join(ENV["ADSERVE_VAR"], "log", "nginx-error.log")) as f:
            for line in f:
                if "adopted; its pace table in" not in line:
                    continue
                pid = line.split("#")[0].split()[-1]
                took = line.rsplit(" in ", 1)[1].split()
                cpu = float(took[2]) if took[4:6] == ["of", "it"] else None
                (later if pid in seen else first).append((float(took[0]), cpu))
                seen.add(pid)
    except OSError:
        return None
    return (later, first) if later else None


def full_load_steps():
    """From nginx's log: each full load's longest chunk copy on the builder's
    event loop, on the clock and on a core (the clock's is longer when the
    node's other threads held the core), and how long the pool took to
    free each full load's previous records."""
    steps, frees = [], []
    try:
        with open(os.path.join(ENV["ADSERVE_VAR"], "log", "nginx-error.log")) as f:
            for line in f:
                if "full load's longest chunk copy" in line:
                    words = line.split(" took ", 1)[1].split()
                    steps.append((float(words[0]), float(words[2])))
                elif "previous records of the full load" in line:
                    words = line.split("(", 1)[1].split()
                    frees.append((int(words[0].rstrip(")")), float(words[3])))
    except OSError:
        return [], []
    return steps, frees


def main():
    out = []
    say("loading %d ad units, %d line items (%d%% paced), %d creatives into Redis"
        % (UNITS, LINE_ITEMS, PACED, CREATIVES))
    t0 = time.time()
    gen = subprocess.Popen([os.path.join(ROOT, "scripts", "gen-inventory"), "--units", str(UNITS),
                            "--line-items", str(LINE_ITEMS), "--creatives", str(CREATIVES),
                            "--paced", str(PACED)],
                           stdout=subprocess.PIPE)
    pipe = subprocess.run(["redis-cli", "-p", REDIS_PORT, "--pipe"], stdin=gen.stdout,
                          capture_output=True, text=True)
    gen.wait()
    if gen.returncode != 0 or pipe.returncode != 0:
        fail("the inventory could not be loaded: " + pipe.stderr)
    say("in Redis after %.1f s (%s MB used)" % (time.time() - t0,
        int(redis("INFO", "memory").split("used_memory:")[1].split()[0]) // 2**20))

    token = None
    for n, workers in enumerate(WORKERS):
        say("nginx with %d workers" % workers)
        script("stop", "nginx")
        t0 = time.time()
        script("run", "nginx", ADSERVE_WORKERS=workers)
        rev = int(redis("GET", "adserve:rev") or 0)
        st = wait_rev(rev, workers)
        loaded = time.time() - t0
        mem = {pid: memory_kib(pid) for pid in st}
        row = {
            "workers": workers, "load_s": loaded,
            "build_ms": max(s["build_ms"] for s in st.values()),
            "snapshot_mib": max(s["snapshot_kib"] for s in st.values()) / 1024,
            "zone_mib": max(s["zone"]["used_kib"] for s in st.values()) / 1024,
            "rss_mib": statistics.mean(m[0] for m in mem.values()) / 1024,
            "pss_mib": sum(m[1] for m in mem.values()) / 1024,
        }
        out.append(row)
        say("every worker serves after %.1f s (build %d ms); a snapshot of %.0f MiB, %.0f MiB "
            "in the node's zone; RSS %.0f MiB per worker; PSS %.0f MiB for the node"
            % (row["load_s"], row["build_ms"], row["snapshot_mib"], row["zone_mib"],
               row["rss_mib"], row["pss_mib"]))
        if n == 0:
            script("run", "sidecar")
            token = api("POST", "/auth/login", {"email": ENV["ADSERVE_ADMIN_EMAIL"],
                                                "password": ENV["ADSERVE_ADMIN_PASSWORD"]})[
                "access_token"]
            unit, li = fixture(token)
            wait_rev(int(redis("GET", "adserve:rev")), workers)
            say("freshness: %d writes of one line item's status" % WRITES)
            firsts, alls = freshness(token, unit, li, workers)
            say("reload under load: %d clients on fresh connections for %.0f s"
                % (RELOAD_CLIENTS, RELOAD_SECONDS))
            rl = under_load(unit, reload)
            say("a full load under load: %d clients on %d keep-alive connections each "
                "for %.0f s" % (RELOAD_CLIENTS, KEPT_CONNECTIONS, RELOAD_SECONDS))
            loads = node_full_loads(workers)
            fl = under_load(unit, full_load, kept=True)
            if node_full_loads(workers) == loads:
                fail("no full load of the running node within %.0f s: its figure would "
                     "measure nothing" % (RELOAD_SECONDS * 3 / 4))

    print()
    print("inventory: %d ad units, %d line items (%d%% paced), %d creatives"
          % (UNITS, LINE_ITEMS, PACED, CREATIVES))
    print("%-8s %8s %9s %13s %9s %15s %13s" % ("workers", "load s", "build ms", "snapshot MiB",
                                                "zone MiB", "RSS/worker MiB", "node PSS MiB"))
    for r in out:
        print("%-8d %8.1f %9d %13.0f %9.0f %15.0f %13.0f"
              % (r["workers"], r["load_s"], r["build_ms"], r["snapshot_mib"], r["zone_mib"],
                 r["rss_mib"], r["pss_mib"]))
    print("freshness (%d workers, %d writes): first request median %.0f ms, max %.0f ms; "
          "every worker median %.0f ms, max %.0f ms"
          % (WORKERS[0], WRITES, statistics.median(firsts), max(firsts),
             statistics.median(alls), max(alls)))
    print_under_load("reload", rl)
    print_under_load("a full load of the running node, on keep-alive connections", fl)
    steps, frees = full_load_steps()
    if steps:
        print("full load (the builder's event loop): longest chunk copy %.1f ms on the clock, "
              "%.1f ms on a core, over %d loads"
              % (max(w for w, _ in steps), max(c for _, c in steps), len(steps)))
    if frees:
        print("full load (the pool): the previous records freed off the event loop, the "
              "largest %d in %.0f ms" % max(frees))
    ad = adoptions()
    if ad:
        later, first = ad
        clock = [w for w, _ in later]
        cores = [c for _, c in later if c is not None]
        first_cores = [c for _, c in first if c is not None]
        print("adoption (a worker's event loop taking a new snapshot, its pace table): "
              "median %.1f ms, max %.1f ms over %d%s; a new worker's first (a reload's "
              "before it accepts connections): max %.1f ms%s"
              % (statistics.median(clock), max(clock), len(clock),
                 " (on a core: median %.1f ms, max %.1f ms)"
                 % (statistics.median(cores), max(cores)) if cores else "",
                 max([w for w, _ in first] or [0]),
                 " (%.1f ms on a core)" % max(first_cores) if first_cores else ""))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        fail("interrupted")
