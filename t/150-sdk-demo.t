# The web SDK on the demo publisher's page, in Debian's chromium driven by
# playwright-core (t/js/sdk-demo.mjs): the page is seeded by scripts/demo
# through the API, as make run does, and served from its own origin.
#
# One location is added to the ad server: a tagid that answers 500, since
# the module itself never fails a request the SDK can send. Everything else
# is the shipped configuration.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

my $t = Adserve::Test->new(template => Adserve::Test::answering(
    'demo-fault' => [ 500, '{"detail":"injected fault"}\n' ]));

exit $t->browser('sdk-demo.mjs', DEMO_URL => $t->seed_demo);
