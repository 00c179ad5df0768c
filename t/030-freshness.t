# A change written to Redis serves within 1 s, with no reload.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use Adserve::Test;

my $t = Adserve::Test->new;
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded');

# after a write: wait 1 s, then every worker must be on the new revision and
# a run of requests on fresh connections (spread over the workers) must all
# see the change
sub within_1s {
    my ($name, $rev, $check) = @_;
    sleep 1.0;
    ok($t->workers_at($rev), "$name: every worker is on revision $rev after 1 s");
    my @bad = grep { !$check->($t->ad($c->{unit})) } 1 .. 20;
    is(scalar @bad, 0, "$name: 20 of 20 requests see it");
}

my $new = Adserve::Test::uuid();
my $rev = $t->chain(unit => { id => $new })->{rev};
sleep 1.0;
ok($t->workers_at($rev), 'a new ad unit: every worker has it after 1 s');
is(scalar(grep { $t->ad($new)->{status} == 200 } 1 .. 20), 20, 'a new ad unit serves within 1 s');

$c->{records}{creatives}{image_url} = 'https://cdn.example/changed.png';
$rev = $t->put(creatives => $c->{records}{creatives});
within_1s('a changed creative', $rev,
          sub { $_[0]{json}{ad}{display}{banner}{img} eq 'https://cdn.example/changed.png' });

$c->{records}{licas}{status} = 'PAUSED';
$rev = $t->put(licas => $c->{records}{licas});
within_1s('a paused LICA', $rev, sub { $_[0]{status} == 204 });

$c->{records}{licas}{status} = 'ACTIVE';
$rev = $t->put(licas => $c->{records}{licas});
within_1s('a resumed LICA', $rev, sub { $_[0]{status} == 200 });

$c->{records}{ad_units}{status} = 'INACTIVE';
$rev = $t->put(ad_units => $c->{records}{ad_units});
within_1s('a deactivated ad unit', $rev, sub { $_[0]{status} == 404 });

$rev = $t->del(ad_units => $new);
sleep 1.0;
ok($t->workers_at($rev), 'a deleted ad unit: every worker is on the revision');
is(scalar(grep { $t->ad($new)->{status} == 404 } 1 .. 20), 20, 'a deleted ad unit answers 404 within 1 s');

# The node's builder follows Redis (the other workers adopt what it
# publishes): its counters tell how a change came.
sub builder { $t->builder // { full_loads => -1, changes_applied => -1 } }

# the change log: after the first full load, a change is fetched alone
my $before = builder();
my $c2 = $t->chain;
sleep 1.0;
my $after = builder();
ok($t->workers_at($c2->{rev}), 'a logged change reaches every worker');
is($after->{full_loads}, $before->{full_loads},
   '... without a full load (only the changed records were fetched)');
cmp_ok($after->{changes_applied}, '>=', $before->{changes_applied} + 5,
       '... the five records of the chain, from the change log');
is($t->ad($c2->{unit})->{status}, 200, '... and serves');

# a writer outside the contract (no log entry): the revision still tells
$c2->{records}{creatives}{image_url} = 'https://cdn.example/unlogged.png';
$t->transaction(['HSET', 'adserve:creatives', $c2->{creative}, JSON::PP->new->encode($c2->{records}{creatives})]);
sleep 1.0;
is($t->ad($c2->{unit})->{json}{ad}{display}{banner}{img}, 'https://cdn.example/unlogged.png',
   'a change without a log entry is found by a full load');
my $full = builder();
cmp_ok($full->{full_loads}, '>', $after->{full_loads}, '... a full load, for the node');

# the log trimmed up to the builder's position: nothing after it was
# lost (Redis says up to which id it trimmed), so the change comes alone
$t->redis('XTRIM', 'adserve:changes', 'MAXLEN', '0');
$c2->{records}{creatives}{image_url} = 'https://cdn.example/trimmed.png';
my $rev2 = $t->put(creatives => $c2->{records}{creatives});
ok($t->wait_until(5, sub { $t->workers_at($rev2) }), 'after the log was trimmed, a change still arrives');
is($t->ad($c2->{unit})->{json}{ad}{display}{banner}{img}, 'https://cdn.example/trimmed.png', '... the right one');
my $trimmed = builder();
is($trimmed->{full_loads}, $full->{full_loads},
   '... alone: the log lost nothing after the position (max-deleted-entry-id)');

# trimmed past the position: the log lost a change the node had not read
# (here the creative's), so only a full load can see it
$c2->{records}{creatives}{image_url} = 'https://cdn.example/lost.png';
my $rev3 = $t->transaction(
    ['HSET', 'adserve:creatives', $c2->{creative}, JSON::PP->new->encode($c2->{records}{creatives})],
    ['XADD', 'adserve:changes', '*', kind => 'creatives', id => $c2->{creative}],
    ['XTRIM', 'adserve:changes', 'MAXLEN', '0'],
    ['XADD', 'adserve:changes', '*', kind => 'ad_units', id => $c2->{unit}]);
ok($t->wait_until(5, sub {
       ($t->ad($c2->{unit})->{json}{ad}{display}{banner}{img} // '') eq 'https://cdn.example/lost.png' }),
   'a change trimmed from the log before the node read it still arrives');
cmp_ok(builder()->{full_loads}, '>', $trimmed->{full_loads},
       '... by a full load, since the log lost an entry after the position');

# a full load of many chunks (HSCAN ... COUNT 1000), each parsed and
# stored by the thread pool: 1,500 units written straight to Redis, with
# no log entries, so only a full load finds them
my $base = builder();
my ($units, @cmds) = $t->unlogged_chains(1500);
my $mark = length $t->log_text('nginx-error.log');
my $rev4 = $t->transaction(@cmds);
ok($t->wait_until(30, sub { $t->workers_at($rev4) }), '1,500 units written without log entries load');
my $many = builder();
cmp_ok($many->{full_loads}, '>', $base->{full_loads}, '... by a full load');
is($many->{active_ad_units} - $base->{active_ad_units}, 1500, '... every unit of them active');
is($many->{candidates} - $base->{candidates}, 1500, '... each with its line item');
is($t->own_creative_misses($units, 60), 0, '... 60 of them, drawn at random, serve their own creative');
like(substr($t->log_text('nginx-error.log'), $mark),
     qr/full load's longest chunk copy \(out of hiredis's reply, on the event loop\) took [0-9.]+ ms, [0-9.]+ ms of it on a core/,
     "the log gives the full load's longest chunk copy on the event loop");

# how long it really takes, for the record (no assertion on it)
$c->{records}{ad_units}{status} = 'ACTIVE';
my $t0 = time;
$t->put(ad_units => $c->{records}{ad_units});
$t->wait_until(2, sub { $t->ad($c->{unit})->{status} == 200 });
diag(sprintf 'one change seen by the first worker after %.0f ms', 1000 * (time - $t0));

done_testing;
