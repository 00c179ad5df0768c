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

# what a native ad of the demo carries: a title, a main image and the
# sponsor's name, and a description when there is room (OpenRTB Native 1.2)
NATIVE_ASSETS = [
    {"id": 1, "required": 1, "title": {"len": 90}},
    {"id": 2, "required": 1, "img": {"type": 3, "wmin": 200}},
    {"id": 3, "required": 1, "data": {"type": 1}},
    {"id": 4, "data": {"type": 2, "len": 140}},
]


def native(mode):
    return {"ext": {"native": {"enabled": 1, "render_mode": mode}},
            "native": {"plcmttype": 1, "assets": NATIVE_ASSETS}}


# the page's article, and the related articles the demo recommends: the
# catalog (item id, title, thumbnail in assets/), then each article's
# associated items, best first, as a customer's own recommender would
# upload them. Articles without a pool get the editors' picks (a preset).
ARTICLE = "mud-10k"
ARTICLES = [
    ("mud-10k", "Ten kilometres of mud, and why we keep coming back", "ridge"),
    ("gps-trackers", "From flour to GPS: how small clubs mark their courses now", "forest"),
    ("shoes-grip", "Lugs, rock plates and drop: shoes for wet trails", "river"),
    ("race-food", "Soup at the finish: what trail runners really eat", "ridge"),
    ("volunteers", "A day with the marshals who make races happen", "forest"),
    ("downhill", "Running downhill fast without wrecking your knees", "ridge"),
    ("winter", "Ice, spikes and patience: trails in winter", "river"),
    ("first-ultra", "Your first ultra: what nobody tells you about kilometre 40", "ridge"),
    ("night-running", "Head torches and owls: a beginner's night run", "forest"),
    ("hill-training", "Hill repeats for people who live somewhere flat", "river"),
    ("recovery", "Naps, pasta and patience: what recovery needs", "forest"),
    ("navigation", "Map and compass: when the waymarks disappear", "river"),
]
RELATED = {
    "mud-10k": ["gps-trackers", "shoes-grip", "race-food", "volunteers", "downhill", "winter"],
    "gps-trackers": ["volunteers", "navigation", "mud-10k", "night-running"],
    "shoes-grip": ["downhill", "winter", "mud-10k", "first-ultra"],
    "race-food": ["recovery", "first-ultra", "mud-10k", "volunteers"],
    "volunteers": ["gps-trackers", "race-food", "mud-10k"],
    "downhill": ["shoes-grip", "hill-training", "recovery", "first-ultra"],
    "winter": ["shoes-grip", "night-running", "navigation"],
    "first-ultra": ["race-food", "recovery", "night-running", "hill-training", "navigation"],
}
EDITORS_PICKS = ["first-ultra", "night-running", "mud-10k", "hill-training", "recovery"]

# the demo's inventory: code -> (name, width, height, the ad unit's other fields)
UNITS = {
    "demo-rectangle": ("Demo: sidebar rectangle (image ad)", 300, 250, {}),
    "demo-leaderboard": ("Demo: leaderboard below the article (HTML ad)", 728, 90, {}),
    "demo-empty": ("Demo: sidebar slot without demand (collapses)", 300, 250, {}),
    "demo-native-feed": ("Demo: native in-feed card (asset mode)", 600, 126, native("asset")),
    "demo-native-html": ("Demo: native sidebar card (html mode, the unit's style)", 300, 250,
                         native("html")),
    "demo-video": ("Demo: in-article video (VAST)", 640, 360, {
        "ext": {"video": {"enabled": 1}},
        "video": {"w": 640, "h": 360, "mime": ["video/webm"], "mindur": 1, "maxdur": 30,
                  "skip": 1}}),
    # no size: the page's CSS sizes the widget
    "demo-related": ("Demo: related articles below the article (recommendation)", None, None, {
        "ext": {"recommendation": {"enabled": 1}},
        "recommendation": {"topn": 4, "ad_log_tracking_mode": "on_event_tracker", "fallback": [
            {"type": "preset", "items": [{"id": i} for i in EDITORS_PICKS]}]}}),
}

# the html mode's style, checked by the API as every template is: text
# between tags, URLs in quoted attributes, each value escaped by the server
STYLE_HTML = """<a class="card" href="{{click_url}}"><img src="{{img.main}}" alt="">\
<b>{{title}}</b><span>{{data.desc}}</span><small>Sponsored by {{data.sponsored}}</small></a>"""
STYLE_CSS = """body{margin:0}.card{display:flex;flex-direction:column;gap:6px;height:250px;\
padding:10px;box-sizing:border-box;text-decoration:none;color:#222;background:#f3f7f2;\
font:14px/1.35 system-ui,sans-serif}.card img{width:100%;height:120px;object-fit:cover}\
.card b{font-size:16px}.card small{color:#666;margin-top:auto}"""

# the demo video: 3 seconds of WebM, shipped with the demo (scripts/demo-video.mjs)
VIDEO_SECONDS = 3

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
    for code, (name, w, h, more) in UNITS.items():
        size = {"display": {"w": w, "h": h}} if w else {}
        units[code] = api.ensure("ad-units", {"code": code},
                                 {"name": name, "status": "ACTIVE", **size, **more}, q=code)
    seed_style(api, units["demo-native-html"])
    seed_catalog(api)

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
        (("demo-native-feed", "demo-native-html"), "Demo: native", {
            "type": "NATIVE", "w": 240, "h": 126, "native": {
                "title": "Trail Runner X: 210 g of grip for any mountain",
                "images": [{"type": "main", "url": DEMO + "/assets/native-main.svg",
                            "w": 240, "h": 126, "mime": "image/svg+xml"},
                           {"type": "icon", "url": DEMO + "/assets/native-icon.svg",
                            "w": 48, "h": 48, "mime": "image/svg+xml"}],
                "data": [{"type": "sponsored", "value": "Trail Runner Co."},
                         {"type": "desc", "value": "Light, quick and sure-footed in the mud."},
                         {"type": "ctatext", "value": "Shop now"}]},
            "landing_url": DEMO + "/landing.html?from=native"}),
        ("demo-video", "Demo: video", {
            "type": "VIDEO", "w": 640, "h": 360, "video": {
                "duration": VIDEO_SECONDS, "skip_offset": 1, "media_files": [
                    {"url": DEMO + "/assets/demo.webm", "mime": "video/webm",
                     "w": 640, "h": 360}]},
            "landing_url": DEMO + "/landing.html?from=video"}),
    ]
    for codes, name, creative_fields in chains:
        codes = codes if isinstance(codes, tuple) else (codes,)
        line_item = api.ensure(
            "line-items", {"order_id": order["id"], "name": name},
            {"type": "STANDARD", "cost_type": "CPM", "rate": 2.5,
             "targeting": {"ad_units": {"include": [units[c]["id"] for c in codes]}}},
            order_id=order["id"])
        api.status("line-items", line_item, "ACTIVE")
        creative = api.ensure("creatives", {"advertiser_id": advertiser["id"], "name": name},
                              creative_fields, advertiser_id=advertiser["id"])
        api.status("creatives", creative, "APPROVED", key="approval")
        lica = api.ensure("licas", {"line_item_id": line_item["id"], "creative_id": creative["id"]},
                          {}, line_item_id=line_item["id"])
        api.status("licas", lica, "ACTIVE")
    return units


def seed_style(api, unit):
    """The html-mode unit's native style, made from a template as an operator
    would, and the unit's link to it."""
    template = api.ensure("native-style-templates", {"name": "Demo: card"},
                          {"html": STYLE_HTML, "css": STYLE_CSS}, q="Demo")
    style = api.ensure("native-styles", {"name": "Demo: sidebar card"},
                       {"native_style_template_id": template["id"], "html": template["html"],
                        "css": template["css"]}, q="Demo")
    link = api.find("ad-unit-native-styles", {"ad_unit_id": unit["id"]}, ad_unit_id=unit["id"])
    if link is None:
        api("POST", "/api/ad-unit-native-styles",
            {"ad_unit_id": unit["id"], "native_style_id": style["id"]})
        say("gave %s its native style" % unit["code"])
    elif link["native_style_id"] != style["id"]:
        api("PATCH", "/api/ad-unit-native-styles/" + link["id"], {"native_style_id": style["id"]})


def seed_catalog(api):
    """The articles, each landing on the demo page that shows it, and their
    related articles' pools."""
    for item_id, title, image in ARTICLES:
        api.ensure("catalog-items", {"item_id": item_id},
                   {"title": title, "url": DEMO + "/?article=" + item_id,
                    "image": DEMO + "/assets/article-%s.svg" % image}, item_id=item_id)
    for source, related in RELATED.items():
        items = [{"item_id": i, "score": len(related) - rank} for rank, i in enumerate(related)]
        api.ensure("associated-items-pools", {"source_item_id": source}, {"items": items},
                   source_item_id=source)


def write_page(units):
    """sdk/demo into $ADSERVE_VAR/demo, index.html with the ids filled in."""
    tmp = OUT + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(SOURCE, tmp)
    index = os.path.join(tmp, "index.html")
    with open(index, encoding="utf-8") as f:
        page = f.read()
    page = page.replace("{{SDK_URL}}", PUBLIC + "/sdk/v0/adserve.js")
    page = page.replace("{{ARTICLE}}", ARTICLE)
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
