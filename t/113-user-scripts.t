# The scripts that requests run on the users' connection (a capped line
# item's reservation, a view history's cut, an external creative's record)
# as Redis means scripts to be used: loaded once per connection and called
# by their SHA-1 (EVALSHA), never sent whole (EVAL) with every call; and a
# Redis that lost them (SCRIPT FLUSH) costs one reservation at most: the
# worker that meets NOSCRIPT loads them again, and exact caps hold on.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $uuid = \&Adserve::Test::uuid;

my ($unit, $order) = ($uuid->(), $uuid->());
$t->put(ad_units => { id => $unit, status => 'ACTIVE', display => { w => 300, h => 250 } },
        orders => { id => $order, status => 'APPROVED' });
my (%li, $rev);
for my $name (qw(house capped)) {
    my ($id, $cr) = ($uuid->(), $uuid->());
    $li{$name} = $cr;
    $rev = $t->put(line_items => { id => $id, order_id => $order, status => 'ACTIVE', priority => 8,
                                   cost_type => 'CPM', rate => 2,
                                   targeting => { ad_units => { include => [ $unit ] } },
                                   $name eq 'house' ? (type => 'HOUSE')
                                   : (type => 'SPONSORSHIP',
                                      frequency_caps => [ { max => 2, seconds => 3600 } ]) },
                   creatives => { id => $cr, approval => 'APPROVED', type => 'IMAGE', w => 300, h => 250,
                                  image_url => "https://cdn.example/$name.png",
                                  landing_url => 'https://adv.example/' },
                   licas => { id => $uuid->(), line_item_id => $id, creative_id => $cr, status => 'ACTIVE' });
}
ok($t->wait_until(5, sub { $t->workers_at($rev) }), 'both workers loaded the line items');

my @conns = @{ $t->worker_connections };
is(scalar @conns, 2, 'two connections, one on each worker');
my $turn = 0;
# 'capped', 'house', or what else answered, for USER on the next worker
sub served {
    my ($user) = @_;
    my $res = $t->ad($unit, { version => '0.1.0', device => { ua => 'Mozilla/5.0' }, user => { id => $user } },
                     via => $conns[ $turn++ % 2 ]);
    return "status $res->{status}" unless $res->{status} == 200;
    my ($name) = grep { $li{$_} eq $res->{json}{ad}{id} } keys %li;
    return $name // $res->{json}{ad}{id};
}
sub calls {
    my ($cmd) = @_;
    return $t->redis('INFO', 'commandstats') =~ /^cmdstat_$cmd:calls=(\d+)/m ? $1 : 0;
}

# ---- EVALSHA, not EVAL --------------------------------------------------
my $evals = calls('eval');
my $got;
my @cmd = $t->monitored(qr/"evalsha" "[0-9a-f]{40}" "1" "adserve:fc:/i, sub { $got = served('ann') });
is($got, 'capped', "ann's first ad: the capped line item, reserved");
ok(@cmd, 'the reservation went as EVALSHA') or BAIL_OUT('no reservation seen');
my $sha = $cmd[1];
is($t->redis('SCRIPT', 'EXISTS', $sha), 1, '... of a script Redis holds');
is($cmd[3], 'adserve:fc:ann', "... with the user's key declared");
my @served = map { served('ann') } 1 .. 3;
is_deeply(\@served, [qw(capped house house)], 'the cap of 2 holds, whichever worker answers');
is(calls('eval'), $evals, 'no EVAL on the way: the script was not sent again');

# ---- a Redis that lost its scripts ----------------------------------------
is($t->redis('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH: Redis forgets them');
is($t->redis('SCRIPT', 'EXISTS', $sha), 0, '... gone');
# 8 new users at once over both workers: their reservations are in flight
# together, so a worker meets NOSCRIPT for several of them before its load
# is answered (those capped line items do not serve: the safe outcome); it
# loads the scripts once and says so once
my @res = $t->ads_concurrent($unit, [ map { { version => '0.1.0', device => { ua => 'Mozilla/5.0' },
                                             user => { id => "bea-$_" } } } 1 .. 8 ]);
is(scalar(grep { $_->{status} == 200 } @res), 8, '8 requests at once after it: every one answered');
my $lost = grep { $_->{status} == 200 && $_->{json}{ad}{id} eq $li{house} } @res;
note("$lost of the 8 served house demand: their reservations met NOSCRIPT");
is($t->redis('SCRIPT', 'EXISTS', $sha), 1, 'the script is back');
my @said = $t->log_text('nginx-error.log') =~ /caps: the server lost its scripts \(NOSCRIPT\): loading them again/g;
ok(@said >= 1 && @said <= 2, '... and the workers said why, once a worker at most (lines: ' . @said . ')');
my @after = map { served("dee-$_") } 1 .. 6;
is_deeply(\@after, [ ('capped') x 6 ], '6 new users after: every reservation taken again');
@served = map { served('cid') } 1 .. 4;
is_deeply(\@served, [qw(capped capped house house)], 'exact caps hold after it');

done_testing();
