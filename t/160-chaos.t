# scripts/chaos (README "Faults under load"), short: Redis and the sidecar
# killed with kill -9 while serving, impression events and API writes run.
# Whatever is killed: no serving request fails, no acknowledged API write is
# lost, and every impression acknowledged with 204 is counted or reported as
# dropped.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

my $out = qx{CHAOS_SECONDS=5 "$FindBin::Bin/../scripts/chaos" redis sidecar 2>&1};
is($?, 0, 'scripts/chaos redis sidecar: exit 0') or diag $out;
note $out;

my %row;
for (split /\n/, $out) {
    my @f = split ' ';
    $row{"$f[0] $f[1]"} = \@f if @f >= 8 && $f[2] =~ /^\d+$/;
}
for my $fault (qw(redis sidecar)) {
    my $s = $row{"$fault serving"};
    ok($s && @$s == 17, "$fault: a serving row with every column") or next;
    my ($answered, $connect, $read, $write, $timeout, $non2xx, $counted, $uncounted,
        $events, $ev_uncounted, $drops, $acked, $failed, $lost, $gap) = @$s[2 .. 16];
    ok($answered > 1000, "$fault: serving went on ($answered answered)");
    is($connect + $read + $write + $timeout + $non2xx, 0, '... not one failed: serving needs neither Redis nor the sidecar');
    # in flight when wrk stopped: answered by nginx, not read by wrk
    ok($uncounted <= 0 && $uncounted > -200, "... every request counted ($uncounted)");
    ok($events > 1000, "... impressions acknowledged ($events)");
    ok($ev_uncounted - $drops <= 0 && $ev_uncounted - $drops > -50,
       "... each counted, or reported dropped ($ev_uncounted not counted, $drops reported)");
    ok($acked > 20, "... API writes acknowledged ($acked; $failed failed during the outage)");
    ok($failed > 0, '... and some refused while it was down: the fault happened');
    is($lost, 0, '... no acknowledged write lost');
}
like($out, qr/^redis: API writes failed by status:\s+503:\d+$/m, 'writes failed with 503 while Redis was gone');
like($out, qr/^sidecar: API writes failed by status:\s+502:\d+$/m, '... and 502 while the sidecar was');

done_testing;
