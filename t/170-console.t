# The management console at /console/ in Debian's chromium driven by
# playwright-core (t/js/console.mjs), through the real stack: an admin, an
# operator and an advertiser sign in and work through it; axe-core audits
# each page. The console is built first (scripts/build-console), as make
# run and make test do.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

system("$FindBin::Bin/../scripts/build-console") == 0 or die 'scripts/build-console failed';
my $t = Adserve::Test->new;

exit $t->browser('console.mjs');
