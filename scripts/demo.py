"""The demo publisher's seed (scripts/demo runs it; see there).

Everything goes through the management API, which validates it as it would
any operator's request. Each record is looked up by its name or code first,
so a second run changes nothing, and a run after a change of ports fixes
the URLs the creatives point at. Progress goes to stderr; the page's URL is
the one line on stdout.
"""

import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.environ["ADSERVE_ROOT"]
API = "http://127.0.0.1:%s" % os.environ["ADSERVE_PORT"]
PUBLIC = os.environ["ADSERVE_PUBLIC_URL"].rstrip("/")
DEMO = "http://127.0.0.1:%s" % os.environ["ADSERVE_DEMO_PORT"]
OUT = os.path.join(os.environ["ADSERVE_VAR"], "demo")
SOURCE = os.path.join(ROOT, "sdk", "demo")

# the demo's inventory: code -> (name, width, height)
UNITS = {
    "demo-rectangle": ("Demo: sidebar rectangle (image ad)", 300, 250),
    "demo-leaderboard": ("Demo: leaderboard below the article (HTML ad)", 728, 90),
    "demo-empty": ("Demo: sidebar slot without demand (collapses)", 300, 250),
}

# the advertiser's HTML creative: %%CLICK_URL%% is where the SDK puts the
# click URL (README "Web SDK")
BANNER_HTML = """<a href="%%CLICK_URL%%" style="display:flex;box-sizing:border-box;width:728px;\
height:90px;padding:0 28px;align-items:center;justify-content:space-between;text-decoration:none;\
font:600 24px/1.2 system-ui,sans-serif;color:#fff;background:linear-gradient(90deg,#0f5132,#198754)">\
<span>Trail Runner X &mdash; 210 g of grip</span>\
<span style="font-size:18px;padding:10px 18px;border-radius:6px;background:#fff;color:#0f5132">Shop now</span></a>"""


def say(msg):
    print("==> demo: " + msg, file=sys.stderr, flush=True)


class ApiError(Exception):
    pass


def call(method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=15) as res:
            text = res.read()
            return res.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            detail = json.loads(text).get("detail")
        except ValueError:
            detail = text[:200]
        raise ApiError("%s %s: %s %s" % (method, path, e.code, detail)) from None
    except urllib.error.URLError as e:
        raise ApiError("%s %s: %s (is the stack up? make run)" % (method, path, e.reason)) from None


def same(have, want):
    """want holds no value that have lacks or differs in (the API adds defaults)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(same(have.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(map(same, have, want))
    return have == want


class Api:
    def __init__(self):
        _, tokens = call("POST", "/api/auth/login", {
            "email": os.environ["ADSERVE_ADMIN_EMAIL"],
            "password": os.environ["ADSERVE_ADMIN_PASSWORD"]})
        self.token = tokens["access_token"]

    def __call__(self, method, path, body=None):
        return call(method, path, body, self.token)[1]

    def find(self, collection, match, **query):
        """The first record of the collection whose fields equal match."""
        query["limit"] = 500
        items = self("GET", "/api/%s?%s" % (collection, urllib.parse.urlencode(query)))["items"]
        for item in items:
            if all(item.get(k) == v for k, v in match.items()):
                return item
        return None

    def ensure(self, collection, match, fields, **query):
        """Finds the record by match, then creates it or fixes the fields that differ."""
        record = self.find(collection, match, **query)
        if record is None:
            record = self("POST", "/api/" + collection, {**match, **fields})
            say("created %s %s" % (collection, record["id"]))
            return record
        changed = {k: v for k, v in fields.items() if not same(record.get(k), v)}
        if changed:
            record = self("PATCH", "/api/%s/%s" % (collection, record["id"]), changed)
            say("updated %s %s: %s" % (collection, record["id"], ", ".join(sorted(changed))))
        return record

    def status(self, collection, record, status, key="status"):
        if record.get(key) != status:
            record = self("PATCH", "/api/%s/%s" % (collection, record["id"]), {key: status})
            say("%s %s is %s" % (collection, record["id"], status))
        return record


def seed(api):
    units = {}
    for code, (name, w, h) in UNITS.items():
        units[code] = api.ensure("ad-units", {"code": code},
                                 {"name": name, "status": "ACTIVE", "display": {"w": w, "h": h}},
                                 q=code)

    advertiser = api.ensure("advertisers", {"name": "Trail Runner Co. (demo)"},
                            {"domain": "trailrunner.example"}, q="demo")
    order = api.ensure("orders", {"advertiser_id": advertiser["id"], "name": "Demo: spring campaign"},
                       {}, advertiser_id=advertiser["id"])
    api.status("orders", order, "APPROVED")

    chains = [
        ("demo-rectangle", "Demo: rectangle", {
            "type": "IMAGE", "w": 300, "h": 250,
            "image_url": DEMO + "/assets/rectangle.svg",
            "landing_url": DEMO + "/landing.html?from=rectangle"}),
        ("demo-leaderboard", "Demo: leaderboard", {
            "type": "HTML", "w": 728, "h": 90, "html": BANNER_HTML,
            "landing_url": DEMO + "/landing.html?from=leaderboard"}),
    ]
    for code, name, creative_fields in chains:
        line_item = api.ensure(
            "line-items", {"order_id": order["id"], "name": name},
            {"type": "STANDARD", "cost_type": "CPM", "rate": 2.5,
             "targeting": {"ad_units": {"include": [units[code]["id"]]}}},
            order_id=order["id"])
        api.status("line-items", line_item, "ACTIVE")
        creative = api.ensure("creatives", {"advertiser_id": advertiser["id"], "name": name},
                              creative_fields, advertiser_id=advertiser["id"])
        api.status("creatives", creative, "APPROVED", key="approval")
        lica = api.ensure("licas", {"line_item_id": line_item["id"], "creative_id": creative["id"]},
                          {}, line_item_id=line_item["id"])
        api.status("licas", lica, "ACTIVE")
    return units


def write_page(units):
    """sdk/demo into $ADSERVE_VAR/demo, index.html with the ids filled in."""
    tmp = OUT + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(SOURCE, tmp)
    index = os.path.join(tmp, "index.html")
    with open(index, encoding="utf-8") as f:
        page = f.read()
    page = page.replace("{{SDK_URL}}", PUBLIC + "/sdk/v0/adserve.js")
    for code, unit in units.items():
        page = page.replace("{{%s}}" % code, unit["id"])
    with open(index, "w", encoding="utf-8") as f:
        f.write(page)
    for root, dirs, files in os.walk(tmp):     # nginx's workers run as another user
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    shutil.rmtree(OUT, ignore_errors=True)
    os.rename(tmp, OUT)


def wait_served(api, units, seconds=5):
    """Until the snapshot holds the demo, so the page shows ads at once. The
    explainer asks without counting a request."""
    tag = units["demo-rectangle"]["id"]
    end = time.time() + seconds
    while True:
        try:
            answer = api("POST", "/api/explain/" + tag, {"version": "0.1.0"})
            if any(li.get("decision") == "won" for li in answer.get("line_items", [])):
                return
        except ApiError:
            pass                          # 404 until the ad unit is in the snapshot
        if time.time() > end:
            say("warning: the rectangle is not served yet; see the logs in $ADSERVE_VAR/log")
            return
        time.sleep(0.1)


def main():
    try:
        api = Api()
        units = seed(api)
        write_page(units)
        wait_served(api, units)
    except ApiError as e:
        print("error: demo: %s" % e, file=sys.stderr)
        return 1
    print(DEMO + "/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
