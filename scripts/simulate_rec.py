#!/usr/bin/env python3
"""The driver of scripts/simulate-rec (run it through that script, which
starts the private stack and sets the environment read here).

A simulated audience with real co-view structure reads a catalog of items in
topics, in accelerated time, through the real module and sidecar:

- The catalog (SIM_ITEMS items in SIM_TOPICS topics, the topic an attribute)
  and two recommendation ad units (topn SIM_TOPN) are seeded through the
  management API: `popular` (ext.algorithm "none", an algorithm adserve does
  not have: no items of its own, only its popular fallback) and `coview`
  (ext.algorithm "coview", the same popular fallback behind it).
- Each reader has a favourite topic (topics are Zipf-popular, items within a
  topic too). A session is a run of pages; each page is one ad request to the
  reader's unit with user.id and ext.item_id, the item read, which records the
  view (history, popularity). Shown recommendations, the reader clicks at most
  one: an item of their topic with a high chance, another with a low one, an
  item they have read never; a click fetches the item's click_url (counts the
  click, records a view) and the next page is that item. Without a click the
  next page is mostly of their topic (SIM_LOYALTY).
- Day 1: every reader is on `popular`. Days 2..SIM_DAYS: a stable split by
  user id, half on `coview`, half on `popular`. The sidecar's jobs (popular
  items, co-view pools) run every SIM_JOB_HOURS simulated hours through
  POST /api/recommendation-jobs/run.
- CTR per unit per simulated hour and day is read from the server's own
  counters (the stats hashes, `u:{unit}:ads|imp|clk` and
  `rs:{unit}/{source}:shown|clk`), with the driver's tallies beside them, and
  plotted (gnuplot).

Time: every request carries X-Adserve-Clock, the simulated time. Simulated
hours run one after the other, as fast as the stack answers; within an hour,
sessions run concurrently, each reader's requests in their order. The
sidecar's popularity job reads the 24 hours before the real clock (it has no
test clock), so day 1 is laid on the last 24 real hours and the split days
after them: the popular ranking the split days see is day 1's.

Python 3 standard library only. Exit status: 0 when the co-view unit's CTR
over the split days is at least SIM_MIN_LIFT times the popular unit's, 1 when
it is not, 2 when the simulation itself could not run.
"""

import asyncio
import bisect
import collections
import hashlib
import json
import math
import os
import random
import socket
import subprocess
import time

from simlib import Conn, Redis, env_num, fail, interval_seconds, final_verdict, run, say
import urllib.error
import urllib.parse
import urllib.request


USERS = env_num('SIM_USERS', 3000, int, 10, 1000000)
ITEMS = env_num('SIM_ITEMS', 1500, int, 20, 10000)
TOPICS = env_num('SIM_TOPICS', 15, int, 2, 100)
DAYS = env_num('SIM_DAYS', 3, int, 2, 7)
SESSIONS = env_num('SIM_SESSIONS', 1.5, float, 0.1, 20)      # per reader per day
PAGES = env_num('SIM_PAGES', 5, float, 1, 50)                # per session, mean
LOYALTY = env_num('SIM_LOYALTY', 0.85, float, 0, 1)          # a page of the favourite topic
P_IN = env_num('SIM_P_IN', 0.08, float, 0, 1)                # click: an item of their topic
P_OUT = env_num('SIM_P_OUT', 0.005, float, 0, 1)             # click: another
TOPN = env_num('SIM_TOPN', 5, int, 1, 99)
FILTER = os.environ.get('SIM_FILTER') or 'ViewPenalty'
JOB_HOURS = env_num('SIM_JOB_HOURS', 3, int, 1, 24)
CONNS = env_num('SIM_CONNECTIONS', 16, int, 1, 256)
SEED = env_num('SIM_SEED', 1, int)
MIN_LIFT = env_num('SIM_MIN_LIFT', 1.5, float, 0, 100)
OUT = os.environ.get('SIM_OUT') or 'build/simulate-rec'
DOCS = os.environ.get('SIM_DOCS', '')                        # also copy the plot there
PORT = int(os.environ['ADSERVE_PORT'])
REDIS_PORT = int(os.environ['ADSERVE_REDIS_PORT'])
WORKERS = int(os.environ.get('ADSERVE_WORKERS', '2'))
FLUSH = interval_seconds('ADSERVE_FLUSH_INTERVAL', '1s')
API = f'http://127.0.0.1:{PORT}'
if FILTER not in ('NoFilter', 'ViewPenalty', 'ViewOut'):
    fail(f'SIM_FILTER={FILTER!r}: NoFilter, ViewPenalty or ViewOut')

HOUR = 3600
# Day 1 ends with the current real hour: the popularity job (the sidecar's
# real clock) reads the 24 hours up to it.
NOW_HOUR = int(time.time()) // HOUR * HOUR
START = NOW_HOUR - 23 * HOUR
HOURS = 24 * DAYS
SPLIT = START + 24 * HOUR                # the split days begin
END = START + (HOURS + 1) * HOUR         # sessions of the last evening end by then
POSITION = [1 / (1 + 0.3 * k) for k in range(99)]   # the click chance by slot
UNITS = ('popular', 'coview')
SPLIT_DAYS = 'Day 2' if DAYS == 2 else f'Days 2-{DAYS}'

TOPIC_NAMES = ['cycling', 'cooking', 'gardening', 'astronomy', 'chess', 'jazz', 'sailing',
               'photography', 'football', 'history', 'birding', 'climbing', 'film', 'coding',
               'wine', 'running', 'poetry', 'travel', 'knitting', 'physics']


def hour_key(t):
    return time.strftime('%Y%m%d%H', time.gmtime(t))


def sim_label(t):
    """Day N hh:mm of a simulated time."""
    s = t - START
    return f'day {s // 86400 + 1} {s % 86400 // 3600:02d}:{s % 3600 // 60:02d}'



# ---- the management API --------------------------------------------------------------------------

class ApiError(Exception):
    pass


class Api:
    """Logs in as make run's admin (the wrapper's ADSERVE_ADMIN_*), as
    scripts/demo.py does."""

    def __init__(self):
        self.token = None
        self.token = self('POST', '/api/auth/login', {
            'email': os.environ['ADSERVE_ADMIN_EMAIL'],
            'password': os.environ['ADSERVE_ADMIN_PASSWORD']})['access_token']

    def __call__(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(API + path, data=data, method=method)
        if data is not None:
            req.add_header('Content-Type', 'application/json')
        if self.token:
            req.add_header('Authorization', 'Bearer ' + self.token)
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                text = res.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            raise ApiError(f'{method} {path}: {e.code} {e.read()[:300]!r}') from None
        except urllib.error.URLError as e:
            raise ApiError(f'{method} {path}: {e.reason}') from None


# ---- the catalog and the audience ----------------------------------------------------------------

def zipf_weights(n, s):
    return [1 / (k + 1) ** s for k in range(n)]


def cumulative(w):
    out, c = [], 0.0
    for x in w:
        c += x
        out.append(c)
    return out


def build_catalog():
    """items: [(item_id, topic)], by_topic: topic -> [item index] (most
    read first), with the weights readers choose them by."""
    names = [TOPIC_NAMES[k] if k < len(TOPIC_NAMES) else f'topic{k}' for k in range(TOPICS)]
    items, by_topic = [], [[] for _ in range(TOPICS)]
    for i in range(ITEMS):
        topic = i % TOPICS
        k = len(by_topic[topic])
        items.append((f'{names[topic]}-{k + 1:03d}', topic))
        by_topic[topic].append(i)
    return names, items, by_topic


def stable_half(user_id):
    """coview or popular on the split days: a hash of the user id."""
    return UNITS[hashlib.sha256(user_id.encode()).digest()[0] & 1]


class Reader:
    __slots__ = ('id', 'topic', 'activity', 'group', 'read')

    def __init__(self, n, topic, activity):
        self.id = f'reader-{n}'
        self.topic = topic
        self.activity = activity
        self.group = stable_half(self.id)
        self.read = set()


def poisson(rng, lam):
    if lam <= 0:
        return 0
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


# traffic by the hour of the day: lowest at 04:00, highest at 20:00
DIURNAL = [0.35 + 0.65 * (0.5 - 0.5 * math.cos(2 * math.pi * ((h - 4) % 24) / 24)) for h in range(24)]
DIURNAL_CUM = cumulative(DIURNAL)


# ---- plain HTTP/1.1 over keep-alive connections --------------------------------------------------

async def open_pool():
    """CONNS connections, spread over the workers."""
    conns, per_pid, tries = [], collections.Counter(), 0
    want = max(1, CONNS // WORKERS)
    while len(conns) < CONNS:
        tries += 1
        c = Conn(PORT)
        await c.open()
        if per_pid[c.pid] >= want and tries < 40 * CONNS:
            c.close()
            continue
        per_pid[c.pid] += 1
        conns.append(c)
    pool = asyncio.Queue()
    for c in conns:
        pool.put_nowait(c)
    return conns, pool, per_pid


async def workers_status():
    """pid -> GET /app/v0/status of every worker, over fresh connections."""
    seen = {}
    for _ in range(40 * WORKERS):
        c = Conn(PORT)
        try:
            st = await c.open()
            seen[st['pid']] = st
        except (OSError, ValueError, KeyError):
            await asyncio.sleep(0.05)
        finally:
            c.close()
        if len(seen) >= WORKERS:
            break
    return seen


async def wait_workers(ok, what, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        st = await workers_status()
        if len(st) >= WORKERS and all(ok(s) for s in st.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f'the workers did not {what}: {st}')
        await asyncio.sleep(0.02)


async def wait_rev(rev):
    await wait_workers(lambda s: s['rev'] >= rev, f'load revision {rev}')


async def wait_flushed():
    """Until every worker has flushed what it counted (the views that
    popularity ranks among them)."""
    await wait_workers(lambda s: s['events']['queued'] == 0 and s['events']['pending_counters'] == 0
                       and s['events']['unacknowledged'] == 0, 'flush their counts')


# ---- simulated time: one hour of sessions at a time ----------------------------------------------

class Clock:
    """Sessions wait here for their next request's simulated hour; the main
    loop opens one hour at a time, and knows when every session is either
    done or waiting for a later hour."""

    def __init__(self):
        self.hour_end = START
        self.waiting = collections.defaultdict(list)    # hour index -> futures
        self.running = 0
        self.idle = asyncio.Event()
        self.idle.set()

    def start(self):
        self.running += 1
        self.idle.clear()

    def stop(self):
        self.running -= 1
        if self.running == 0:
            self.idle.set()

    async def until(self, t):
        if t < self.hour_end:
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiting[(t - START) // HOUR].append(fut)
        self.stop()
        await fut

    def open_hour(self, h):
        self.hour_end = START + (h + 1) * HOUR
        for fut in self.waiting.pop(h, []):
            self.start()
            fut.set_result(None)
        if self.running == 0:
            self.idle.set()


# ---- the simulation ------------------------------------------------------------------------------

class Tally:
    """The driver's own counts, per simulated hour and unit, to set beside
    the server's."""

    def __init__(self):
        self.h = collections.defaultdict(collections.Counter)    # (hour, unit) -> counts

    def add(self, t, unit, what, n=1):
        self.h[((t - START) // HOUR, unit)][what] += n

    def total(self, unit, what, h0=0, h1=None):
        h1 = HOURS if h1 is None else h1
        return sum(c[what] for (h, u), c in self.h.items() if u == unit and h0 <= h < h1)


class Sim:
    def __init__(self, rng, names, items, by_topic, unit_ids):
        self.rng = rng                   # the audience and the schedule; a session has its own
        self.names, self.items, self.by_topic = names, items, by_topic
        self.item_index = {iid: k for k, (iid, _) in enumerate(items)}
        self.unit_ids = unit_ids
        self.paths = {u: f'/app/v0/ad/{i}'.encode() for u, i in unit_ids.items()}
        self.topic_cum = cumulative(zipf_weights(TOPICS, 0.8))
        self.item_cum = [cumulative(zipf_weights(len(ix), 1.0)) for ix in by_topic]
        acts = [rng.lognormvariate(0, 0.8) for _ in range(USERS)]
        mean = sum(acts) / len(acts)
        self.readers = [Reader(n, self.pick_topic(rng), a / mean) for n, a in enumerate(acts)]
        self.clock = Clock()
        self.tally = Tally()
        self.pool = None
        self.errors = []
        self.http = 0

    def pick_topic(self, rng):
        c = self.topic_cum
        return min(len(c) - 1, bisect.bisect_left(c, rng.random() * c[-1]))

    def pick_item(self, rng, topic, reader):
        """An item of the topic by its popularity, preferably one not read."""
        c, ix = self.item_cum[topic], self.by_topic[topic]
        for _ in range(3):
            i = ix[min(len(ix) - 1, bisect.bisect_left(c, rng.random() * c[-1]))]
            if i not in reader.read:
                break
        return i

    def next_page(self, rng, reader):
        topic = reader.topic if rng.random() < LOYALTY else self.pick_topic(rng)
        return self.pick_item(rng, topic, reader)

    def unit_of(self, reader, t):
        return 'popular' if t < SPLIT else reader.group

    async def send(self, raw):
        conn = await self.pool.get()
        try:
            self.http += 1
            return await conn.request(raw)
        finally:
            self.pool.put_nowait(conn)

    async def page(self, rng, reader, item, t):
        """One page: the ad request; (clicked item, click time) or None."""
        unit = self.unit_of(reader, t)
        body = json.dumps({'version': '0.1.0', 'user': {'id': reader.id},
                           'device': {'ua': 'Mozilla/5.0 (simulate-rec)'},
                           'ext': {'item_id': self.items[item][0]}},
                          separators=(',', ':')).encode()
        st, resp = await self.send(b'POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                                   b'Content-Type: application/json\r\nX-Adserve-Clock: %d\r\n'
                                   b'Content-Length: %d\r\n\r\n%s'
                                   % (self.paths[unit], t, len(body), body))
        reader.read.add(item)
        self.tally.add(t, unit, 'req')
        if st == 204:
            self.tally.add(t, unit, '204')
            return None
        if st != 200:
            self.tally.add(t, unit, 'other')
            self.errors.append(f'ad request answered {st}: {resp[:200]!r}')
            return None
        recs = json.loads(resp)['ad']['recommendation']['items']
        self.tally.add(t, unit, 'ads')
        for k, it in enumerate(recs):
            self.tally.add(t, unit, f'shown:{it["source"]}')
            self.tally.add(t, unit, 'shown')
            i = self.item_index.get(it['id'])
            if i is None:
                self.errors.append(f'an item not of the catalog: {it["id"]}')
                continue
            self.tally.add(t, unit, 'in_topic' if self.items[i][1] == reader.topic else 'off_topic')
            if i in reader.read:
                self.tally.add(t, unit, 'shown_read')
        for k, it in enumerate(recs):
            i = self.item_index.get(it['id'])
            if i is None or i in reader.read:
                continue
            p = (P_IN if self.items[i][1] == reader.topic else P_OUT) * POSITION[k]
            if rng.random() < p:
                return i, it, unit
        return None

    async def click(self, reader, t, it, unit):
        if t >= END:
            return
        await self.clock.until(t)
        url = it['click_url']
        path = url[url.index('/', 8):].encode()
        st, _ = await self.send(b'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Adserve-Clock: %d\r\n\r\n'
                                % (path, t))
        if st != 302:
            self.errors.append(f'a click answered {st}')
            return
        self.tally.add(t, unit, 'clk')
        self.tally.add(t, unit, f'clk:{it["source"]}')

    async def session(self, reader, t, pages, seed):
        """One session from t; the time it ended."""
        rng = random.Random(seed)
        if t >= END:                  # pushed past the end by the reader's earlier sessions
            return t
        await self.clock.until(t)
        item = self.next_page(rng, reader)
        for _ in range(pages):
            if t >= END:
                break
            await self.clock.until(t)
            clicked = await self.page(rng, reader, item, t)
            if clicked is not None:
                i, it, unit = clicked
                t += rng.randint(3, 30)
                await self.click(reader, t, it, unit)
                reader.read.add(i)
                item = i
                t += rng.randint(2, 10)               # the clicked item's page
            else:
                item = self.next_page(rng, reader)
                t += rng.randint(20, 180)
        return t

    async def reader_main(self, reader, sessions):
        """A reader's sessions, one after the other: one that would start
        before the previous one ended starts a minute after it, so each
        reader's requests go in their order."""
        self.clock.start()
        try:
            end = START
            for t, pages, seed in sessions:
                end = await self.session(reader, max(t, end + 60), pages, seed)
        except Exception as e:                            # counted, reported, exit 2
            self.errors.append(repr(e))
        finally:
            self.clock.stop()

    def schedule(self):
        """Every reader's sessions: reader -> [(start, pages, the session's
        seed)], in time order."""
        out = {r: [] for r in self.readers}
        for day in range(DAYS):
            d0 = START + day * 86400
            for r in self.readers:
                for _ in range(poisson(self.rng, SESSIONS * r.activity)):
                    h = bisect.bisect_left(DIURNAL_CUM, self.rng.random() * DIURNAL_CUM[-1])
                    t = d0 + min(h, 23) * HOUR + self.rng.randrange(HOUR)
                    pages = 1 + poisson(self.rng, PAGES - 1)
                    out[r].append((t, pages, self.rng.getrandbits(64)))
        for v in out.values():
            v.sort(key=lambda s: s[0])
        return out


# ---- the server's counters -----------------------------------------------------------------------

FIELDS = ('req', 'ads', 'imp', 'clk')
SOURCES = ('algorithm', 'popular')
# the algorithm source is counted per algorithm (rs:{unit}/{name}); summed here
ALGORITHMS = ('axa0', 'coview', 'target_service')


def server_counts(r, unit_ids):
    """(hour index, unit) -> {req, ads, imp, clk, shown:src, clk:src} from the
    stats hashes, and the popularity and item counts' totals."""
    cmds, keys = [], []
    for h in range(HOURS + 1):        # a click can land in the hour after the last
        for u, uid in unit_ids.items():
            fields = [f'u:{uid}:{f}' for f in FIELDS]
            names = [n for s in SOURCES for n in (ALGORITHMS if s == 'algorithm' else (s,))]
            fields += [f'rs:{uid}/{n}:{k}' for n in names for k in ('shown', 'clk')]
            cmds.append(('HMGET', f'adserve:stats:{hour_key(START + h * HOUR)}', *fields))
            keys.append((h, u))
    out = {}
    for (h, u), vals in zip(keys, r.send(*cmds)):
        v = [int(x or 0) for x in vals]
        c = dict(zip(FIELDS, v[:4]))
        for s in SOURCES:
            c[f'shown:{s}'] = c[f'clk:{s}'] = 0
        for k, n in enumerate(names):
            s = n if n in SOURCES else 'algorithm'
            c[f'shown:{s}'] += v[4 + 2 * k]
            c[f'clk:{s}'] += v[5 + 2 * k]
        out[(h, u)] = c
    return out


def ctr(clk, ads):
    return clk / ads if ads else float('nan')


def wilson(k, n, z=1.959964):
    """The 95% Wilson interval of k successes in n."""
    if not n:
        return float('nan'), float('nan')
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return mid - half, mid + half


def iso_hour(h):
    return time.strftime('%Y-%m-%dT%H:00:00Z', time.gmtime(START + h * HOUR))


def pct(x):
    return '      -' if x != x else f'{100 * x:6.2f}%'


# ---- the plot ------------------------------------------------------------------------------------

def run_gnuplot(dat, png, per_day):
    title = (f'adserve: co-view against popularity on a simulated audience ({USERS:,} readers, '
             f'{ITEMS:,} items in {TOPICS} topics, {DAYS} days; scripts/simulate-rec)')
    gp = ["set terminal pngcairo size 1280,900 font 'DejaVu Sans,10' noenhanced",
          f"set output '{png}'",
          'set datafile missing "nan"',
          f'set multiplot layout 2,1 title "{title}"',
          'set grid', f'set xrange [0:{HOURS}]', 'set xtics 6', 'set mxtics 6', 'set samples 2000',
          'set key top right', 'set offsets 0, 0, graph 0.22, 0', 'set lmargin 10',
          'set yrange [0:*]', 'set format y "%.0f%%"',
          f'set arrow 1 from 24, graph 0 to 24, graph 1 nohead dt 2 lc rgb "#555555"',
          'set label 1 " day 2: the readers split by user id, half on coview" at 24, graph 0.96',
          'set title "CTR per simulated hour: answers with a click / answers '
          '(the server\'s u:{unit}:clk / u:{unit}:ads); dashed: the day\'s CTR"',
          'set ylabel "CTR"']
    plots = [f"'{dat}' using 1:(100*$2) with linespoints pt 7 ps 0.5 lw 1.5 lc rgb '#1f77b4' "
             "title 'popular (day 1: every reader; then half of them)'",
             f"'{dat}' using 1:(100*$3) with linespoints pt 7 ps 0.5 lw 1.5 lc rgb '#d62728' "
             "title 'coview (the other half; its popular fallback fills what it leaves)'"]
    for u, col in (('popular', '#1f77b4'), ('coview', '#d62728')):
        for d, v in per_day[u]:
            if v == v:
                plots.append(f"(x >= {24 * d} && x <= {24 * d + 24}) ? {100 * v:.3f} : 1/0 "
                             f"with lines dt 2 lw 2 lc rgb '{col}' notitle")
    gp.append('plot ' + ', \\\n     '.join(plots))
    gp += ['set title "Item CTR: clicks on the items of a source / the items of that source shown '
           '(the server\'s rs:{unit}/{source}:clk / rs:{unit}/{source}:shown)"',
           'set xlabel "simulated hour (day 1 begins at 0)"', 'set ylabel "item CTR"',
           'set format y "%.1f%%"', 'unset label 1']
    gp.append('plot ' + ', \\\n     '.join([
        f"'{dat}' using 1:(100*$4) with lines lw 1.5 lc rgb '#1f77b4' title 'popular: its popular items'",
        f"'{dat}' using 1:(100*$5) with lines lw 1.5 lc rgb '#d62728' title 'coview: its co-view items'"]))
    gp.append('unset multiplot')
    script = os.path.join(os.path.dirname(png), 'ctr.gp')
    with open(script, 'w') as f:
        f.write('\n'.join(gp) + '\n')
    res = subprocess.run(['gnuplot', script], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError('gnuplot failed: ' + res.stderr.strip())


# ---- main ----------------------------------------------------------------------------------------

def seed(api, names, items):
    """The catalog, in batches of upserts, and the two ad units."""
    for k in range(0, len(items), 100):
        batch = [{'op': 'upsert', 'data': {
            'item_id': iid, 'title': f'{names[topic].capitalize()}: story {iid.rsplit("-", 1)[1]}',
            'url': f'https://news.example/{names[topic]}/{iid}',
            'attributes': {'topic': names[topic]}}} for iid, topic in items[k:k + 100]]
        res = api('POST', '/api/catalog-items/batch', {'items': batch})
        bad = [r for r in res['results'] if r['status'] >= 300]
        if bad:
            raise ApiError(f'catalog batch: {bad[:3]}')
    rec = {'topn': TOPN, 'ad_log_tracking_mode': 'on_ad_response',
           'candidate_filtering': {'method': FILTER}, 'fallback': [{'type': 'popular'}]}
    units = {}
    for name, algorithm in (('popular', 'none'), ('coview', 'coview')):
        units[name] = api('POST', '/api/ad-units', {
            'code': f'simulate-rec-{name}', 'name': f'Simulation: related items ({name})',
            'status': 'ACTIVE', 'recommendation': rec,
            'ext': {'algorithm': algorithm, 'recommendation': {'enabled': 1}}})['id']
    return units


async def run_jobs(api, r, report, timing):
    """POST /api/recommendation-jobs/run, then until every worker serves it."""
    t0 = time.monotonic()
    res = await asyncio.to_thread(api, 'POST', '/api/recommendation-jobs/run')
    t1 = time.monotonic()
    for k in report:
        report[k] = res.get(k, 0)
    if res['written'] + res['removed'] + res['pools_written'] + res['pools_removed']:
        await wait_rev(int(r.cmd('GET', 'adserve:rev') or 0))
    timing['job'] += t1 - t0
    timing['job_max'] = max(timing['job_max'], t1 - t0)
    timing['rev'] += time.monotonic() - t1
    return res


async def simulate(api, names, items, by_topic, unit_ids):
    rng = random.Random(SEED)
    sim = Sim(rng, names, items, by_topic, unit_ids)
    conns, sim.pool, per_pid = await open_pool()
    r = Redis(REDIS_PORT)
    t0 = time.monotonic()
    day_sessions = collections.Counter()
    jobs = collections.Counter()
    timing = collections.Counter()
    last = {'views': 0, 'contexts': 0, 'written': 0, 'removed': 0, 'histories': 0,
            'sources': 0, 'pools_written': 0, 'pools_removed': 0}
    say(f'==> {DAYS} simulated days ({sim_label(START)} is {time.strftime("%Y-%m-%d %H:00Z", time.gmtime(START))}), '
        f'{USERS:,} readers, {CONNS} connections ({", ".join(f"pid {p}: {n}" for p, n in sorted(per_pid.items()))})')
    say('    (CTR: the server\'s counters for the hours printed, answers clicked / answers)')
    sched = sim.schedule()
    for v in sched.values():
        for t, _, _ in v:
            day_sessions[(t - START) // 86400] += 1
    tasks = [asyncio.ensure_future(sim.reader_main(reader, v)) for reader, v in sched.items() if v]
    await asyncio.sleep(0)                   # each reader waits for its first session's hour
    prev_http, prev_t, prev_h = 0, t0, 0
    for h in range(HOURS):
        sim.clock.open_hour(h)
        await sim.clock.idle.wait()
        if sim.errors:
            raise RuntimeError(f'{len(sim.errors)} errors, the first: {sim.errors[0]}')
        if h == 0 or (h + 1) % JOB_HOURS == 0 or h + 1 == 24:
            await wait_flushed()             # the hour's views counted, for popularity
            await run_jobs(api, r, last, timing)
            jobs['runs'] += 1
        if (h + 1) % 4 == 0:
            now = time.monotonic()
            sc = server_counts(r, unit_ids)
            parts = []
            for u in UNITS:
                ads = sum(sc[(k, u)]['ads'] for k in range(prev_h, h + 1))
                clk = sum(sc[(k, u)]['clk'] for k in range(prev_h, h + 1))
                if ads:
                    parts.append(f'{u} {pct(ctr(clk, ads)).strip():>6} of {ads:>5,}')
            say(f'    {sim_label(START + (h + 1) * HOUR)}  {sim.http:>8,} HTTP requests '
                f'{(sim.http - prev_http) / (now - prev_t):6,.0f}/s  CTR {"  ".join(parts) or "-"}  '
                f'(jobs: {last["contexts"]} popular context(s), {last["sources"]} co-view pools)')
            prev_http, prev_t, prev_h = sim.http, now, h + 1
    sim.clock.open_hour(HOURS)           # the last evening's sessions end
    await sim.clock.idle.wait()
    await asyncio.gather(*tasks)
    real = time.monotonic() - t0
    for c in conns:
        c.close()
    jobs['job_s'] = timing['job']
    jobs['job_max'] = timing['job_max']
    jobs['rev_s'] = timing['rev']
    return sim, real, day_sessions, jobs


def main():
    os.makedirs(OUT, exist_ok=True)
    names, items, by_topic = build_catalog()
    try:
        api = Api()
        say(f'==> seeding {len(items)} catalog items in {TOPICS} topics and 2 recommendation ad units '
            f'(topn {TOPN}, {FILTER}) through the management API')
        unit_ids = seed(api, names, items)
    except ApiError as e:
        fail(e)
    r = Redis(REDIS_PORT)
    asyncio.run(wait_rev(int(r.cmd('GET', 'adserve:rev') or 0)))
    with open(os.path.join(OUT, 'inventory.json'), 'w') as f:
        json.dump({'start': START, 'split': SPLIT, 'ad_units': unit_ids,
                   'items': [{'item_id': i, 'topic': names[t]} for i, t in items]}, f, indent=1)

    sim, real, day_sessions, jobs = asyncio.run(simulate(api, names, items, by_topic, unit_ids))
    if sim.errors:
        fail(f'{len(sim.errors)} errors, the first: {sim.errors[0]}')

    # every request and click the driver made is in the stats hashes (within a flush or two)
    deadline = time.monotonic() + max(10, 20 * FLUSH)
    want = {(u, k): sim.tally.total(u, k, 0, HOURS + 1) for u in UNITS for k in ('req', 'ads', 'clk')}
    while True:
        sc = server_counts(r, unit_ids)
        got = {(u, k): sum(sc[(h, u)][k] for h in range(HOURS + 1)) for u, k in want}
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    try:
        metrics = api('GET', '/api/metrics?' + urllib.parse.urlencode({
            'group_by': 'ad_unit', 'granularity': 'day', 'from': iso_hour(0),
            'to': iso_hour(HOURS + 1)}))['rows']
        # the split days per unit and source, as a product owner reads them
        rec_metrics = {u: api('GET', '/api/metrics/recommendations?' + urllib.parse.urlencode({
            'ad_unit_id': uid, 'from': iso_hour(24), 'to': iso_hour(HOURS + 1)}))
            for u, uid in unit_ids.items()}
    except ApiError as e:
        fail(e)

    # per day and unit: the server's counts, the driver's beside them
    def srv(u, what, h0, h1):
        return sum(sc[(h, u)][what] for h in range(h0, h1))

    lines = []

    def out(s=''):
        print(s)
        lines.append(s)

    out(f'Simulated {DAYS} days: {USERS:,} readers (favourite topics Zipf-popular), {ITEMS:,} items in '
        f'{TOPICS} topics; {sum(day_sessions.values()):,} sessions, {sim.tally.total("popular", "req") + sim.tally.total("coview", "req"):,} '
        f'pages, {sim.http:,} HTTP requests in {real:.0f} s; the jobs ran {jobs["runs"]} times '
        f'({jobs["job_s"]:.1f} s, {jobs["job_max"]:.1f} s at most, and {jobs["rev_s"]:.1f} s until the workers '
        f'served their results)')
    out(f'Day 1: every reader on popular. {SPLIT_DAYS}: a stable split by user id '
        f'({sum(r.group == "coview" for r in sim.readers):,} readers on coview, '
        f'{sum(r.group == "popular" for r in sim.readers):,} on popular).')
    out(f'Clicks: an item of the reader\'s topic {100 * P_IN:g}%, another {100 * P_OUT:g}% '
        f'(first slot; x{POSITION[TOPN - 1]:.2f} by the last), never an item already read; '
        f'at most one a page.')
    out()
    hdr = (f'{"day":<4} {"unit":<8} {"requests":>9} {"answers":>8} {"clicks":>7} {"CTR":>7}   '
           f'{"item CTR: algorithm":>20} {"popular":>8}   {"of its topic":>12}   driver: answers, clicks')
    out(hdr)
    out('-' * len(hdr))
    per_day = {u: [] for u in UNITS}
    mismatch = []
    for d in range(DAYS):
        h0, h1 = 24 * d, (24 * d + 24 if d + 1 < DAYS else HOURS + 1)   # the last evening's end
        for u in UNITS:
            req, ads, clk = srv(u, 'req', h0, h1), srv(u, 'ads', h0, h1), srv(u, 'clk', h0, h1)
            per_day[u].append((d, ctr(clk, ads)))
            if not req:
                continue
            ictr = {s: ctr(srv(u, f'clk:{s}', h0, h1), srv(u, f'shown:{s}', h0, h1)) for s in SOURCES}
            shown = sim.tally.total(u, 'shown', h0, h1)
            in_topic = sim.tally.total(u, 'in_topic', h0, h1) / shown if shown else float('nan')
            t_ads, t_clk = sim.tally.total(u, 'ads', h0, h1), sim.tally.total(u, 'clk', h0, h1)
            out(f'{d + 1:<4} {u:<8} {req:>9,} {ads:>8,} {clk:>7,} {pct(ctr(clk, ads))}   '
                f'{pct(ictr["algorithm"]):>20} {pct(ictr["popular"]):>8}   {pct(in_topic):>12}   '
                f'{t_ads:,}, {t_clk:,}')
    split = {u: (srv(u, 'ads', 24, HOURS + 1), srv(u, 'clk', 24, HOURS + 1)) for u in UNITS}
    day1 = (srv('popular', 'ads', 0, 24), srv('popular', 'clk', 0, 24))
    out('(requests, answers, clicks: the server\'s u:{unit}:req|ads|clk; CTR: clicks / answers; item CTR: '
        'rs:{unit}/{source}:clk / shown; of its topic: recommended items of the reader\'s topic, and the '
        'driver\'s answers and clicks, from its own log)')
    for u in UNITS:
        for what, key in (('answers', 'ads'), ('clicks', 'clk'), ('requests', 'req')):
            a = srv(u, key, 0, HOURS + 1)
            b = sim.tally.total(u, key, 0, HOURS + 1)
            if a != b:
                mismatch.append(f'{u} {what}: {a:,} counted, {b:,} by the driver')
        imp, ads = srv(u, 'imp', 0, HOURS + 1), srv(u, 'ads', 0, HOURS + 1)
        if imp != ads:
            mismatch.append(f'{u}: {imp:,} impressions counted for {ads:,} answers (on_ad_response)')
    api_rows = collections.defaultdict(lambda: collections.Counter())
    for row in metrics:
        for u, uid in unit_ids.items():
            if row['ad_unit_id'] == uid:
                api_rows[u]['ads'] += row['ads']
                api_rows[u]['clk'] += row['clicks']
    for u in UNITS:
        a = (api_rows[u]['ads'], api_rows[u]['clk'])
        b = (srv(u, 'ads', 0, HOURS + 1), srv(u, 'clk', 0, HOURS + 1))
        if a != b:
            mismatch.append(f'{u}: /api/metrics has {a[0]:,} ads and {a[1]:,} clicks, the stats hashes {b[0]:,} and {b[1]:,}')
    for u in UNITS:
        m = rec_metrics[u]
        a = (m['answers'], m['clicks'], {x['source']: (x['shown'], x['clicks']) for x in m['sources']})
        b = (srv(u, 'ads', 24, HOURS + 1), srv(u, 'clk', 24, HOURS + 1),
             {x: (srv(u, f'shown:{x}', 24, HOURS + 1), srv(u, f'clk:{x}', 24, HOURS + 1)) for x in SOURCES})
        b[2].update({x: (0, 0) for x in a[2] if x not in b[2]})
        a[2].update({x: (0, 0) for x in b[2] if x not in a[2]})
        if a != b:
            mismatch.append(f'{u}: /api/metrics/recommendations has {a}, the stats hashes {b}')
    if mismatch:
        out('COUNTS DIFFER: ' + '; '.join(mismatch))
    else:
        out('The server\'s counts equal the driver\'s (requests, answers, clicks), and /api/metrics and '
            '/api/metrics/recommendations agree with the stats hashes.')
    late = 0
    try:
        with open(os.path.join(os.environ['ADSERVE_VAR'], 'log', 'nginx-error.log'), errors='replace') as f:
            late = sum('view history not read in time' in line for line in f)
    except (KeyError, OSError):
        pass
    out(f'View histories not read in time (answered without them, nginx\'s log): {late:,}')

    out()
    out(f'{SPLIT_DAYS}, per source of the items (GET /api/metrics/recommendations: item CTR, its 95% interval):')
    for u in UNITS:
        for x in rec_metrics[u]['sources']:
            if x['shown']:
                out(f'    {u:<8} {x["source"]:<10} shown {x["shown"]:>9,}  clicks {x["clicks"]:>6,}  '
                    f'CTR {100 * x["ctr"]:5.2f}% [{100 * x["ctr_low"]:.2f}%, {100 * x["ctr_high"]:.2f}%]')

    c_pop, c_cv = ctr(split['popular'][1], split['popular'][0]), ctr(split['coview'][1], split['coview'][0])
    lift = c_cv / c_pop if c_pop > 0 else float('inf')
    ci = {u: wilson(split[u][1], split[u][0]) for u in UNITS}
    out()
    out(f'Day 1, everyone on popular: CTR {pct(ctr(day1[1], day1[0])).strip()}. '
        f'{SPLIT_DAYS}: popular {pct(c_pop).strip()} ({split["popular"][1]:,} / {split["popular"][0]:,}), '
        f'coview {pct(c_cv).strip()} ({split["coview"][1]:,} / {split["coview"][0]:,}): x{lift:.2f}')
    out(f'    (95% intervals: popular [{pct(ci["popular"][0]).strip()}, {pct(ci["popular"][1]).strip()}], '
        f'coview [{pct(ci["coview"][0]).strip()}, {pct(ci["coview"][1]).strip()}])')

    dat = os.path.join(OUT, 'ctr.dat')
    with open(dat, 'w') as f:
        f.write('# hour+0.5 ctr_popular ctr_coview itemctr_popular/popular itemctr_coview/algorithm '
                'itemctr_coview/popular ads_popular ads_coview (the server\'s counters per simulated hour)\n')
        for h in range(HOURS):
            p, c = sc[(h, 'popular')], sc[(h, 'coview')]
            f.write(f'{h + 0.5} {ctr(p["clk"], p["ads"]):.5f} {ctr(c["clk"], c["ads"]):.5f} '
                    f'{ctr(p["clk:popular"], p["shown:popular"]):.5f} '
                    f'{ctr(c["clk:algorithm"], c["shown:algorithm"]):.5f} '
                    f'{ctr(c["clk:popular"], c["shown:popular"]):.5f} {p["ads"]} {c["ads"]}\n')
    with open(os.path.join(OUT, 'driver.json'), 'w') as f:     # the driver's own counts per hour
        json.dump([{'hour': h, 'unit': u, **c} for (h, u), c in sorted(sim.tally.h.items())], f)
    png = os.path.join(OUT, 'ctr.png')
    failures = []
    try:
        run_gnuplot(os.path.abspath(dat), os.path.abspath(png), per_day)
        out(f'\nPlot: {png}\nData: {dat}')
        if DOCS:
            with open(png, 'rb') as src, open(DOCS, 'wb') as dst:
                dst.write(src.read())
            out(f'Copied to {DOCS}')
    except (OSError, RuntimeError) as e:
        out(f'\nerror: no plot: {e}')
        failures.append('no plot')
    if mismatch:
        failures.append('the counts differ')
    if not lift >= MIN_LIFT:
        failures.append(f'coview CTR is x{lift:.2f} the popular one, under x{MIN_LIFT:g}')
    with open(os.path.join(OUT, 'summary.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return final_verdict(failures, f'the co-view unit\'s CTR is x{lift:.2f} the popular unit\'s '
                                   f'(at least x{MIN_LIFT:g})')


if __name__ == '__main__':
    run(main)
