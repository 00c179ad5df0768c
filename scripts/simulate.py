#!/usr/bin/env python3
"""The driver of scripts/simulate (run it through that script, which starts
the private stack and sets the environment read here).

Replays a simulated day of ad traffic, in accelerated time, through the real
module: seeds an inventory (ad units, EVEN and ASAP line items with goals,
frequency caps, a HOUSE line item) into Redis, sends the day's ad requests
with X-Adserve-Clock set to the simulated time, fires the impression URL of
most ads and the click URL of some, logs every ad served, then prints each
line item's delivery against its goal, the frequency cap violations found in
that log, and plots delivery over the day (gnuplot).

Python 3 standard library only. Exit status: 0 when the targets hold (every
EVEN line item within the tolerance of its goal, no cap violation), 1 when
they do not, 2 when the simulation itself could not run.
"""

import asyncio
import bisect
import calendar
import collections
import json
import math
import multiprocessing as mp
import os
import random
import socket
import subprocess
import sys
import time

from simlib import Conn, Redis, env_num, fail, interval_seconds, final_verdict, run, say
import uuid


DAY = env_num('SIM_DAY', 86400, int, 3600, 86400)     # simulated seconds
REAL = env_num('SIM_SECONDS', 180, float, 5, 600)     # real seconds for them
SPEED = DAY / REAL
REQUESTS = env_num('SIM_REQUESTS', 250000, int, 1000, 2000000)
USERS = env_num('SIM_USERS', 20000, int, 10, 10000000)
CLIENTS = env_num('SIM_CLIENTS', 2, int, 1, 16)          # driver processes
CONNS = env_num('SIM_CONNECTIONS', 8, int, 1, 256)       # per process
SEED = env_num('SIM_SEED', 1, int)
RENDER = env_num('SIM_RENDER', 0.95, float, 0, 1)        # ads whose impression fires
CTR = env_num('SIM_CTR', 0.01, float, 0, 1)              # of rendered ads
ANONYMOUS = env_num('SIM_ANONYMOUS', 0.05, float, 0, 1)  # users who send no user.id
SLOTS = env_num('SIM_SLOTS', 1, int, 1, 8)               # ad slots per page, asked at once
SURGE = env_num('SIM_SURGE', 1.5, float, 0, 10)          # extra traffic at 20:00 (x peak)
PRIME = env_num('SIM_PRIME', 1, int, 0, 1)               # show the workers the day's start first
PROBE = env_num('SIM_PROBE', 0, int, 0, 1)               # check each capped ad's ZADD on arrival
TOLERANCE = env_num('SIM_TOLERANCE', 5, float, 0, 100)   # percent, EVEN line items
OUT = os.environ.get('SIM_OUT') or 'build/simulate'
DATE = os.environ.get('SIM_DATE') or '2031-03-03'
PORT = int(os.environ['ADSERVE_PORT'])
REDIS_PORT = int(os.environ['ADSERVE_REDIS_PORT'])
WORKERS = int(os.environ.get('ADSERVE_WORKERS', '2'))
PACING = interval_seconds('ADSERVE_PACING_INTERVAL', '5s')
FLUSH = interval_seconds('ADSERVE_FLUSH_INTERVAL', '1s')

START = calendar.timegm(time.strptime(DATE, '%Y-%m-%d'))   # 00:00 UTC
END = START + DAY


def hhmm(sim_seconds):
    s = int(sim_seconds)
    return f'{s // 3600:02d}:{s % 3600 // 60:02d}'


def iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))



# ---- the inventory -------------------------------------------------------------------------------

# Ad units and the share of page views each gets (home pages open sessions).
UNITS = ['home', 'article', 'sports']

# Line items. Goals are shares of the day's ad requests, so the inventory
# scales with SIM_REQUESTS. Ranking: type, then priority, then eCPM (the CPM
# rate) among those that pacing lets through.
#   name, type, priority, rate, delivery, goal share, units, caps [(max, seconds)]
LINE_ITEMS = [
    ('sponsor-home', 'SPONSORSHIP', 1, 10.0, 'EVEN', 0.05, ['home'], [(3, 3600)]),
    ('brand-all', 'STANDARD', 4, 4.0, 'EVEN', 0.12, UNITS, []),
    ('brand-capped', 'STANDARD', 4, 2.0, 'EVEN', 0.06, ['article', 'sports'], [(3, 3600), (10, 86400)]),
    ('article-asap', 'STANDARD', 4, 3.0, 'ASAP', 0.04, ['article'], [(2, 3600)]),
    ('perf-asap', 'STANDARD', 6, 2.5, 'ASAP', 0.10, UNITS, [(5, 3600)]),
    ('sports-even', 'STANDARD', 6, 2.0, 'EVEN', 0.03, ['sports'], [(2, 1800)]),
    ('remnant', 'PRICE_PRIORITY', 8, 1.0, None, None, UNITS, [(10, 86400)]),
    ('house', 'HOUSE', 16, 0.0, None, None, UNITS, []),
]


def build_inventory(rng):
    def uid():
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    unit_id = {name: uid() for name in UNITS + ['warmup']}
    order = uid()
    recs = {k: [] for k in ('ad_units', 'orders', 'line_items', 'creatives', 'licas')}
    for name, i in unit_id.items():
        recs['ad_units'].append({'id': i, 'code': f'sim-{name}', 'name': f'Simulation {name}',
                                 'status': 'ACTIVE', 'display': {'w': 300, 'h': 250}})
    recs['orders'].append({'id': order, 'name': 'Simulation', 'status': 'APPROVED'})
    lis, creative_li = [], {}
    for name, typ, prio, rate, delivery, share, units, caps in LINE_ITEMS:
        li = {'id': uid(), 'order_id': order, 'name': name, 'status': 'ACTIVE', 'type': typ,
              'priority': prio, 'cost_type': 'CPM', 'rate': rate,
              'targeting': {'ad_units': {'include': [unit_id[u] for u in units]}}}
        goal = None
        if share is not None:
            goal = max(1, round(share * REQUESTS))
            li.update(goal={'type': 'IMPRESSIONS', 'units': goal}, delivery=delivery,
                      start_at=iso(START), end_at=iso(END))
        if caps:
            li['frequency_caps'] = [{'max': m, 'seconds': s} for m, s in caps]
        recs['line_items'].append(li)
        # two creatives, rotated 2:1 by LICA weight
        for k, weight in enumerate((2, 1)):
            cr = uid()
            recs['creatives'].append({'id': cr, 'name': f'{name} {k + 1}', 'approval': 'APPROVED',
                                      'type': 'IMAGE', 'w': 300, 'h': 250,
                                      'image_url': f'https://cdn.example/{name}-{k + 1}.png',
                                      'landing_url': f'https://advertiser.example/{name}'})
            recs['licas'].append({'id': uid(), 'line_item_id': li['id'], 'creative_id': cr,
                                  'status': 'ACTIVE', 'weight': weight})
            creative_li[cr] = name
        lis.append({'name': name, 'id': li['id'], 'type': typ, 'priority': prio, 'rate': rate,
                    'delivery': delivery, 'goal': goal, 'units': units, 'caps': caps})
    return unit_id, recs, lis, creative_li


def seed(recs):
    """Writes the records as the sidecar does: the hashes, the change log and
    the revision bump in one MULTI/EXEC (README, Redis data contract)."""
    r = Redis(REDIS_PORT)
    cmds = [('MULTI',)]
    for kind, items in recs.items():
        for rec in items:
            cmds.append(('HSET', f'adserve:{kind}', rec['id'], json.dumps(rec)))
            cmds.append(('XADD', 'adserve:changes', 'MAXLEN', '~', '100000', '*',
                         'kind', kind, 'id', rec['id']))
    cmds += [('INCR', 'adserve:rev'), ('EXEC',)]
    replies = r.send(*cmds)
    return replies[-1][-1]


# ---- plain HTTP/1.1 over keep-alive connections --------------------------------------------------

def status_pid_blocking(sock_file, sock):
    """GET /app/v0/status on a blocking socket: (pid, rev)."""
    sock.sendall(b'GET /app/v0/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    head = b''
    while b'\r\n\r\n' not in head:
        chunk = sock_file.readline()
        if not chunk:
            raise ConnectionError('closed')
        head += chunk
    n = 0
    for line in head.split(b'\r\n'):
        if line.lower().startswith(b'content-length:'):
            n = int(line.split(b':')[1])
    st = json.loads(sock_file.read(n))
    return st['pid'], st['rev']


def worker_status():
    """pid -> rev of every worker, over fresh connections; {} on failure."""
    seen = {}
    for _ in range(40 * WORKERS):
        try:
            with socket.create_connection(('127.0.0.1', PORT), timeout=5) as s:
                pid, rev = status_pid_blocking(s.makefile('rb'), s)
                seen[pid] = rev
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
        if len(seen) >= WORKERS:
            break
    return seen


# ---- the day's traffic ---------------------------------------------------------------------------

def diurnal(t):
    """Relative traffic at simulated second t: lowest (0.25) at 04:00,
    highest (1.0) at 16:00, and a surge (breaking news) of SURGE times the
    peak more, rising and falling over 20:00..20:40 (of a 24 h day)."""
    base = 0.25 + 0.75 * (1 - math.cos(2 * math.pi * (t / DAY - 4 / 24))) / 2
    x = (t / DAY * 24 - 20) / (40 / 60)
    return base + (SURGE * math.sin(math.pi * x) ** 2 if 0 <= x < 1 else 0)


def build_schedule(rng):
    """[(sim seconds from start, user index, (unit, ...))] sorted by time:
    the page views of the day, each with its ad slots.

    Visits come in sessions: a session starts at a time drawn from the
    diurnal shape, belongs to a user drawn by activity (log-normal: most
    users come once or twice a day, a few dozens of times), and views 1 + a
    geometric number of pages (4 on average), 3 s to a few minutes apart.
    A page has SLOTS ad slots, asked for at once, as a browser does: distinct
    ad units while there are (3), then units again (a page with two slots of
    one unit); a user's sessions may overlap, their page views do not."""
    activity = [rng.lognormvariate(0, 1.2) for _ in range(USERS)]
    fmax = max(diurnal(t) for t in range(0, DAY, 60))
    cum, total = [], 0.0
    for a in activity:
        total += a
        cum.append(total)

    def page(weights):
        if SLOTS == 1:
            return (rng.choices(UNITS, weights)[0],)
        first = rng.choices(UNITS, weights)[0]
        rest = [u for u in UNITS if u != first]
        rng.shuffle(rest)
        again = [rng.choice(UNITS) for _ in range(SLOTS - len(UNITS))]
        return (first, *rest[:SLOTS - 1], *again)

    items, n = [], 0
    while n < REQUESTS:
        t = rng.random() * DAY
        if rng.random() * fmax > diurnal(t):
            continue
        user = min(bisect.bisect_left(cum, rng.random() * total), USERS - 1)
        units = page((0.5, 0.35, 0.15))
        while t < DAY and n < REQUESTS:
            units = units[:REQUESTS - n]
            items.append((t, user, units))
            n += len(units)
            if rng.random() > 0.75:
                break
            t += 3 + rng.expovariate(1 / 40)
            units = page((0.2, 0.55, 0.25))
    items.sort()
    return items


def user_body(rng, n):
    uas = ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1',
           'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36',
           'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36',
           'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15']
    user = {'id': f'sim-u{n}', 'yob': rng.randint(1950, 2008), 'gender': rng.choice('MFO')}
    if rng.random() < ANONYMOUS:
        del user['id']                 # no cookie: capped line items cannot serve
    body = {'version': '0.1.0', 'user': user, 'device': {'ua': rng.choice(uas)}}
    return json.dumps(body, separators=(',', ':')).encode()


# ---- one driver process --------------------------------------------------------------------------

# shared counters per client, in a flat array of doubles
F_SENT, F_200, F_204, F_OTHER, F_IMP, F_CLK, F_LAG, F_LAGMAX, F_DONE, F_BAD, F_PROBED, F_UNSEEN = range(12)
NF = 12


def sim_now(r0):
    return START + int((time.monotonic() - r0) * SPEED)


def sim_late(r0, t_sched):
    """How late (simulated seconds) a request is sent against its schedule."""
    return (time.monotonic() - r0) * SPEED - t_sched


async def client(idx, items, unit_id, capped_cr, r0, shared, out_path):
    rng = random.Random(SEED * 1000 + idx)
    brng = random.Random(SEED)
    bodies = {}
    base = idx * NF
    loop_paths = {u: f'/app/v0/ad/{i}'.encode() for u, i in unit_id.items()}
    log = []

    # connections spread over the workers: as many on each as can be had
    conns, per_pid, tries = [], collections.Counter(), 0
    want = max(1, CONNS // WORKERS)
    while len(conns) < CONNS and tries < 40 * CONNS:
        tries += 1
        c = Conn(PORT)
        await c.open()
        if per_pid[c.pid] >= want and tries < 40 * CONNS - CONNS:
            c.close()
            continue
        per_pid[c.pid] += 1
        conns.append(c)
    pool = asyncio.Queue()
    for c in conns:
        pool.put_nowait(c)

    # SIM_PROBE: right after each ad of a capped line item, is its
    # frequency cap entry (ZADD, sent before the response) in Redis yet?
    probe_r = probe_w = None
    probe_lock = asyncio.Lock()
    if PROBE:
        probe_r, probe_w = await asyncio.open_connection('127.0.0.1', REDIS_PORT)

    async def probe(user, clock, li_id):
        key = f'adserve:fc:sim-u{user}'.encode()
        t0 = time.monotonic()
        first = True
        while True:
            async with probe_lock:
                probe_w.write(b'*4\r\n$13\r\nZRANGEBYSCORE\r\n$%d\r\n%s\r\n$%d\r\n%d\r\n$%d\r\n%d\r\n'
                              % (len(key), key, len(str(clock)), clock, len(str(clock)), clock))
                n = int((await probe_r.readline())[1:])
                members = []
                for _ in range(max(n, 0)):
                    ln = int((await probe_r.readline())[1:])
                    members.append((await probe_r.readexactly(ln + 2))[:-2])
            seen = any(m.startswith(li_id.encode() + b':') for m in members)
            if first:
                counts[F_PROBED] += 1
                counts[F_UNSEEN] += not seen
                unseen_at_first = not seen
                first = False
            if seen or time.monotonic() - t0 > 0.2:
                break
            await asyncio.sleep(0.0002)
        if unseen_at_first:
            probe_lags.append(time.monotonic() - t0 if seen else float('inf'))

    probe_lags = []
    inflight = {}
    lag_sum = 0.0
    lag_max = 0.0
    counts = [0] * NF

    async def page(t_sched, user, units, prev):
        if prev is not None:
            await asyncio.wait([prev])
        body = bodies.get(user)
        if body is None:
            brng.seed(SEED * 7919 + user)
            body = bodies[user] = user_body(brng, user)
        who = user if b'"id":' in body else f'anon{user}'
        if len(units) == 1:
            await one(t_sched, who, units[0], body)
        else:
            await asyncio.gather(*(one(t_sched, who, u, body) for u in units))

    async def track(conn, url, want, field):
        """Fires a tracking URL at the simulated now; 1 when it answered want."""
        path = url[url.index('/', 8):].encode()
        status, _ = await conn.request(b'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                                       b'X-Adserve-Clock: %d\r\n\r\n' % (path, sim_now(r0)))
        counts[field if status == want else F_BAD] += 1
        return int(status == want)

    async def one(t_sched, user, unit, body):
        nonlocal lag_sum, lag_max
        conn = await pool.get()
        try:
            clock = sim_now(r0)
            lag = sim_late(r0, t_sched)
            lag_sum += lag
            lag_max = max(lag_max, lag)
            raw = (b'POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                   b'X-Adserve-Clock: %d\r\nContent-Length: %d\r\n\r\n%s'
                   % (loop_paths[unit], clock, len(body), body))
            counts[F_SENT] += 1
            st, resp = await conn.request(raw)
            cr, imp, clk = '', 0, 0
            if st == 200:
                counts[F_200] += 1
                ad = json.loads(resp)['ad']
                cr = ad['id']
                if PROBE and cr in capped_cr and not str(user).startswith('anon'):
                    await probe(user, clock, capped_cr[cr])
                if rng.random() < RENDER:
                    imp = await track(conn, ad['impression_url'], 204, F_IMP)
                    if imp and rng.random() < CTR:
                        clk = await track(conn, ad['click_url'], 302, F_CLK)
            elif st == 204:
                counts[F_204] += 1
            else:
                counts[F_OTHER] += 1
            log.append(f'{clock - START},{user},{unit},{st},{cr},{imp},{clk},{conn.pid}\n')
        finally:
            pool.put_nowait(conn)

    async def report():
        while True:
            counts[F_LAG] = lag_sum / counts[F_SENT] if counts[F_SENT] else 0
            counts[F_LAGMAX] = lag_max
            shared[base:base + NF] = counts
            await asyncio.sleep(0.25)

    reporter = asyncio.ensure_future(report())
    tasks, early_errors, prune_at = [], [], 5000
    i, n = 0, len(items)
    while i < n:
        now = time.monotonic()
        while i < n and r0 + items[i][0] / SPEED <= now:
            t_sched, user, units = items[i]
            prev = inflight.get(user)
            task = asyncio.ensure_future(page(t_sched, user, units, prev))
            inflight[user] = task
            tasks.append(task)
            i += 1
        if len(tasks) > prune_at:      # forget what is done
            for t in tasks:
                if t.done() and not t.cancelled() and t.exception() is not None:
                    early_errors.append(t.exception())
            tasks = [t for t in tasks if not t.done()]
            live = set(tasks)
            for u in [u for u, t in inflight.items() if t not in live]:
                del inflight[u]
            prune_at = max(5000, 2 * len(tasks))
        if i < n:
            await asyncio.sleep(max(0.0005, r0 + items[i][0] / SPEED - time.monotonic()))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    errors = early_errors + [r for r in results if isinstance(r, BaseException)]
    reporter.cancel()
    counts[F_OTHER] += len(errors)
    counts[F_DONE] = 1
    counts[F_LAG] = lag_sum / counts[F_SENT] if counts[F_SENT] else 0
    counts[F_LAGMAX] = lag_max
    shared[base:base + NF] = counts
    with open(out_path, 'w') as f:
        f.writelines(log)
    for c in conns:
        c.close()
    if PROBE and probe_lags:
        probe_lags.sort()
        print(f'client {idx}: caps entries not visible at the response: {len(probe_lags)}; visible after '
              f'median {1000 * probe_lags[len(probe_lags) // 2]:.1f} ms, max {1000 * probe_lags[-1]:.1f} ms',
              file=sys.stderr)
    if errors:
        print(f'client {idx}: {len(errors)} requests failed, first: {errors[0]!r}', file=sys.stderr)


def client_main(idx, items, unit_id, capped_cr, r0, shared, out_path):
    try:
        asyncio.run(client(idx, items, unit_id, capped_cr, r0, shared, out_path))
    except Exception as e:             # the parent sees F_DONE unset
        print(f'client {idx} failed: {e!r}', file=sys.stderr)
        sys.exit(2)


# ---- analysis ------------------------------------------------------------------------------------

def violations(served, lis):
    """For each capped line item and cap: the ads served over the cap (an ad
    is over when it and the max ads before it fall inside one window of
    `seconds`, in the module's terms: an ad at t counts until t + seconds),
    the users who got any, and the users who reached the cap (max ads inside
    one window: the cap was binding for them). Ads of a capped line item to
    a user without an id are violations too."""
    out = {}
    for li in lis:
        per_user = served.get(li['name'], {})
        for mx, secs in li['caps']:
            over, users, reached, examples = 0, 0, 0, []
            for user, ads in per_user.items():
                if user.startswith('anon'):
                    over += len(ads)
                    users += 1
                    examples.append(f'{user}: {len(ads)} ads without a user id')
                    continue
                if len(ads) < mx:
                    continue
                ads.sort()
                times = [t for t, _ in ads]
                bad = [k for k in range(mx, len(times)) if times[k] - times[k - mx] < secs]
                over += len(bad)
                users += bool(bad)
                reached += any(times[k] - times[k - mx + 1] < secs for k in range(mx - 1, len(times)))
                for k in bad[:1]:
                    examples.append(f'{user}: ads at ' + ', '.join(
                        f'{hhmm(t)}:{t % 60:02d} (worker {p})' for t, p in ads[k - mx:k + 1]))
            out[(li['name'], mx, secs)] = (over, users, reached, examples)
    return out


def run_gnuplot(lis, dat, png):
    colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#7f7f7f']
    gp = [f"set terminal pngcairo size 1280,1200 font 'DejaVu Sans,10'",
          f"set output '{png}'",
          'set datafile separator whitespace',
          'set multiplot layout 3,1 title "adserve: a simulated day (scripts/simulate)"',
          'set key outside right top', 'set grid', 'set xrange [0:%g]' % (DAY / 3600),
          'set xtics %g' % (DAY / 3600 / 12), 'set format y "%.0f"',
          'set title "Cumulative impressions per line item (dashed: the EVEN goal line)"',
          'set ylabel "impressions"']
    plots = []
    for k, li in enumerate(lis):
        col = colors[k % len(colors)]
        label = f"{li['name']} ({li['delivery'] or 'no goal'})"
        plots.append(f"'{dat}' using 1:{k + 2} with lines lw 2 lc rgb '{col}' title '{label}'")
        if li['delivery'] == 'EVEN':
            plots.append(f"{li['goal']} * x / {DAY / 3600} with lines dt 2 lc rgb '{col}' notitle")
        elif li['goal']:
            plots.append(f"{li['goal']} with lines dt 3 lc rgb '{col}' notitle")
    gp.append('plot ' + ', \\\n     '.join(plots))
    gp += ['set title "EVEN line items: cumulative delivery minus the goal line, in % of the goal'
           ' (the band: the tolerance)"',
           'set ylabel "% of goal"', 'set yrange [*:*]', 'set format y "%.1f"']
    plots = [f"{TOLERANCE} with lines dt 2 lc rgb 'black' notitle",
             f"-{TOLERANCE} with lines dt 2 lc rgb 'black' notitle"]
    for k, li in enumerate(lis):
        if li['delivery'] == 'EVEN':
            col = colors[k % len(colors)]
            plots.append(f"'{dat}' using 1:(100 * (${k + 2} - {li['goal']} * $1 / {DAY / 3600})"
                         f" / {li['goal']}) with lines lw 2 lc rgb '{col}' title '{li['name']}'")
    gp.append('plot ' + ', \\\n     '.join(plots))
    n = len(lis) + 2
    gp += ['set title "Traffic: ad requests per simulated 5 minutes"', 'set ylabel "requests"',
           'set xlabel "simulated hour (UTC)"', 'set format y "%.0f"',
           f"plot '{dat}' using 1:{n} with steps lw 2 lc rgb '#333333' title 'ad requests'",
           'unset multiplot']
    script = os.path.join(os.path.dirname(png), 'delivery.gp')
    with open(script, 'w') as f:
        f.write('\n'.join(gp) + '\n')
    res = subprocess.run(['gnuplot', script], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError('gnuplot failed: ' + res.stderr.strip())


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(SEED)
    unit_id, recs, lis, creative_li = build_inventory(rng)
    say(f'==> seeding {len(UNITS)} ad units and {len(lis)} line items (flight {iso(START)} .. {iso(END)})')
    rev = seed(recs)
    capped_cr = {cr: li['id'] for li in lis if li['caps']
                 for cr, name in creative_li.items() if name == li['name']}
    with open(os.path.join(OUT, 'inventory.json'), 'w') as f:
        json.dump({'start': START, 'end': END, 'ad_units': unit_id, 'line_items': lis,
                   'creatives': creative_li}, f, indent=1)

    deadline = time.monotonic() + 30
    while True:
        st = worker_status()
        if len(st) >= WORKERS and all(r >= rev for r in st.values()):
            break
        if time.monotonic() > deadline:
            say(f'error: the workers did not load revision {rev}: {st}')
            return 2
        time.sleep(0.1)

    # Each worker's timers (pacing) go by the latest clock it has seen: show
    # every worker the start of the day before any ad request, and let two
    # pacing reads pass, so the first one of the day measures from there and
    # not from the real date.
    primed = set()
    for _ in range(200 * WORKERS if PRIME else 0):
        with socket.create_connection(('127.0.0.1', PORT), timeout=5) as s:
            f = s.makefile('rb')
            pid, _ = status_pid_blocking(f, s)
            if pid in primed:
                continue
            body = b'{"version":"0.1.0"}'
            s.sendall(b'POST /app/v0/ad/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Adserve-Clock: %d\r\n'
                      b'Content-Length: %d\r\nConnection: close\r\n\r\n%s'
                      % (unit_id['warmup'].encode(), START - 1, len(body), body))
            reply = f.read()
            if not reply.startswith(b'HTTP/1.1 204'):
                say(f'error: the warm-up request: {reply[:200]!r}')
                return 2
            primed.add(pid)
        if len(primed) >= WORKERS:
            break
    if PRIME:
        time.sleep(2.5 * PACING + 2 * FLUSH)

    say(f'==> the day: {REQUESTS:,} ad requests of {USERS:,} users ({100 * ANONYMOUS:g}% without an id), '
        f'{SLOTS} ad slot(s) a page, {DAY / 3600:g} simulated hours in {REAL:g} s ({SPEED:.0f}x); '
        f'{CLIENTS} client processes x {CONNS} connections; '
        f'pacing every {PACING:g} s = {PACING * SPEED:.0f} simulated s, flush every {FLUSH:g} s '
        f'= {FLUSH * SPEED:.0f} simulated s')
    items = build_schedule(rng)
    parts = [[] for _ in range(CLIENTS)]
    for it in items:
        parts[it[1] % CLIENTS].append(it)

    shared = mp.Array('d', CLIENTS * NF, lock=False)
    r0 = time.monotonic() + 1.0        # the day starts in a second, for every process
    logs = [os.path.join(OUT, f'served.{k}.csv') for k in range(CLIENTS)]
    procs = [mp.Process(target=client_main, args=(k, parts[k], unit_id, capped_cr, r0, shared, logs[k]))
             for k in range(CLIENTS)]
    for p in procs:
        p.start()

    def total(field):
        return sum(shared[k * NF + field] for k in range(CLIENTS))

    # progress: 24 lines a day (each simulated hour of a 24 h day)
    step, mark, last_sent, last_t = DAY / 24, 1, 0, r0
    while any(p.is_alive() for p in procs):
        now = time.monotonic()
        if mark <= 24 and now >= r0 + mark * step / SPEED:
            sent = total(F_SENT)
            rate = (sent - last_sent) / (now - last_t)
            lag = max(shared[k * NF + F_LAGMAX] for k in range(CLIENTS))
            say(f'    sim {hhmm(mark * step)}  {int(sent):>9,} requests  {rate:7,.0f} req/s  '
                f'ads {int(total(F_200)):>9,}  impressions {int(total(F_IMP)):>9,}  '
                f'clicks {int(total(F_CLK)):>6,}  no ad {int(total(F_OTHER) + total(F_204))}  '
                f'driver late by {lag:.0f} sim s at most')
            mark, last_sent, last_t = mark + 1, sent, now
            continue
        time.sleep(0.05)
    real = time.monotonic() - r0
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs) or total(F_DONE) < CLIENTS:
        say('error: a client process failed')
        return 2

    # the last counts reach Redis within a flush; wait until every
    # impression fired is in adserve:delivery (exactly once), or 10 s
    fired = int(total(F_IMP))
    r = Redis(REDIS_PORT)
    li_ids = {li['name']: li['id'] for li in lis}
    deadline = time.monotonic() + max(10, 20 * FLUSH)
    while True:
        h = r.cmd('HGETALL', 'adserve:delivery') or []
        delivery = dict(zip(h[::2], (int(v) for v in h[1::2])))
        counted = sum(delivery.get(f'{i}:imp', 0) for i in li_ids.values())
        if counted >= fired or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    # the log of every ad served
    served = collections.defaultdict(lambda: collections.defaultdict(list))
    n_li = len(lis)
    col = {li['name']: k for k, li in enumerate(lis)}
    bucket = 300
    nb = DAY // bucket + 1
    imps = [[0] * nb for _ in range(n_li)]
    req_b, ads_b = [0] * nb, [0] * nb
    fired_li = collections.Counter()
    ads_li = collections.Counter()
    statuses = collections.Counter()
    per_pid = collections.Counter()
    lines = 0
    for path in logs:
        with open(path) as f:
            for line in f:
                t, user, unit, st, cr, imp, clk, pid = line.rstrip('\n').split(',')
                t = int(t)
                lines += 1
                statuses[st] += 1
                per_pid[pid] += 1
                b = min(max(t, 0) // bucket, nb - 1)
                req_b[b] += 1
                if st != '200':
                    continue
                ads_b[b] += 1
                name = creative_li.get(cr)
                if name is None:
                    statuses['unknown creative'] += 1
                    continue
                ads_li[name] += 1
                served[name][user].append((t, pid))
                if imp == '1':
                    fired_li[name] += 1
                    imps[col[name]][b] += 1
    dat = os.path.join(OUT, 'delivery.dat')
    with open(dat, 'w') as f:
        f.write('# hour ' + ' '.join(li['name'] for li in lis) + ' requests ads'
                '  (cumulative impressions fired per line item; requests and ads per 5 minutes)\n')
        cum = [0] * n_li
        for b in range(nb - 1):
            for k in range(n_li):
                cum[k] += imps[k][b]
            f.write(f'{(b + 1) * bucket / 3600:.4f} ' + ' '.join(map(str, cum))
                    + f' {req_b[b]} {ads_b[b]}\n')

    # the table
    viol = violations(served, lis)
    say('')
    print(f'Simulated day {DATE}: {lines:,} ad requests ({statuses["200"]:,} ads, {statuses["204"]:,} '
          f'no-bids, {lines - statuses["200"] - statuses["204"]:,} other), '
          f'{fired:,} impressions fired, {int(total(F_CLK)):,} clicks, '
          f'{len({u for li in served.values() for u in li}):,} users served')
    hdr = (f'{"line item":<14} {"type":<14} {"prio":>4} {"delivery":<8} {"caps":<16} {"goal":>8} '
           f'{"delivered":>9} {"% goal":>7} {"ads":>8} {"max dev":>7}  verdict')
    print(hdr)
    print('-' * len(hdr))
    failures = []
    for k, li in enumerate(lis):
        name = li['name']
        delivered = delivery.get(f'{li["id"]}:imp', 0)
        caps = ','.join(f'{m}/{s}s' for m, s in li['caps']) or '-'
        goal = li['goal']
        pct = f'{100 * delivered / goal:6.1f}%' if goal else '      -'
        dev, verdict = '', ''
        if li['delivery'] == 'EVEN':
            c, worst = 0, 0.0
            for b in range(nb - 1):
                c += imps[k][b]
                worst = max(worst, abs(c - goal * (b + 1) * bucket / DAY))
            dev = f'{100 * worst / goal:6.1f}%'
            off = 100 * (delivered - goal) / goal
            if abs(off) <= TOLERANCE:
                verdict = f'ok (within ±{TOLERANCE:g}%)'
            else:
                verdict = f'MISS ({off:+.1f}%)'
                failures.append(f'{name} delivered {delivered:,} of {goal:,} ({off:+.1f}%)')
        elif li['delivery'] == 'ASAP':
            c, when = 0, None
            for b in range(nb - 1):
                c += imps[k][b]
                if when is None and c >= goal:
                    when = (b + 1) * bucket
            verdict = (f'goal reached by {hhmm(when)}' if when is not None
                       else 'goal not reached') + (f', over by {delivered - goal:,}'
                                                   if delivered > goal else '')
        else:
            verdict = 'not paced'
        print(f'{name:<14} {li["type"]:<14} {li["priority"]:>4} {li["delivery"] or "-":<8} {caps:<16} '
              f'{goal if goal else "-":>8} {delivered:>9,} {pct:>7} {ads_li[name]:>8,} {dev or "-":>7}  {verdict}')
    print('(delivered: impressions in adserve:delivery; ads: ads served, from the log; max dev: the '
          'largest gap between cumulative impressions and the EVEN goal line during the day, in % of the goal)')
    mismatch = {li['name']: (delivery.get(f'{li["id"]}:imp', 0), fired_li[li['name']])
                for li in lis if delivery.get(f'{li["id"]}:imp', 0) != fired_li[li['name']]}
    if mismatch:
        print('impressions counted in Redis differ from those fired: ' + ', '.join(
            f'{n} {a:,} counted vs {b:,} fired' for n, (a, b) in mismatch.items()))

    total_viol = sum(v[0] for v in viol.values())
    capped = [li['name'] for li in lis if li['caps']]
    print(f'\nFrequency cap violations: {total_viol} (every sliding window of every cap, '
          f'{sum(len(served[n]) for n in capped):,} user-line item pairs of {len(capped)} '
          f'capped line items; users without an id must get none)')
    for (name, mx, secs), (over, users, reached, examples) in viol.items():
        print(f'    {name:<14} max {mx:>2} per {secs:>5} s: {reached:>6,} users reached the cap, '
              f'{over} ads over it' + (f' ({users} users)' if over else ''))
        for e in examples[:3]:
            print(f'        {e}')
    if total_viol:
        failures.append(f'{total_viol} frequency cap violations')

    lag_mean = sum(shared[k * NF + F_LAG] * shared[k * NF + F_SENT] for k in range(CLIENTS)) / max(1, total(F_SENT))
    lag_max = max(shared[k * NF + F_LAGMAX] for k in range(CLIENTS))
    http = lines + fired + int(total(F_CLK))
    print(f'\nTimings: {real:.1f} s real for {DAY / 3600:g} simulated hours; {lines / real:,.0f} ad requests/s, '
          f'{http / real:,.0f} HTTP requests/s (with impressions and clicks); the driver sent each '
          f'request {lag_mean:.1f} simulated s late on average ({lag_max:.0f} s at most)')
    print('Requests per worker: ' + ', '.join(f'pid {p}: {n:,}' for p, n in sorted(per_pid.items())))
    if PROBE:
        print(f'Caps probe: {int(total(F_UNSEEN)):,} of {int(total(F_PROBED)):,} ads of capped line items '
              f'had no entry in adserve:fc:{{user}} yet when their response arrived')
    if total(F_BAD):
        print(f'Tracking requests answered other than 204/302: {int(total(F_BAD))}')
        failures.append(f'{int(total(F_BAD))} tracking requests failed')

    png = os.path.join(OUT, 'delivery.png')
    try:
        run_gnuplot(lis, os.path.abspath(dat), os.path.abspath(png))
        print(f'\nPlot: {png}\nData: {dat} (and the log of every ad request: {os.path.join(OUT, "served.*.csv")})')
    except (OSError, RuntimeError) as e:
        print(f'\nerror: no plot: {e}')
        failures.append('no plot')

    return final_verdict(failures, f'every EVEN line item within ±{TOLERANCE:g}% of its goal, '
                                   'no frequency cap violation')


if __name__ == '__main__':
    run(main)
