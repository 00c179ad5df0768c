# scripts/simulate, short: a one-hour simulated day in about 20 s (20,000
# ad requests over both workers, the test clock 180x), so that the script
# is known to run end to end: it seeds, drives, prints the delivery table,
# finds no frequency cap violation in the log of every ad served, and
# writes the plot and its data. Pages have 4 ad slots asked for at once
# (SIM_SLOTS=4, one ad unit twice): the concurrent requests of one user
# that exact caps are for, so "no violation" is checked where it could
# fail. The +-5% of EVEN goals is the full run's target (make simulate,
# README), not asserted at this scale.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;
use File::Temp qw(tempdir);

my $root = "$FindBin::Bin/..";
my $out = tempdir('adserve-simulate-out-XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{ADSERVE_TEST_KEEP});

local %ENV = (%ENV, SIM_SECONDS => 20, SIM_DAY => 3600, SIM_REQUESTS => 20000, SIM_USERS => 3000,
              SIM_SLOTS => 4, SIM_OUT => $out);
my $t0 = time;
my $output = qx{"$root/scripts/simulate" 2>&1};
my $status = $? >> 8;
my $took = time - $t0;

ok($status == 0 || $status == 1, 'the simulation ran to its end (0: targets held, 1: missed)')
    or diag "exit $status:\n$output";
cmp_ok($took, '<', 90, "... in $took s");
like($output, qr/sim 00:57 +[\d,]+ requests/, 'progress was printed as the day went');
like($output, qr/^Simulated day \S+: 20,000 ad requests \(20,000 ads, 0 no-bids, 0 other\)/m,
     'every ad request was answered with an ad (the HOUSE line item fills)');

# the table: a row per line item, EVEN ones with a verdict
for my $li (qw(sponsor-home brand-all brand-capped sports-even)) {
    like($output, qr/^\Q$li\E +\S+ +\d+ EVEN .* (ok \(within|MISS \()/m, "$li: an EVEN row with a verdict");
}
for my $li (qw(article-asap perf-asap)) {
    like($output, qr/^\Q$li\E +\S+ +\d+ ASAP .* goal (reached by \d\d:\d\d|not reached)/m, "$li: an ASAP row");
}
like($output, qr/^house +HOUSE .* not paced$/m, 'the HOUSE line item, not paced');
my ($delivered) = $output =~ /^brand-all +\S+ +\d+ EVEN +\S+ +(\d+) +([\d,]+)/m ? ($2) : ();
ok(defined $delivered && $delivered =~ tr/,//dr > 0, 'delivered impressions read from adserve:delivery');
unlike($output, qr/impressions counted in Redis differ/, 'every impression fired was counted once');

like($output, qr/^Frequency cap violations: 0 /m, 'no frequency cap violation in the log of every ad served');
like($output, qr/sponsor-home +max  3 per  3600 s: +[1-9][\d,]* users reached the cap, 0 ads over it/,
     '... with caps that were reached (they were tested, not idle)');

Adserve::Test->plot_ok("$out/delivery.png", $output);
like($output, qr/^(PASS|FAIL): /m, 'a verdict line');

done_testing;
