# One snapshot per node (adserve_snapshot_zone): one worker builds it, the
# others serve the very same one; a reload's new workers serve it at once,
# even with Redis down; a builder killed is replaced, and changes flow on.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new(workers => 3);
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded on the 3 workers');

sub roles {
    my ($all) = @_;
    my %n;
    $n{ $_->{zone}{role} }++ for values %$all;
    return \%n;
}

# ---- one builder, the same snapshot everywhere -------------------------------------
my $all = $t->worker_status;
is_deeply(roles($all), { builder => 1, follower => 2 }, 'one builder, two followers');
my ($builder) = grep { $all->{$_}{zone}{role} eq 'builder' } keys %$all;
my @followers = grep { $_ != $builder } keys %$all;
is(scalar(grep { $all->{$_}{built} == 0 && $all->{$_}{full_loads} == 0 } @followers), 2,
   'the followers neither load nor build: they adopt');
cmp_ok($all->{$builder}{built}, '>=', 1, 'the builder builds');
my %gens = map { $_->{zone}{gen} => 1 } values %$all;
is(scalar(keys %gens), 1, 'every worker on the same publication');
my $kib = $all->{$builder}{snapshot_kib};
cmp_ok($all->{$builder}{zone}{used_kib}, '<', 3 * $kib + 64,
       "the zone holds the node's snapshot, not one per worker ($all->{$builder}{zone}{used_kib} KiB, "
       . "a snapshot $kib KiB)");

# a change: built once, adopted by all
my $c2 = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c2->{rev}) }), 'a change reaches every worker');
is($t->ad($c2->{unit})->{status}, 200, '... and serves');
my $after = $t->worker_status;
is(scalar(grep { $after->{$_}{built} == 0 } @followers), 2, '... still built by the builder alone');

# ---- a line item's change borrows what it does not reach from the snapshot before ------
# (adserve_snapshot_t's base): the unit it feeds is rendered again, every other unit is
# the one before, and a chain of them ends in a whole render. More line items than
# eight times those written: a larger batch joins everything
my $far = $t->chain;
$t->chain for 1 .. 12;
my $near = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($near->{rev}) }), 'fourteen more units on every worker');
my $mark = length $t->log_text('nginx-error.log');
my ($wrong, $stale) = (0, 0);
for my $i (1 .. 12) {
    my $paused = $i % 2;
    my $rev = $t->put(line_items => { %{ $near->{records}{line_items} },
                                      status => $paused ? 'PAUSED' : 'ACTIVE' });
    $stale++ unless $t->wait_until(5, sub { $t->workers_at($rev) });
    $wrong++ if $t->ad($near->{unit})->{status} != ($paused ? 204 : 200);
    $wrong++ if $t->ad($far->{unit})->{status} != 200 || $t->ad($c2->{unit})->{status} != 200;
}
is($stale, 0, '12 writes of a line item\'s status, each on every worker');
is($wrong, 0, '... each served as written, and the units it does not feed as before');
my @builds = substr($t->log_text('nginx-error.log'), $mark)
    =~ /snapshot rev \d+ at change .*?(\d+) borrowed\)/g;
cmp_ok(scalar(grep { $_ > 0 } @builds), '>=', 8,
       "most of those builds borrowed the units the write does not reach (@builds)");
ok(scalar(grep { $builds[$_] == 0 && $_ > 0 && $builds[$_ - 1] > 0 } 0 .. $#builds),
   '... and a chain of them ended in a whole render');
ok($t->wait_until(10, sub {
       my $s = $t->worker_status or return 0;
       my ($b) = grep { $_->{zone}{role} eq 'builder' } values %$s;
       $b && $b->{zone}{used_kib} < 3 * $b->{snapshot_kib} + 64 }),
   "the zone holds the chain served (snapshot_kib counts what it borrows), not every "
   . "snapshot built");

# ---- a reload's workers serve the node's snapshot at once, Redis down ------------------
$t->stop('redis');
my @old = $t->workers;
is($t->nginx('-s', 'reload'), 0, 'reload with Redis down');
ok($t->wait_until(10, sub { my @w = $t->workers; !grep { my $o = $_; grep { $_ == $o } @w } @old }),
   'the old workers are gone');
my $conns = $t->worker_connections;
is(scalar @$conns, 3, 'three new workers');
my @codes = map { my $v = $_; map { $t->ad($c2->{unit}, undef, via => $v)->{status} } 1 .. 5 } @$conns;
is(scalar(grep { $_ == 200 } @codes), 15,
   'every new worker serves at once, from the snapshot the node has (Redis is down)')
    or diag "@codes";
$all = $t->worker_status;
is(scalar(grep { $_->{rev} >= $c2->{rev} } values %$all), 3, '... at the revision it had');
is(scalar(grep { $_->{redis} eq 'down' } values %$all), 3, '... with Redis down for each of them');

$t->start('redis');
my $c3 = $t->chain;
ok($t->wait_until(10, sub { $t->workers_at($c3->{rev}) }),
   'Redis back: a new builder (a full load of its own) brings the next change to every worker');
is_deeply(roles($t->worker_status), { builder => 1, follower => 2 }, '... one builder again');

# ---- the builder killed: another takes over ---------------------------------------------
$all = $t->worker_status;
($builder) = grep { $all->{$_}{zone}{role} eq 'builder' } keys %$all;
kill 'KILL', $builder;
ok($t->wait_until(10, sub { my @w = $t->workers; @w == 3 && !grep { $_ == $builder } @w }),
   'the builder killed; the master starts a worker in its place');
my $c4 = $t->chain;
ok($t->wait_until(10, sub { $t->workers_at($c4->{rev}) }),
   'a change still reaches every worker: another one builds');
is($t->ad($c4->{unit})->{status}, 200, '... and serves');
like($t->log_text('nginx-error.log'), qr/this worker builds the node's snapshot \(its builder is gone\)/,
     'the takeover is logged');
$all = $t->worker_status;
is_deeply(roles($all), { builder => 1, follower => 2 }, 'one builder');
ok($t->wait_until(10, sub {
       my $s = $t->worker_status or return 0;
       my ($b) = grep { $_->{zone}{role} eq 'builder' } values %$s;
       $b && $b->{zone}{used_kib} < 3 * $b->{snapshot_kib} + 64 }),
   "the killed builder's and the old snapshots' blocks are freed");

my $log = $t->log_text('nginx-error.log');
unlike($log, qr/\[(?:alert|crit|emerg)\](?!.*exited on signal 9)/, 'no alert, crit or emerg but the kill');

done_testing;
