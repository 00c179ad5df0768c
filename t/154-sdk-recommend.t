# The recommendation widget on the demo publisher's page, in Debian's
# chromium driven by playwright-core (t/js/sdk-recommend.mjs): the "Related
# articles" of the page's article, topn items in rank order drawn by the
# page's template; a title with markup rendering inert, with the template
# and with the SDK's own rendering; the impression after a second in view,
# counted exactly once whatever the unit's ad_log_tracking_mode; a click on
# an item through its click URL, landing on the item's page; and a 204
# collapsing the slot.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

my $t = Adserve::Test->new;

exit $t->browser('sdk-recommend.mjs', DEMO_URL => $t->seed_demo);
