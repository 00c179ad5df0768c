# A native bid from outside demand on the demo publisher's page, in
# Chromium (t/js/sdk-native-bid.mjs): the reference bidder
# (scripts/rtb-bidder) answers the in-feed card's native request, the
# page's own template draws the bid's assets, its link lands on the
# bidder's page, and the SDK fires our impression and the bidder's
# trackers when the card has been seen, and our click URL and the
# bidder's click tracker when it is clicked.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

my $t = Adserve::Test->new;
my ($port) = Adserve::Test::free_ports(1);
my $pid = fork // die "fork: $!";
if (!$pid) {
    exec "$FindBin::Bin/../scripts/rtb-bidder", '--port', $port, '--quiet', '--price', 4;
    die "exec: $!";
}
END { kill 'TERM', $pid if $pid }

exit $t->browser('sdk-native-bid.mjs', DEMO_URL => $t->seed_demo, BIDDER => "http://127.0.0.1:$port");
