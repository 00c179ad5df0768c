# POST /api/line-items/batch, /api/licas/batch, /api/orders/batch: at most
# 100 items (101: 422, nothing applied), each applied alone with its own
# rules, partial failure, a result per item in input order with the
# status that item alone would have had (201, 200, 204, 404, 409, 422),
# one audit record per applied item, status changes as updates, scoping
# per item, and the time of a 100-line-item batch (printed, not asserted).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub batch { my ($what, $items, @as) = @_; $t->api('POST', "/api/$what/batch", json => { items => $items }, @as) }

# audit records of a resource, as {id => count}
sub audited {
    my ($resource) = @_;
    my (%n, $cur);
    my @lines = split /\n/, $t->redis('XRANGE', 'adserve:audit', '-', '+');
    for (my $i = 0; $i < @lines; $i++) {
        if ($lines[$i] =~ /^\d{13}-\d+$/) { $cur = {}; next }
        next unless $cur;
        $cur->{ $lines[$i] } = $lines[$i + 1];
        $i++;
        $n{ $cur->{id} }++ if exists $cur->{id} && ($cur->{resource} // '') eq $resource && $lines[$i - 1] eq 'id';
    }
    return \%n;
}
sub audit_total { my $n = audited($_[0]); my $s = 0; $s += $_ for values %$n; $s }

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
my $globex = $t->created('/api/advertisers', { name => 'Globex' });
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order' });
my $other = $t->created('/api/orders', { advertiser_id => $globex->{id}, name => 'Theirs' });

# ---- limits and the envelope ---------------------------------------------------------------
my $ghost = Adserve::Test::uuid();
my $before = audit_total('order');
$t->refused(batch('orders', [ map { { op => 'delete', id => $ghost } } 1 .. 101 ]), 422, qr/^items: must have at most 100 items/,
        '101 items');
is(audit_total('order'), $before, '... nothing applied');
$t->refused($t->api('POST', '/api/orders/batch', json => {}), 422, qr/^items: is required/, 'no items');
$t->refused($t->api('POST', '/api/orders/batch', json => { items => {} }), 422, qr/^items: must be an array/, 'items not an array');
$t->refused($t->api('POST', '/api/orders/batch', json => { items => [], dry_run => 1 }), 422, qr/^dry_run: unknown property/,
        'an unknown member');
my $res = batch('orders', []);
is($res->{status}, 200, 'no items: 200');
is_deeply($res->{json}, { results => [] }, '... no results');

# ---- 100 line items, timed ----------------------------------------------------------------------
my $unit = $t->created('/api/ad-units', { code => "batch-$$", name => 'Unit', status => 'ACTIVE' });
my @items = map { { op => 'create', data => { order_id => $order->{id}, name => "B$_", type => 'HOUSE',
                                               cost_type => 'CPM', rate => 0, start_at => '2030-01-01T00:00:00Z',
                                               end_at => '2030-12-31T00:00:00Z', frequency_caps => [ { max => 3, seconds => 3600 } ],
                                               targeting => { ad_units => { include => [ $unit->{id} ] },
                                                              sizes => [ { w => 300, h => 250 } ] } } } } 1 .. 100;
$before = audit_total('line_item');
my $t0 = time;
$res = batch('line-items', \@items);
my $took = time - $t0;
is($res->{status}, 200, '100 line items: 200') or diag $res->{content};
my @r = @{ $res->{json}{results} // [] };
is(scalar @r, 100, 'a result per item');
is_deeply([ map { $_->{index} } @r ], [ 0 .. 99 ], 'in input order');
is(scalar(grep { $_->{status} == 201 && $_->{id} } @r), 100, 'each 201 with its id');
diag sprintf 'a batch of 100 line items: %.0f ms (sidecar under ASan, through nginx)', $took * 1000;
is(audit_total('line_item'), $before + 100, 'one audit record per item');
my $listed = $t->api('GET', "/api/line-items?order_id=$order->{id}&limit=500")->{json};
is($listed->{total}, 100, 'all there');
is_deeply([ sort map { $_->{name} } @{ $listed->{items} } ], [ sort map { "B$_" } 1 .. 100 ], '... with their names');
my %id_of = map { $_->{name} => $_->{id} } @{ $listed->{items} };
is($r[41]{id}, $id_of{B42}, 'result 41 is item 41');

# ---- partial failure: each item as alone ---------------------------------------------------------
my $draft = $id_of{B1};
my $theirs = $t->created('/api/line-items', { order_id => $other->{id}, name => 'Theirs', type => 'HOUSE', cost_type => 'CPM', rate => 0 });
$before = audited('line_item');
$res = batch('line-items', [
    { op => 'update', id => $id_of{B2}, data => { status => 'ACTIVE' } },                       # 0: 200
    { op => 'update', id => $id_of{B3}, data => { status => 'COMPLETED' } },                    # 1: 409
    { op => 'create', data => { order_id => $order->{id}, name => 'C', type => 'HOUSE', cost_type => 'CPM', rate => -1 } },  # 2: 422
    { op => 'update', id => $ghost, data => { name => 'x' } },                                  # 3: 404
    { op => 'delete', id => $id_of{B4} },                                                       # 4: 204
    { op => 'create', data => { order_id => $order->{id}, name => 'New', type => 'STANDARD', cost_type => 'CPC', rate => 0.5 } },  # 5: 201
    { op => 'frob', id => $draft },                                                             # 6: 422
    'not an item',                                                                              # 7: 422
    { op => 'delete' },                                                                         # 8: 422
    { op => 'update', id => $draft },                                                           # 9: 422
    { op => 'delete', id => $draft, data => {} },                                               # 10: 422
    { op => 'create', id => $ghost, data => {} },                                               # 11: 422
    { op => 'update', id => $id_of{B2}, data => { status => 'PAUSED' } },                       # 12: 200 (sees item 0)
    { op => 'delete', id => $id_of{B4} },                                                       # 13: 404 (item 4 deleted it)
    { op => 'update', id => $draft, data => { order_id => $other->{id} } },                     # 14: 409
    { op => 'update', id => 'nope', data => {} },                                               # 15: 422
]);
is($res->{status}, 200, 'a mixed batch: 200') or diag $res->{content};
@r = @{ $res->{json}{results} // [] };
is_deeply([ map { $_->{status} } @r ], [ 200, 409, 422, 404, 204, 201, 422, 422, 422, 422, 422, 422, 200, 404, 409, 422 ],
          'each item\'s own status');
is_deeply([ map { $_->{index} } @r ], [ 0 .. 15 ], 'in input order');
like($r[1]{detail}, qr/^status: cannot go from DRAFT to COMPLETED/, 'a refused transition: its detail');
like($r[2]{detail}, qr/^rate: must be between 0/, 'an invalid create: its detail');
like($r[3]{detail}, qr/^line item not found/, 'an unknown id');
like($r[6]{detail}, qr/^op: must be one of create, update, delete/, 'an unknown op');
like($r[7]{detail}, qr/must be an object/, 'an item that is not an object');
like($r[8]{detail}, qr/^id: is required \(op delete\)/, 'a delete without id');
like($r[9]{detail}, qr/^data: is required/, 'an update without data');
like($r[10]{detail}, qr/^data: not for a delete/, 'a delete with data');
like($r[11]{detail}, qr/^id: not for a create/, 'a create with an id');
like($r[14]{detail}, qr/^order_id: cannot change/, 'an immutable field');
is($r[0]{id}, $id_of{B2}, 'updates carry their id');
is($r[4]{id}, $id_of{B4}, 'deletes too');
like($r[5]{id} // '', qr/^[0-9a-f-]{36}$/, 'a create: the new id');
ok(!exists $r[0]{detail}, 'no detail on success');
is($t->api('GET', "/api/line-items/$id_of{B2}")->{json}{status}, 'PAUSED', 'items applied in order');
is($t->api('GET', "/api/line-items/$id_of{B3}")->{json}{status}, 'DRAFT', 'a failed item changed nothing');
my $after = audited('line_item');
is(($after->{ $id_of{B2} } // 0) - ($before->{ $id_of{B2} } // 0), 2, 'two applied updates: two audit records');
is(($after->{ $id_of{B4} } // 0) - ($before->{ $id_of{B4} } // 0), 1, 'a delete: one');
is(($after->{ $id_of{B3} } // 0) - ($before->{ $id_of{B3} } // 0), 0, 'a refused item: none');
is($after->{ $r[5]{id} }, 1, 'a create: one');

# ---- LICAs and orders ----------------------------------------------------------------------------
my @creatives = map { $t->created('/api/creatives', { advertiser_id => $acme->{id}, name => "C$_", type => 'IMAGE', w => 300, h => 250,
                                                   image_url => 'https://cdn.example/c.png', landing_url => 'https://acme.example/' }) } 1 .. 2;
$res = batch('licas', [
    { op => 'create', data => { line_item_id => $id_of{B5}, creative_id => $creatives[0]{id} } },
    { op => 'create', data => { line_item_id => $id_of{B5}, creative_id => $creatives[0]{id} } },
    { op => 'create', data => { line_item_id => $id_of{B5}, creative_id => $creatives[1]{id}, weight => 2 } },
    { op => 'create', data => { line_item_id => $theirs->{id}, creative_id => $creatives[1]{id} } },
]);
is_deeply([ map { $_->{status} } @{ $res->{json}{results} } ], [ 201, 409, 201, 409 ],
          'LICAs: created, a duplicate pair, created, another advertiser\'s line item');
my $lica = $res->{json}{results}[0]{id};
$res = batch('licas', [ { op => 'update', id => $lica, data => { status => 'PAUSED' } }, { op => 'delete', id => $lica } ]);
is_deeply([ map { $_->{status} } @{ $res->{json}{results} } ], [ 200, 204 ], 'LICAs: pause, delete');

$res = batch('orders', [
    { op => 'create', data => { advertiser_id => $acme->{id}, name => 'O1' } },
    { op => 'create', data => { advertiser_id => $ghost, name => 'O2' } },
    { op => 'update', id => $other->{id}, data => { status => 'APPROVED' } },
    { op => 'update', id => $other->{id}, data => { status => 'DRAFT' } },
    { op => 'delete', id => $other->{id} },
    { op => 'delete', id => $order->{id} },
]);
is_deeply([ map { $_->{status} } @{ $res->{json}{results} } ], [ 201, 422, 200, 409, 409, 409 ],
          'orders: create, unknown advertiser, approve, no way back to DRAFT, no delete once APPROVED, none with line items');

# ---- scoping per item ------------------------------------------------------------------------------
is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201, 'an Acme user');
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);
$res = batch('line-items', [
    { op => 'update', id => $id_of{B6}, data => { name => 'Mine' } },
    { op => 'update', id => $theirs->{id}, data => { name => 'Stolen' } },
    { op => 'delete', id => $theirs->{id} },
    { op => 'create', data => { order_id => $other->{id}, name => 'Sneak', type => 'HOUSE', cost_type => 'CPM', rate => 0 } },
], @buyer);
is_deeply([ map { $_->{status} } @{ $res->{json}{results} } ], [ 200, 404, 404, 422 ],
          'an advertiser\'s batch: its own applies, others\' are unknown to it');
is($t->api('GET', "/api/line-items/$theirs->{id}")->{json}{name}, 'Theirs', '... and untouched');
$res = batch('orders', [ { op => 'update', id => $order->{id}, data => { status => 'APPROVED' } } ], @buyer);
is($res->{json}{results}[0]{status}, 403, 'an item its role may not do: 403');

done_testing;
