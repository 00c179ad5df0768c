# A passback rendered by the web SDK in Chromium (t/js/sdk-passback.mjs):
# the tag in a sandboxed frame, its script contained, no event of ours.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

my $t = Adserve::Test->new;

exit $t->browser('sdk-passback.mjs', DEMO_URL => $t->seed_demo);
