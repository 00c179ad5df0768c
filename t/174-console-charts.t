# The console's charts in Debian's chromium (t/js/console-charts.mjs),
# through the real stack: a line item's delivery against its goal with the
# even pacing line (hour by hour and day by day), the dashboard's traffic,
# pacing and ad sources, and an ad source's page, from counters written
# into Redis as the module writes them; each chart's table checked against
# the API and the pacing line at known points; an advertiser sees no ad
# source. axe-core on every page, at 1280 and 390 px.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

system("$FindBin::Bin/../scripts/build-console") == 0 or die 'scripts/build-console failed';
my $t = Adserve::Test->new;

exit $t->browser('console-charts.mjs');
