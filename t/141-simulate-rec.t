# scripts/simulate-rec, short: 600 readers, 600 items in 15 topics, two
# simulated days in about 20 s, so that the script is known to run end to
# end: it seeds the catalog and the two recommendation ad units through the
# management API, drives the audience (day 1 on popular, day 2 split half
# popular, half coview), runs the jobs, prints the table of the server's
# counts (equal to the driver's, and to /api/metrics), and writes the plot.
# The co-view unit's CTR must be above the popular one's on the split day:
# the audience has real co-view structure (README "Simulation").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;
use File::Temp qw(tempdir);

my $root = "$FindBin::Bin/..";
my $out = tempdir('adserve-simulate-rec-out-XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{ADSERVE_TEST_KEEP});

local %ENV = (%ENV, SIM_USERS => 600, SIM_ITEMS => 600, SIM_DAYS => 2, SIM_OUT => $out);
delete $ENV{SIM_DOCS};
my $t0 = time;
my $output = qx{"$root/scripts/simulate-rec" 2>&1};
my $status = $? >> 8;
my $took = time - $t0;

is($status, 0, 'the simulation ran to its end, the co-view unit at least x1.5 the popular one')
    or diag "exit $status:\n$output";
cmp_ok($took, '<', 90, "... in $took s");
like($output, qr/seeding 600 catalog items in 15 topics and 2 recommendation ad units .* through the management API/,
     'the catalog and the ad units were seeded through the API');
like($output, qr/^    day 1 12:00 +[\d,]+ HTTP requests .* CTR popular +[\d.]+% of/m, 'progress was printed as the days went');
like($output, qr/^    day 2 12:00 .* CTR popular +[\d.]+% of +[\d,]+ +coview +[\d.]+% of/m, '... both units on day 2');
like($output, qr/the jobs ran (\d+) times/, 'the recommendation jobs ran');

# the table: the server's counts per day and unit
like($output, qr/^1 +popular +[\d,]+ +[\d,]+ +[\d,]+ +[\d.]+%/m, 'day 1: a popular row');
unlike($output, qr/^1 +coview /m, '... and no coview row (every reader on popular)');
like($output, qr/^2 +popular +[\d,]+ +[\d,]+ +[\d,]+ +[\d.]+%/m, 'day 2: a popular row');
like($output, qr/^2 +coview +[\d,]+ +[\d,]+ +[\d,]+ +[\d.]+% +[\d.]+%/m, '... and a coview row, with its algorithm items\' CTR');
like($output, qr/^The server's counts equal the driver's/m, 'the server counted every request, answer and click the driver made');
unlike($output, qr/COUNTS DIFFER/, '... no difference');

my ($pop, $pa, $cv, $ca) = $output =~ m{^.*Day 2: popular ([\d.]+)% \(([\d,]+) / [\d,]+\), coview ([\d.]+)% \(([\d,]+) / [\d,]+\)}m;
ok(defined $cv, 'the split day\'s CTRs were printed') or diag $output;
cmp_ok($pa =~ tr/,//dr, '>', 20, "popular: $pa clicks on day 2 (a CTR of $pop%)");
cmp_ok($ca =~ tr/,//dr, '>', 20, "coview: $ca clicks on day 2 (a CTR of $cv%)");
cmp_ok($cv, '>', $pop, "the co-view unit's CTR ($cv%) is above the popular unit's ($pop%)");

Adserve::Test->plot_ok("$out/ctr.png", $output);
ok(-s "$out/summary.txt", 'the table was saved');
like($output, qr/^PASS: /m, 'a verdict line');

done_testing;
