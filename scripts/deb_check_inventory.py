"""scripts/deb-check's inventory, made through the management API as the
first admin: an ACTIVE ad unit, an advertiser, an APPROVED order, an ACTIVE
line item targeting the unit, an APPROVED image creative and their ACTIVE
LICA. Each record is found by its name or code first (demo.py's helpers),
so a second run changes nothing. Prints the ad unit's id.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402  (needs the path above)
from demo import Api, ApiError  # noqa: E402

# demo.py's progress lines, in deb-check's words
demo.say = lambda msg: print("    " + msg, file=sys.stderr, flush=True)

PUBLIC = os.environ["ADSERVE_PUBLIC_URL"].rstrip("/")


def seed(api):
    unit = api.ensure("ad-units", {"code": "deb-check"},
                      {"name": "deb-check: rectangle", "status": "ACTIVE",
                       "display": {"w": 300, "h": 250}}, q="deb-check")
    advertiser = api.ensure("advertisers", {"name": "deb-check advertiser"},
                            {"domain": "advertiser.example"}, q="deb-check")
    order = api.ensure("orders", {"advertiser_id": advertiser["id"], "name": "deb-check order"},
                       {}, advertiser_id=advertiser["id"])
    api.status("orders", order, "APPROVED")
    line_item = api.ensure(
        "line-items", {"order_id": order["id"], "name": "deb-check line item"},
        {"type": "STANDARD", "cost_type": "CPM", "rate": 1.0,
         "targeting": {"ad_units": {"include": [unit["id"]]}}},
        order_id=order["id"])
    api.status("line-items", line_item, "ACTIVE")
    creative = api.ensure(
        "creatives", {"advertiser_id": advertiser["id"], "name": "deb-check rectangle"},
        {"type": "IMAGE", "w": 300, "h": 250,
         "image_url": PUBLIC + "/deb-check/rectangle.png",
         "landing_url": "https://advertiser.example/"},
        advertiser_id=advertiser["id"])
    api.status("creatives", creative, "APPROVED", key="approval")
    lica = api.ensure("licas", {"line_item_id": line_item["id"], "creative_id": creative["id"]},
                      {}, line_item_id=line_item["id"])
    api.status("licas", lica, "ACTIVE")
    return unit["id"]


def main():
    try:
        print(seed(Api()))
    except ApiError as e:
        print("error: deb-check: %s" % e, file=sys.stderr)
        if "/api/auth/login: 401" in str(e):
            # the secrets were purged and made anew, but Redis kept its admin
            print("    the admin in Redis has another password than /etc/adserve/secrets/"
                  "sidecar.env: reset it (README \"Debian packages\")", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
