# A node loaded from records written outside the change log (a bulk import:
# the log is empty) follows the writes that come next through the log, one
# record at a time, not with a full load: Redis 7 says the log lost nothing
# after the node's position (XINFO STREAM's max-deleted-entry-id).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new(workers => 2, components => [qw(redis nginx)]);
my $json = JSON::PP->new->canonical;

# the bulk import: HSETs and the revision, no log entries
my %id = map { $_ => Adserve::Test::uuid() } qw(unit order li cr lica);
my $rev = $t->transaction(
    [HSET => 'adserve:ad_units', $id{unit},
     $json->encode({ id => $id{unit}, status => 'ACTIVE', display => { w => 300, h => 250 } })],
    [HSET => 'adserve:orders', $id{order}, $json->encode({ id => $id{order}, status => 'APPROVED' })],
    [HSET => 'adserve:line_items', $id{li},
     $json->encode({ id => $id{li}, order_id => $id{order}, status => 'ACTIVE', type => 'STANDARD',
                     cost_type => 'CPM', rate => 1, priority => 8,
                     targeting => { ad_units => { include => [ $id{unit} ] } } })],
    [HSET => 'adserve:creatives', $id{cr},
     $json->encode({ id => $id{cr}, approval => 'APPROVED', type => 'IMAGE', w => 300, h => 250,
                     image_url => 'https://cdn.example/bulk.png',
                     landing_url => 'https://advertiser.example/' })],
    [HSET => 'adserve:licas', $id{lica},
     $json->encode({ id => $id{lica}, line_item_id => $id{li}, creative_id => $id{cr},
                     status => 'ACTIVE', weight => 1 })]);
is($t->redis('XLEN', 'adserve:changes'), 0, '(the change log is empty)');
ok($t->wait_until(10, sub { $t->workers_at($rev) }), 'the bulk import loads');
is($t->ad($id{unit})->{status}, 200, '... and serves');
my $b0 = $t->builder;

# writes through the contract: each with its log entry
my $c = $t->chain;
ok($t->wait_until(10, sub { $t->workers_at($c->{rev}) }), 'a write through the log serves');
is($t->ad($c->{unit})->{status}, 200, '... its ad unit has its ad');
is($t->ad($id{unit})->{status}, 200, '... the bulk import serves on');
my $b1 = $t->builder;
is($b1->{pid}, $b0->{pid}, '(the same builder)');
is($b1->{full_loads}, $b0->{full_loads}, 'no full load: the log lost nothing after the node\'s position');
cmp_ok($b1->{changes_applied}, '>=', 5, "the five records came from the log ($b1->{changes_applied})");

$rev = $t->put(line_items => { %{ $c->{records}{line_items} }, status => 'PAUSED' });
ok($t->wait_until(10, sub { $t->workers_at($rev) }), 'and so does the next write');
is($t->ad($c->{unit})->{status}, 204, '... PAUSED: no ad');
is($t->builder->{full_loads}, $b0->{full_loads}, '... still without a full load');

done_testing;
