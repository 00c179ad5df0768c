# Native and video ads on the demo publisher's page, in Debian's chromium
# driven by playwright-core (t/js/sdk-formats.mjs): the in-feed native card
# drawn by the page's own template (asset mode), the sidebar card drawn by
# the ad unit's style (html mode, sandboxed), a creative whose texts carry
# markup rendering inert in both, and the in-article video played from the
# WebM shipped with the demo, its tracking events fired in order, then
# skipped on a second showing.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

my $t = Adserve::Test->new;

exit $t->browser('sdk-formats.mjs', DEMO_URL => $t->seed_demo);
