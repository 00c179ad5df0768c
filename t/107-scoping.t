# Advertiser scoping on every demand resource: an advertiser user reads,
# lists and changes only its own advertiser's orders, line items,
# creatives and LICAs; another advertiser's ids answer 404 (read, update,
# delete), references to them are unknown (422), lists hold only its own
# (whatever the filters say); it reads its own advertiser record and
# balance, and no inventory (ad units, placements, custom targeting),
# users or other advertisers (403 on collections, 404 on ids). Operators
# manage all demand and inventory, but not users.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;

sub status_is {
    my ($res, $status, $name) = @_;
    is($res->{status}, $status, "$name: $status") or diag $res->{content};
}

my %adv = map { $_ => $t->created('/api/advertisers', { name => $_, balance => length($_) * 100 }) } qw(Acme Globex);
my (%data, %user);
for my $name (qw(Acme Globex)) {
    my $a = $adv{$name}{id};
    my $order = $t->created('/api/orders', { advertiser_id => $a, name => "$name order" });
    my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => "$name line", type => 'STANDARD',
                                          cost_type => 'CPM', rate => 1 });
    my $cr = $t->created('/api/creatives', { advertiser_id => $a, name => "$name banner", type => 'IMAGE', w => 300, h => 250,
                                         image_url => 'https://cdn.example/x.png', landing_url => 'https://x.example/' });
    my $lica = $t->created('/api/licas', { line_item_id => $li->{id}, creative_id => $cr->{id} });
    $data{$name} = { orders => $order, 'line-items' => $li, creatives => $cr, licas => $lica };
    my $email = lc($name) . '@buyers.example';
    status_is($t->api('POST', '/api/users', json => { email => $email, password => 'a-good-password', role => 'advertiser',
                                                      advertiser_id => $a }), 201, "a $name user");
    $user{$name} = [ as => [ $email, 'a-good-password' ] ];
}
status_is($t->api('POST', '/api/users', json => { email => 'ops@example.com', password => 'a-good-password', role => 'operator' }),
          201, 'an operator');
my @acme = @{ $user{Acme} };
my @ops = (as => [ 'ops@example.com', 'a-good-password' ]);
my %harmless = (orders => { notes => 'n' }, 'line-items' => { name => 'renamed' }, creatives => { name => 'renamed' },
                licas => { weight => 2 });

# ---- each resource: read, list, write --------------------------------------------------------
for my $r (qw(orders line-items creatives licas)) {
    my ($own, $theirs) = map { $data{$_}{$r} } qw(Acme Globex);
    status_is($t->api('GET', "/api/$r/$own->{id}", @acme), 200, "$r: reads its own");
    status_is($t->api('GET', "/api/$r/$theirs->{id}", @acme), 404, "$r: another advertiser's id");
    my $list = $t->api('GET', "/api/$r", @acme)->{json};
    is_deeply([ map { $_->{id} } @{ $list->{items} } ], [ $own->{id} ], "$r: the list holds its own only");
    is($list->{total}, 1, "$r: ... and counts its own only");
    is($t->api('GET', "/api/$r?advertiser_id=$adv{Globex}{id}", @acme)->{json}{total}, 0,
       "$r: filtering for another advertiser finds nothing");
    is($t->api('GET', "/api/$r", @ops)->{json}{total}, 2, "$r: an operator lists both");
    status_is($t->api('PATCH', "/api/$r/$theirs->{id}", json => $harmless{$r}, @acme), 404, "$r: changing another's");
    status_is($t->api('DELETE', "/api/$r/$theirs->{id}", @acme), 404, "$r: deleting another's");
    status_is($t->api('GET', "/api/$r/$theirs->{id}"), 200, "$r: ... it is still there");
    status_is($t->api('PATCH', "/api/$r/$own->{id}", json => $harmless{$r}, @acme), 200, "$r: changing its own");
}
is($t->api('GET', "/api/line-items?order_id=$data{Globex}{orders}{id}", @acme)->{json}{total}, 0,
   'line items of another\'s order: none, even by its index');
is($t->api('GET', "/api/licas?creative_id=$data{Globex}{creatives}{id}", @acme)->{json}{total}, 0,
   'LICAs of another\'s creative: none');

# ---- references to another advertiser's records -------------------------------------------------
my %g = %{ $data{Globex} };
my %a = %{ $data{Acme} };
for my $case (
    [ '/api/orders', { advertiser_id => $adv{Globex}{id}, name => 'x' }, qr/^advertiser_id: no such advertiser/, 'an order for another' ],
    [ '/api/line-items', { order_id => $g{orders}{id}, name => 'x', type => 'HOUSE', cost_type => 'CPM', rate => 0 },
      qr/^order_id: no such order/, 'a line item under another\'s order' ],
    [ '/api/creatives', { advertiser_id => $adv{Globex}{id}, name => 'x', type => 'IMAGE', w => 1, h => 1,
                          image_url => 'https://a.example/i.png', landing_url => 'https://a.example/' },
      qr/^advertiser_id: no such advertiser/, 'a creative for another' ],
    [ '/api/licas', { line_item_id => $g{'line-items'}{id}, creative_id => $a{creatives}{id} }, qr/^line_item_id: no such line item/,
      'a LICA on another\'s line item' ],
    [ '/api/licas', { line_item_id => $a{'line-items'}{id}, creative_id => $g{creatives}{id} }, qr/^creative_id: no such creative/,
      'a LICA of another\'s creative' ],
) {
    my $res = $t->api('POST', $case->[0], json => $case->[1], @acme);
    status_is($res, 422, $case->[3]);
    like($res->{json}{detail} // '', $case->[2], "$case->[3]: unknown to it");
}

# ---- its own new records ------------------------------------------------------------------------
my $order = $t->created('/api/orders', { advertiser_id => $adv{Acme}{id}, name => 'Own' }, @acme);
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'Own', type => 'HOUSE', cost_type => 'CPM', rate => 0 }, @acme);
my $cr = $t->created('/api/creatives', { advertiser_id => $adv{Acme}{id}, name => 'Own', type => 'HTML', w => 320, h => 50,
                                     html => '<b>hi</b>', landing_url => 'https://acme.example/' }, @acme);
is($cr->{approval}, 'PENDING', 'its new creative waits for review');
$t->created('/api/licas', { line_item_id => $li->{id}, creative_id => $cr->{id} }, @acme);
status_is($t->api('PATCH', "/api/line-items/$li->{id}", json => { status => 'ACTIVE' }, @acme), 200, 'it activates its line item');
status_is($t->api('DELETE', "/api/licas/$a{licas}{id}", @acme), 204, 'it deletes its LICA');
is($t->api('GET', '/api/line-items', @acme)->{json}{total}, 2, 'its list grows with its own');

# ---- its advertiser record ---------------------------------------------------------------------------
my $me = $t->api('GET', "/api/advertisers/$adv{Acme}{id}", @acme);
status_is($me, 200, 'it reads its advertiser');
is($me->{json}{balance}, 400, '... and its balance');
status_is($t->api('GET', "/api/advertisers/$adv{Globex}{id}", @acme), 404, 'another advertiser: 404');
status_is($t->api('GET', '/api/advertisers', @acme), 403, 'the advertiser list: 403');
status_is($t->api('PATCH', "/api/advertisers/$adv{Acme}{id}", json => { balance => 1 }, @acme), 403, 'its balance is read-only');

# ---- no inventory, no users ---------------------------------------------------------------------------
my $unit = $t->created('/api/ad-units', { code => "scope-$$", name => 'Unit' });
my $place = $t->created('/api/placements', { name => 'P' }, @ops);
my $key = $t->created('/api/custom-targeting/keys', { name => 'k' }, @ops);
my $admin = $t->api('GET', '/api/auth/me')->{json};
for my $c ([ '/api/ad-units', $unit ], [ '/api/placements', $place ], [ '/api/custom-targeting/keys', $key ]) {
    status_is($t->api('GET', $c->[0], @acme), 403, "$c->[0]: the list");
    status_is($t->api('GET', "$c->[0]/$c->[1]{id}", @acme), 404, "$c->[0]: an id");
}
status_is($t->api('GET', '/api/users', @acme), 403, 'users: the list');
status_is($t->api('GET', "/api/users/$admin->{id}", @acme), 403, 'users: an id (admin only)');

# ---- operators -----------------------------------------------------------------------------------------
status_is($t->api('GET', '/api/advertisers', @ops), 200, 'an operator lists advertisers');
status_is($t->api('PATCH', "/api/advertisers/$adv{Acme}{id}", json => { balance => 1000 }, @ops), 200, '... sets a balance');
status_is($t->api('PATCH', "/api/orders/$a{orders}{id}", json => { status => 'APPROVED' }, @ops), 200, '... approves an order');
status_is($t->api('PATCH', "/api/creatives/$cr->{id}", json => { approval => 'APPROVED' }, @ops), 200, '... and a creative');
status_is($t->api('GET', "/api/ad-units/$unit->{id}", @ops), 200, '... reads inventory');
status_is($t->api('GET', '/api/users', @ops), 403, '... but not users');

# ---- an advertiser's targeting is not looked up: no answer tells which ids exist ---------------------------
my $ord = $t->created('/api/orders', { advertiser_id => $adv{Acme}{id}, name => 'Reviewed' }, @acme);
my %li = (order_id => $ord->{id}, type => 'STANDARD', cost_type => 'CPM', rate => 2);
my $random = Adserve::Test::uuid();
for my $probe ([ 'ad_units', { ad_units => { include => [ $unit->{id} ] } }, { ad_units => { include => [ $random ] } } ],
               [ 'placements', { placements => [ $place->{id} ] }, { placements => [ $random ] } ],
               [ 'kv', { kv => { type => 'cmp', data => { lhs => [ 'k' ], op => 'eq', rhs => 'x' } } },
                       { kv => { type => 'cmp', data => { lhs => [ 'no-such-key' ], op => 'eq', rhs => 'x' } } } ]) {
    my ($what, $real, $made_up) = @$probe;
    my @answers = map { $t->api('POST', '/api/line-items', json => { %li, name => "probe $what", targeting => $_ }, @acme) }
                  $real, $made_up;
    is_deeply([ map { $_->{status} } @answers ], [ 201, 201 ],
              "targeting $what that exists and that does not: the same answer to an advertiser (201)");
}
status_is($t->api('POST', '/api/line-items', json => { %li, name => 'x', targeting => { ad_units => { include => [ $random ] } } }),
          422, '... an admin is told the ad unit does not exist');

# ---- an advertiser's line item waits for a review, as creatives do ----------------------------------------
# a unit and an approved order, creative and LICA: all the line item needs to serve but its review
my $serving = $t->created('/api/ad-units', { code => "reviewed-$$", name => 'Reviewed', status => 'ACTIVE',
                                             display => { w => 300, h => 250 } });
status_is($t->api('PATCH', "/api/orders/$ord->{id}", json => { status => 'APPROVED' }, @ops), 200, 'its order approved');
my $sponsor = $t->api('POST', '/api/line-items', json => { %li, name => 'Takeover', type => 'SPONSORSHIP', priority => 1, rate => 0,
    targeting => { ad_units => { include => [ $serving->{id} ] } } }, @acme);
status_is($sponsor, 201, 'an advertiser makes a SPONSORSHIP priority 1 line item at rate 0');
my $sid = $sponsor->{json}{id};
is($sponsor->{json}{approval}, 'PENDING', '... PENDING');
my $banner = $t->created('/api/creatives', { advertiser_id => $adv{Acme}{id}, name => 'Takeover banner', type => 'IMAGE',
                                             w => 300, h => 250, image_url => 'https://cdn.example/t.png',
                                             landing_url => 'https://acme.example/' });
$t->created('/api/licas', { line_item_id => $sid, creative_id => $banner->{id} });
status_is($t->api('PATCH', "/api/line-items/$sid", json => { status => 'ACTIVE' }, @acme), 200, '... and activates it');
status_is($t->api('PATCH', "/api/line-items/$sid", json => { approval => 'APPROVED' }, @acme), 403,
          '... but cannot approve it');
sub serves { my $rev = $t->revision; $t->wait_until(5, sub { $t->workers_at($rev) });
             my $res = $t->ad($serving->{id}); return $res->{status} == 200 ? 'served' : "no ad ($res->{status})" }
is(serves(), 'no ad (204)', 'a PENDING line item does not serve');
my $queue = $t->api('GET', '/api/line-items?approval=PENDING', @ops)->{json}{items};
ok((grep { $_->{id} eq $sid } @$queue), 'the review queue (?approval=PENDING) holds it');
is(scalar(grep { $_->{approval} ne 'PENDING' } @$queue), 0, '... and only what waits');
status_is($t->api('PATCH', "/api/line-items/$sid", json => { approval => 'APPROVED' }, @ops), 200, 'an operator approves it');
is(serves(), 'served', '... and it serves');
status_is($t->api('PATCH', "/api/line-items/$sid", json => { name => 'Takeover, renamed', status => 'PAUSED' }, @acme), 200,
          'the advertiser renames and pauses it');
is($t->api('GET', "/api/line-items/$sid", @acme)->{json}{approval}, 'APPROVED', '... still APPROVED');
status_is($t->api('PATCH', "/api/line-items/$sid", json => { status => 'ACTIVE', rate => 0.01 }, @acme), 200,
          '... then resumes it at another rate');
is($t->api('GET', "/api/line-items/$sid", @acme)->{json}{approval}, 'PENDING', '... PENDING again');
is(serves(), 'no ad (204)', '... and it stops serving until reviewed');
is($t->created('/api/line-items', { %li, name => 'By ops' }, @ops)->{approval}, 'APPROVED',
   'a line item an operator makes is APPROVED');

# ---- an advertiser user whose advertiser is gone sees nothing ---------------------------------------------
my $lone = $t->created('/api/advertisers', { name => 'Lone' });
status_is($t->api('POST', '/api/users', json => { email => 'lone@buyers.example', password => 'a-good-password',
                                                  role => 'advertiser', advertiser_id => $lone->{id} }), 201, 'a Lone user');
status_is($t->api('DELETE', "/api/advertisers/$lone->{id}"), 204, 'Lone deleted');
my @lone = (as => [ 'lone@buyers.example', 'a-good-password' ]);
is($t->api('GET', "/api/$_", @lone)->{json}{total}, 0, "$_: nothing for an advertiser that is gone") for qw(orders line-items creatives licas);

done_testing;
