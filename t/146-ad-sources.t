# External demand, the management half (issue 15): /api/ad-sources,
# /api/allocations and the developer group's /api/developer/control/allocations.
# AdSources: CRUD, roles (advertisers refused), validation with the JSON
# path in the 422, unique names, the Redis record and the change log that
# serving follows, the audit stream, and the delete rule (409 while
# allocations name it). Allocations: references (422), one per source and
# target (409), filters, the placement's delete rule; the developer view:
# admin only, a PUT that replaces the whole set in one transaction.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201, 'an advertiser user');
is($t->api('POST', '/api/users', json => { email => 'op@example.com', password => 'a-good-password',
                                           role => 'operator' })->{status}, 201, 'an operator');
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);
my @op = (as => [ 'op@example.com', 'a-good-password' ]);

sub changes_for {
    my ($kind, $id) = @_;
    return scalar grep { /\b\Q$kind\E\b/ && /\Q$id\E/ } split /\n\d+-\d+\n/, $t->redis('XRANGE', 'adserve:changes', '-', '+');
}
sub audited {
    my ($resource, $id, $action) = @_;
    my $res = $t->api('GET', "/api/audit-logs?resource=$resource&id=$id&action=$action");
    return $res->{json}{total} // 0;
}

# ---- AdSources ----------------------------------------------------------------------------
my $S = '/api/ad-sources';
my $rev = $t->revision;
my $src = $t->created($S, { name => 'Bidder A', endpoint_url => 'https://bidder-a.example/openrtb2/auction?pub=7&x=1' });
is_deeply({ map { $_ => $src->{$_} } qw(seat tmax_ms floor formats enabled bid_adjustment qps_limit description) },
          { seat => undef, tmax_ms => 200, floor => 0, formats => ['display'], enabled => JSON::PP::true,
            bid_adjustment => undef, qps_limit => undef, description => undef }, 'the defaults');
like($src->{id}, qr/^[0-9a-f-]{36}$/, 'an id');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:ad_sources', $src->{id})), $src, 'adserve:ad_sources holds it');
is($t->revision, $rev + 1, 'one revision: serving reads sources');
ok(changes_for('ad_sources', $src->{id}), '... and a change log entry names it');
is(audited('ad_source', $src->{id}, 'create'), 1, 'an audit record');

my $full = $t->created($S, { name => 'Bidder B', endpoint_url => 'http://127.0.0.1:9000/bid', seat => 'seat-9',
                             tmax_ms => 120, floor => 0.5, formats => [qw(display video native)], enabled => JSON::PP::false,
                             bid_adjustment => 0.9, qps_limit => 500, description => 'the test bidder' }, @op);
is_deeply([ @$full{qw(seat tmax_ms floor enabled bid_adjustment qps_limit)} ],
          [ 'seat-9', 120, 0.5, JSON::PP::false, 0.9, 500 ], 'every field, made by an operator');

my @bad = (
    [ { name => 'x' }, qr/^endpoint_url: is required/, 'no endpoint' ],
    [ { name => 'x', endpoint_url => 'ftp://a.example/' }, qr/^endpoint_url: must be an absolute http or https URL/, 'not http' ],
    [ { name => 'x', endpoint_url => 'https://u:p@a.example/' }, qr/^endpoint_url: (must be )?an absolute http or https URL/, 'credentials' ],
    [ { name => 'x', endpoint_url => 'https://a.example/#f' }, qr/^endpoint_url: .*fragment/, 'a fragment' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', tmax_ms => 5 }, qr/^tmax_ms: must be between 10 and 1000/, 'tmax too short' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', tmax_ms => 1001 }, qr/^tmax_ms: must be between 10 and 1000/, 'tmax too long' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', tmax_ms => 1.5 }, qr/^tmax_ms: /, 'tmax not an integer' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', floor => -1 }, qr/^floor: must be between 0 and 999999/, 'a negative floor' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', formats => [] }, qr/^formats: at least one/, 'no format' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', formats => ['audio'] }, qr/^formats\[0\]: must be one of display, video, native/, 'an unknown format' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', formats => [qw(video video)] }, qr/^formats\[1\]: "video" twice/, 'a format twice' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', bid_adjustment => 0 }, qr/^bid_adjustment: must be between 0.01 and 10/, 'adjustment 0' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', bid_adjustment => 11 }, qr/^bid_adjustment: must be between 0.01 and 10/, 'adjustment 11' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', qps_limit => 0 }, qr/^qps_limit: must be between 1 and 100000/, 'qps 0' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', enabled => 'yes' }, qr/^enabled: /, 'enabled not a boolean' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', seat => 'x' x 65 }, qr/^seat: must be at most 64/, 'a long seat' ],
    [ { name => 'x', endpoint_url => 'https://a.example/', cpm => 1 }, qr/^cpm: unknown/, 'an unknown field' ],
);
$rev = $t->revision;
for my $b (@bad) {
    $t->refused($t->api('POST', $S, json => $b->[0]), 422, $b->[1], $b->[2]);
}
$t->refused($t->api('POST', $S, json => { name => 'Bidder A', endpoint_url => 'https://a.example/' }), 409,
            qr/^name: an ad source with this name exists/, 'a name in use');
is($t->revision, $rev, 'nothing refused was written');

# roles: advertisers see none of it
$t->refused($t->api('GET', $S, @buyer), 403, qr/role/, 'an advertiser lists');
$t->refused($t->api('POST', $S, json => { name => 'Mine', endpoint_url => 'https://m.example/' }, @buyer), 403, qr/role/, 'an advertiser creates');
$t->refused($t->api('GET', "$S/$src->{id}", @buyer), 404, qr/not found/, 'an advertiser reads one');
$t->refused($t->api('PATCH', "$S/$src->{id}", json => { floor => 1 }, @buyer), 404, qr/not found/, 'an advertiser changes one');
$t->refused($t->api('DELETE', "$S/$src->{id}", @buyer), 404, qr/not found/, 'an advertiser deletes one');
is($t->api('GET', $S, @op)->{json}{total}, 2, 'an operator lists them');
is($t->api('GET', "$S?q=bidder%20b")->{json}{items}[0]{id}, $full->{id}, '?q=');

$rev = $t->revision;
my $res = $t->api('PATCH', "$S/$src->{id}", json => { floor => 1.25, formats => [qw(native display)], tmax_ms => 300 });
is($res->{status}, 200, 'a PATCH');
is_deeply([ @{ $res->{json} }{qw(floor tmax_ms name)} ], [ 1.25, 300, 'Bidder A' ], '... changes what it sends');
is_deeply($res->{json}{formats}, [qw(native display)], '... formats replaced whole');
is($t->revision, $rev + 1, '... one revision');
is(audited('ad_source', $src->{id}, 'update'), 1, '... audited');
$t->refused($t->api('PATCH', "$S/$src->{id}", json => { tmax_ms => 0 }), 422, qr/^tmax_ms: must be between 10 and 1000/, 'a PATCH is checked');

# ---- allocations ----------------------------------------------------------------------------
my $root = $t->created('/api/ad-units', { code => "root-$$", name => 'Root', status => 'ACTIVE', display => { w => 300, h => 250 } });
my $leaf = $t->created('/api/ad-units', { code => "leaf-$$", name => 'Leaf', status => 'ACTIVE', parent_id => $root->{id},
                                          display => { w => 300, h => 250 } });
my $pl = $t->created('/api/placements', { name => 'Home', ad_unit_ids => [ $leaf->{id} ] });
my $A = '/api/allocations';
$rev = $t->revision;
my $a1 = $t->created($A, { ad_source_id => $src->{id}, target => 'path', target_id => $root->{id}, share => 50 });
is_deeply([ @$a1{qw(ad_source_id target target_id share)} ], [ $src->{id}, 'path', $root->{id}, 50 ], 'an allocation by path');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:allocations', $a1->{id})), $a1, 'adserve:allocations holds it');
is($t->revision, $rev + 1, 'one revision');
ok(changes_for('allocations', $a1->{id}), '... in the change log');
is(audited('allocation', $a1->{id}, 'create'), 1, '... audited');
my $a2 = $t->created($A, { ad_source_id => $src->{id}, target => 'placement', target_id => $pl->{id} }, @op);
is($a2->{share}, 100, 'a placement, share 100 by default');
my $a3 = $t->created($A, { ad_source_id => $full->{id}, target => 'ad_unit', target_id => $leaf->{id}, share => 0 });

my $ghost = Adserve::Test::uuid();
$t->refused($t->api('POST', $A, json => { ad_source_id => $ghost, target => 'ad_unit', target_id => $leaf->{id} }), 422,
            qr/^ad_source_id: no such ad source/, 'an unknown source');
$t->refused($t->api('POST', $A, json => { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $ghost }), 422,
            qr/^target_id: no such ad unit/, 'an unknown ad unit');
$t->refused($t->api('POST', $A, json => { ad_source_id => $src->{id}, target => 'placement', target_id => $leaf->{id} }), 422,
            qr/^target_id: no such placement/, 'an ad unit is no placement');
$t->refused($t->api('POST', $A, json => { ad_source_id => $src->{id}, target => 'zone', target_id => $leaf->{id} }), 422,
            qr/^target: must be one of ad_unit, path, placement/, 'an unknown target');
$t->refused($t->api('POST', $A, json => { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $leaf->{id}, share => 101 }), 422,
            qr/^share: must be between 0 and 100/, 'a share over 100');
$t->refused($t->api('POST', $A, json => { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $root->{id} }), 409,
            qr/^target_id: this ad source has an allocation for this target already/, 'one per source and target');
$t->refused($t->api('GET', $A, @buyer), 403, qr/role/, 'advertisers: 403');
$t->refused($t->api('GET', "$A/$a1->{id}", @buyer), 404, qr/not found/, '... and 404');
is($t->api('GET', "$A?ad_source_id=$src->{id}")->{json}{total}, 2, '?ad_source_id=');
is($t->api('GET', "$A?target_id=$leaf->{id}")->{json}{total}, 1, '?target_id=');
is($t->api('GET', "$A?target=placement")->{json}{items}[0]{id}, $a2->{id}, '?target=');
$res = $t->api('PATCH', "$A/$a1->{id}", json => { share => 25 });
is($res->{json}{share}, 25, 'a share changes');
$t->refused($t->api('PATCH', "$A/$a1->{id}", json => { target => 'placement' }), 422, qr/^target_id: no such placement/,
            'a target that no longer names its id');

# the delete rules: a source or a placement with allocations stays
$t->refused($t->api('DELETE', "$S/$src->{id}"), 409, qr/^the ad source has allocations \(2\): delete them first/,
            'a source with allocations cannot go');
$t->refused($t->api('DELETE', "/api/placements/$pl->{id}"), 409, qr/^the placement has allocations \(1\)/,
            'nor a placement they name');

# ---- the developer view -----------------------------------------------------------------------
my $D = '/api/developer/control/allocations';
$res = $t->api('GET', $D);
is($res->{status}, 200, 'the developer view');
# created_at is to the second: ties go by id, as the server sorts them
is_deeply([ map { $_->{id} } @{ $res->{json}{items} } ],
          [ map { $_->{id} } sort { $a->{created_at} cmp $b->{created_at} || $a->{id} cmp $b->{id} } $a1, $a2, $a3 ],
          '... every allocation, oldest first');
$t->refused($t->api('GET', $D, @op), 403, qr/role/, 'operators: 403 (admin only)');
$t->refused($t->api('PUT', $D, json => { items => [] }, @op), 403, qr/role/, '... for the PUT too');

$rev = $t->revision;
my $audits = $t->redis('XLEN', 'adserve:audit');
my @bad_put = (
    [ { items => [ { ad_source_id => $ghost, target => 'ad_unit', target_id => $leaf->{id} } ] },
      qr/^items\[0\]\.ad_source_id: no such ad source/, 'an unknown source' ],
    [ { items => [ { id => $a1->{id}, ad_source_id => $src->{id}, target => 'path', target_id => $root->{id} },
                   { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $ghost } ] },
      qr/^items\[1\]\.target_id: no such ad unit/, 'an unknown target' ],
    [ { items => [ { id => $ghost, ad_source_id => $src->{id}, target => 'ad_unit', target_id => $leaf->{id} } ] },
      qr/^items\[0\]\.id: no such allocation/, 'an unknown id' ],
    [ { items => [ { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $leaf->{id} },
                   { ad_source_id => $src->{id}, target => 'path', target_id => $leaf->{id} } ] },
      qr/^items\[1\]\.target_id: the same ad source and target as items\[0\]/, 'a pair twice' ],
    [ { items => [ { id => $a1->{id}, ad_source_id => $src->{id}, target => 'path', target_id => $root->{id} },
                   { id => $a1->{id}, ad_source_id => $full->{id}, target => 'path', target_id => $root->{id} } ] },
      qr/^items\[1\]\.id: named twice/, 'an id twice' ],
    [ { items => [ { ad_source_id => $src->{id}, target => 'ad_unit', target_id => $leaf->{id}, share => -1 } ] },
      qr/^items\[0\]\.share: must be between 0 and 100/, 'a bad share' ],
    [ { items => [ { ad_source_id => $src->{id}, target => 'ad_unit' } ] }, qr/^items\[0\]\.target_id: is required/, 'no target_id' ],
    [ {}, qr/^items: is required/, 'no items' ],
);
for my $b (@bad_put) {
    $t->refused($t->api('PUT', $D, json => $b->[0]), 422, $b->[1], "PUT: $b->[2]");
}
is($t->revision, $rev, 'refused PUTs write nothing');
is($t->redis('XLEN', 'adserve:audit'), $audits, '... and audit nothing');

# the same set again: no write at all
$res = $t->api('PUT', $D, json => { items => [ map { my $a = $_; +{ map { $_ => $a->{$_} } qw(id ad_source_id target target_id share) } }
                                               @{ $t->api('GET', $D)->{json}{items} } ] });
is($res->{status}, 200, 'the set as it is');
is($t->revision, $rev, '... writes nothing');

# keep a1 (a new share), drop a2 and a3, add one
$res = $t->api('PUT', $D, json => { items => [
    { id => $a1->{id}, ad_source_id => $src->{id}, target => 'path', target_id => $root->{id}, share => 75 },
    { ad_source_id => $full->{id}, target => 'placement', target_id => $pl->{id}, share => 10 },
] });
is($res->{status}, 200, 'a PUT of a new set');
# the kept one first: older, or of the same second and then by id
my @items = sort { ($b->{id} eq $a1->{id}) <=> ($a->{id} eq $a1->{id}) } @{ $res->{json}{items} };
is(scalar @items, 2, '... answers the set as stored');
is_deeply([ @{ $items[0] }{qw(id share created_at created_by)} ], [ $a1->{id}, 75, $a1->{created_at}, $a1->{created_by} ],
          '... the kept one keeps its id and creation');
like($items[1]{id}, qr/^[0-9a-f-]{36}$/, '... the new one has an id');
is($t->revision, $rev + 1, '... one revision for the whole set');
is($t->redis('HLEN', 'adserve:allocations'), 2, '... the others are gone from Redis');
is(audited('allocation', $a2->{id}, 'delete') + audited('allocation', $a3->{id}, 'delete'), 2, '... their deletes audited');
is(audited('allocation', $a1->{id}, 'update'), 2, '... the update audited (PATCH and PUT)');
is(audited('allocation', $items[1]{id}, 'create'), 1, '... the create audited');
ok(changes_for('allocations', $a2->{id}), '... and in the change log');
is($t->api('GET', "$A?ad_source_id=$full->{id}")->{json}{items}[0]{id}, $items[1]{id}, 'the indexes follow');
is($t->api('GET', "$A?target_id=$leaf->{id}")->{json}{total}, 0, '... for targets too');
is($t->redis('HGET', 'adserve:allocation_pairs', "$src->{id}:$leaf->{id}"), '', '... and the pairs');
$t->refused($t->api('POST', $A, json => { ad_source_id => $full->{id}, target => 'placement', target_id => $pl->{id} }), 409,
            qr/^target_id: this ad source has an allocation/, 'the pair of the PUT is taken');
is($t->created($A, { ad_source_id => $full->{id}, target => 'ad_unit', target_id => $leaf->{id} })->{share}, 100,
   'a pair the PUT freed is free');

# an empty set empties it; then the sources can go
is($t->api('PUT', $D, json => { items => [] })->{status}, 200, 'an empty set');
is($t->redis('HLEN', 'adserve:allocations'), 0, '... deletes every allocation');
is($t->redis('SCARD', "adserve:ad_source_allocations:$src->{id}"), 0, '... and its index entries');
$rev = $t->revision;
is($t->api('DELETE', "$S/$src->{id}")->{status}, 204, 'a source without allocations goes');
is($t->redis('HEXISTS', 'adserve:ad_sources', $src->{id}), 0, '... from Redis');
is($t->revision, $rev + 1, '... with a revision');
is(audited('ad_source', $src->{id}, 'delete'), 1, '... audited');
is($t->api('DELETE', "/api/placements/$pl->{id}")->{status}, 204, 'so does the placement');
is($t->api('GET', "$S/$src->{id}")->{status}, 404, 'a deleted source: 404');

# ---- serving keeps going -------------------------------------------------------------------------
# the module parses the new kinds; a write of each still lets a unit serve
my $creative = $t->created('/api/creatives', { advertiser_id => $acme->{id}, name => 'C', type => 'IMAGE', w => 300, h => 250,
                                               image_url => 'https://cdn.example/c.png', landing_url => 'https://acme.example/' });
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'O' });
is($t->api('PATCH', "/api/orders/$order->{id}", json => { status => 'APPROVED' })->{status}, 200, 'an approved order');
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'LI', type => 'HOUSE', cost_type => 'CPM', rate => 1,
                                         targeting => { ad_units => { include => [ $root->{id} ] } } });
$t->created('/api/licas', { line_item_id => $li->{id}, creative_id => $creative->{id} });
is($t->api('PATCH', "/api/line-items/$li->{id}", json => { status => 'ACTIVE' })->{status}, 200, 'an active line item');
$t->created($A, { ad_source_id => $full->{id}, target => 'ad_unit', target_id => $root->{id} });
$t->redis('HSET', 'adserve:ad_sources', 'broken', '{"id": "broken", "tmax_ms": "x"}');
my $served = $t->wait_until(5, sub { ($t->ad($leaf->{id})->{status} // 0) == 200 });
ok($served, 'a unit with allocations serves its direct demand');

done_testing();
