# The console's editors in Debian's chromium (t/js/console-editors.mjs),
# through the real stack: an ad unit's placement editors and its admin-only
# ext editor, a line item's targeting builder, 422s at the fields their
# paths name, batch actions on line items and orders with each row's
# result, and moving and archiving in the ad unit tree; axe-core on every
# page, at 1280 and 390 px.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

system("$FindBin::Bin/../scripts/build-console") == 0 or die 'scripts/build-console failed';
my $t = Adserve::Test->new;

exit $t->browser('console-editors.mjs');
