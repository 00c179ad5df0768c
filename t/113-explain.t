# The decision explainer, POST /api/explain/{tagid}: for a crafted set of
# line items on one ad unit, each no-serve case names its reason (flight,
# targeting, frequency cap, goal reached, pacing, floor, size, bcat), the
# winner and the ranks of the rest are right, ordinary serving is untouched
# (nothing counted), and only admins and operators may ask.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(test_clock => 1);
my $uuid = \&Adserve::Test::uuid;
my $clock = time;
sub iso { my @g = gmtime $_[0]; sprintf '%04d-%02d-%02dT%02d:%02d:%02dZ', $g[5] + 1900, $g[4] + 1, @g[3, 2, 1, 0] }

my $unit = $uuid->();
my $order = $uuid->();
$t->put(ad_units => { id => $unit, status => 'ACTIVE', display => { w => 300, h => 250 },
                      ext => { target_ecpm => 3, bcat => ['IAB7'] } },
        orders => { id => $order, status => 'APPROVED' });

my (%li, %name_of, %cr);
sub line {
    my ($name, $fields, $creative) = @_;
    my $id = $uuid->();
    $li{$name} = $id;
    $name_of{$id} = $name;
    my $cr = $cr{$name} = $uuid->();
    return $t->put(line_items => { id => $id, order_id => $order, status => 'ACTIVE', type => 'STANDARD',
                                   priority => 8, cost_type => 'CPM', rate => 2,
                                   targeting => { ad_units => { include => [ $unit ] } }, %$fields },
                   creatives => { id => $cr, approval => 'APPROVED', type => 'IMAGE', w => 300, h => 250,
                                  image_url => 'https://cdn.example/x.png', landing_url => 'https://adv.example/',
                                  %{ $creative // {} } },
                   licas => { id => $uuid->(), line_item_id => $id, creative_id => $cr, status => 'ACTIVE' });
}

line(winner => { rate => 5 });
line(outranked => { rate => 4 });
line(house => { type => 'HOUSE' });
line(flight => { type => 'SPONSORSHIP', end_at => iso($clock - 60) });
line(targeting => { type => 'SPONSORSHIP', targeting => { ad_units => { include => [ $unit ] },
                    user => { genders => ['F'] } } });
line(capped => { type => 'SPONSORSHIP', frequency_caps => [ { max => 1, seconds => 3600 } ] });
line(goal => { type => 'SPONSORSHIP', delivery => 'ASAP', goal => { type => 'IMPRESSIONS', units => 10 } });
line(pacing => { type => 'SPONSORSHIP', goal => { type => 'IMPRESSIONS', units => 1000 },
                 start_at => iso($clock - 500), end_at => iso($clock + 500) });
line(floor => { type => 'PRICE_PRIORITY', rate => 2 });
line(size => { type => 'SPONSORSHIP' }, { w => 728, h => 90 });
my $rev = line(bcat => { type => 'SPONSORSHIP' }, { categories => ['IAB7-1'] });
$t->redis('HSET', 'adserve:delivery', "$li{goal}:imp", 10, "$li{pacing}:imp", 900);
$t->redis('ZADD', 'adserve:fc:mia', $clock - 10, "$li{capped}:" . ('ab' x 12));
ok($t->wait_until(5, sub { $t->workers_at($rev) }), 'every worker has the line items');
sleep 1.5;                                          # pacing has read them

my $request = { version => '0.1.0', user => { id => 'mia', gender => 'M' } };
sub ask {
    my (%o) = @_;
    return $t->api('POST', "/api/explain/" . ($o{unit} // $unit), json => $o{body} // $request,
                   headers => { 'X-Adserve-Clock' => $clock }, %{ $o{as} // {} });
}

my $res = ask();
is($res->{status}, 200, 'an admin asks: 200') or diag $res->{content};
my $x = $res->{json};
is($x->{ad_unit_id}, $unit, 'the ad unit');
is($x->{caps}, 'known', "mia's caps were read");
my %by = map { $name_of{ $_->{line_item_id} } => $_ } @{ $x->{line_items} };
is($x->{winner}, $li{winner}, 'the winner: the best eCPM of the first group able to serve');
is($by{winner}{decision}, 'won', '... decision won');
is($by{outranked}{decision}, 'outranked', 'the same priority at a lower eCPM: outranked');
is($by{house}{decision}, 'lower_priority', 'HOUSE, able to serve: lower priority');
is_deeply([ @{ $by{flight} }{qw(decision reason)} ], ['held_back', 'flight'], 'flight over: reason flight');
is($by{targeting}{reason}, 'targeting', 'user gender M against F: reason targeting');
is($by{capped}{reason}, 'frequency_cap', "mia saw it in the last hour (max 1): reason frequency_cap");
is($by{goal}{reason}, 'goal_reached', '10 of 10 impressions: reason goal_reached');
is($by{pacing}{reason}, 'pacing', 'EVEN, 900 of 1000 at half time: reason pacing');
ok($by{pacing}{pacing} && $by{pacing}{pacing}{share} == 0, '... with its share of 0 shown');
is($by{floor}{reason}, 'floor', 'PRICE_PRIORITY at 2 under target_ecpm 3: reason floor');
is($by{winner}{ecpm}, 5, 'eCPM shown');
is($by{winner}{type}, 'STANDARD', 'type and priority shown') && is($by{winner}{priority}, 8, '...');
my %excluded = map { $name_of{ $_->{line_item_id} } => $_->{reason} } @{ $x->{excluded} };
is_deeply(\%excluded, { size => 'size', bcat => 'bcat' }, 'size and bcat: excluded when the snapshot was built');

# no user id: caps unknown, the capped line item held back for that
$x = ask(body => { version => '0.1.0' })->{json};
is($x->{caps}, 'unknown', 'no user id: caps unknown');
%by = map { $name_of{ $_->{line_item_id} } => $_ } @{ $x->{line_items} };
is($by{capped}{reason}, 'frequency_cap', '... the capped line item held back');

# serving agrees, and the explainer counted nothing
my $served = $t->ad($unit, $request, headers => { 'X-Adserve-Clock' => $clock });
is($served->{json} && $served->{json}{ad}{id}, $cr{winner}, "serving picks the explainer's winner");
ok($t->wait_until(5, sub { $t->stat_sum("u:$unit:req") >= 1 }), 'serving counts');
sleep 1.2;
is($t->stat_sum("u:$unit:req"), 1, '... its one request; the explainer none');

# who may ask
is(ask(as => { token => undef })->{status}, 401, 'no token: 401');
is(ask(as => { token => 'forged' })->{status}, 401, 'a forged token: 401');
my $adv = $t->created('/api/advertisers', { name => 'Explain' });
$t->created('/api/users', { email => 'adv@explain.example', password => 'a-good-password',
                            role => 'advertiser', advertiser_id => $adv->{id} });
$t->created('/api/users', { email => 'op@explain.example', password => 'a-good-password', role => 'operator' });
$res = ask(as => { as => ['adv@explain.example', 'a-good-password'] });
is($res->{status}, 403, 'an advertiser: 403');
like($res->{content}, qr/"detail"/, '... with a JSON detail');
is(ask(as => { as => ['op@explain.example', 'a-good-password'] })->{status}, 200, 'an operator: 200');
is(ask(unit => $uuid->())->{status}, 404, 'an unknown ad unit: 404');
is(ask(body => '{"user":')->{status}, 500, 'a malformed body: 500, as serving');
is($t->api('GET', "/api/explain/$unit")->{status}, 405, 'GET: 405');
$t->refused($t->api('POST', "/api/explain/$unit", body => '{"pad":"' . ('x' x 17000) . '"}',
                    headers => { 'content-type' => 'application/json' }),
            413, qr/^request body over 16 KiB$/, 'a body over its 16 KiB (serving\'s limit)');

done_testing;
