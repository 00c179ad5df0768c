# A request starts on the node's latest snapshot: once the builder has
# published a change, no worker answers from an older one, whatever the
# phase of its own tick. adserve_refresh is 3 s here, so that a worker
# waiting for its tick would answer from the old snapshot for seconds.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(template => Adserve::Test::with_directive(adserve_refresh => '3s'),
                           workers => 2);
my $c = $t->chain;
ok($t->wait_until(15, sub { $t->ad($c->{unit})->{status} == 200 }), 'fixtures serve');

my $rev;
for my $round (1 .. 3) {
    for my $want (204, 200) {
        $c->{records}{licas}{status} = $want == 204 ? 'PAUSED' : 'ACTIVE';
        $rev = $t->put(licas => $c->{records}{licas});
        ok($t->wait_until(10, sub { $t->ad($c->{unit})->{status} == $want }),
           "round $round: the change serves ($want)");

        # fresh connections, spread over both workers
        my @stale = grep { $_ != $want } map { $t->ad($c->{unit})->{status} } 1 .. 20;
        is(scalar @stale, 0, "round $round: then 20 of 20 requests see it ($want), on every "
                             . "worker, before their next tick");
    }
}

# the runs reached both workers: the one that does not build took the
# last change at a request, not at its tick (the status does not adopt)
ok($t->workers_at($rev), 'every worker is on the last revision') or diag explain $t->worker_status;

done_testing;
