# /api/placements and /api/custom-targeting/keys[/{key_id}/values]: the
# inventory side of targeting. Placements: ad unit ids must exist, lists
# by ad unit and name, the delete rule (409 while a line item targets it),
# Redis and the revision. Keys and values: the Redis layout targeting.c
# reads (names indexes), unique names (per key for values), names and key
# types that cannot change, a key with values cannot go, nested paths
# (404 for an unknown key or a value of another key), and what a
# line item's kv may then name. Advertisers: 403 on these collections,
# 404 on every id.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

my @units = map { $t->created('/api/ad-units', { code => "pk-$$-$_", name => "Unit $_", status => 'ACTIVE' }) } 1 .. 3;
my @uid = map { $_->{id} } @units;
my $acme = $t->created('/api/advertisers', { name => 'Acme' });
is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201, 'an advertiser user');
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);

# ---- placements ----------------------------------------------------------------------------
my $rev = $t->revision;
my $home = $t->created('/api/placements', { name => 'Home', ad_unit_ids => [ @uid[0, 1] ] });
is_deeply([ @$home{qw(name description ad_unit_ids)} ], [ 'Home', undef, [ @uid[0, 1] ] ], 'a placement');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:placements', $home->{id})), $home, 'adserve:placements holds it');
is($t->revision, $rev + 1, 'one revision (serving reads placements)');
my $empty = $t->created('/api/placements', { name => 'Empty' });
is_deeply($empty->{ad_unit_ids}, [], 'no ad units by default');
my $ghost = Adserve::Test::uuid();
$t->refused($t->api('POST', '/api/placements', json => { name => 'Bad', ad_unit_ids => [ $uid[0], $ghost ] }), 422,
        qr/^ad_unit_ids\[1\]: no such ad unit/, 'an unknown ad unit');
$t->refused($t->api('POST', '/api/placements', json => { name => 'Bad', ad_unit_ids => [ 'x' ] }), 422,
        qr/^ad_unit_ids\[0\]: must be a UUID/, 'not an id');
$t->refused($t->api('POST', '/api/placements', json => { ad_unit_ids => [] }), 422, qr/^name: is required/, 'no name');
my $res = $t->api('PATCH', "/api/placements/$home->{id}", json => { ad_unit_ids => [ @uid[1, 2] ], description => 'Top' });
is($res->{status}, 200, 'new ad units and a description');
is_deeply($res->{json}{ad_unit_ids}, [ @uid[1, 2] ], '... replaced whole');
$t->refused($t->api('PATCH', "/api/placements/$home->{id}", json => { ad_unit_ids => [ $ghost ] }), 422,
        qr/^ad_unit_ids\[0\]: no such ad unit/, 'PATCH checks them too');
is($t->api('GET', "/api/placements?ad_unit_id=$uid[2]")->{json}{total}, 1, '?ad_unit_id=: placements holding it');
is($t->api('GET', "/api/placements?ad_unit_id=$uid[0]")->{json}{total}, 0, '... none any more for the first');
is($t->api('GET', '/api/placements?q=emp')->{json}{items}[0]{id}, $empty->{id}, '?q=');

my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order' });
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'LI', type => 'HOUSE', cost_type => 'CPM', rate => 0,
                                      targeting => { placements => [ $home->{id} ] } });
$t->refused($t->api('DELETE', "/api/placements/$home->{id}"), 409, qr/^the placement has line items targeting it \(1\)/,
        'a targeted placement cannot be deleted');
is($t->api('PATCH', "/api/line-items/$li->{id}", json => { targeting => {} })->{status}, 200, 'the line item targets it no more');
$rev = $t->revision;
is($t->api('DELETE', "/api/placements/$home->{id}")->{status}, 204, 'then it can go');
is($t->revision, $rev + 1, '... bumping the revision');

# ---- keys --------------------------------------------------------------------------------------
my $K = '/api/custom-targeting/keys';
$rev = $t->revision;
my $section = $t->created($K, { name => 'section', type => 'PREDEFINED' });
is_deeply([ @$section{qw(name type description)} ], [ 'section', 'PREDEFINED', undef ], 'a PREDEFINED key');
is($t->created($K, { name => 'q' })->{type}, 'FREEFORM', 'FREEFORM by default');
is($t->redis('HGET', 'adserve:targeting_key_names', 'section'), $section->{id}, 'the name index (targeting.c reads it)');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:targeting_keys', $section->{id})), $section, 'adserve:targeting_keys');
is($t->revision, $rev, 'no revision: serving does not read keys');
$t->refused($t->api('POST', $K, json => { name => 'section' }), 409, qr/^name: a key with this name exists/, 'a second "section"');
$t->refused($t->api('POST', $K, json => { name => 'x', type => 'LIST' }), 422, qr/^type: must be one of PREDEFINED, FREEFORM/, 'type');
$t->refused($t->api('POST', $K, json => { name => 'x' x 65 }), 422, qr/^name: must be at most 64/, 'a long name');
$t->refused($t->api('PATCH', "$K/$section->{id}", json => { name => 'part' }), 409, qr/^name: cannot change/, 'the name cannot change');
$t->refused($t->api('PATCH', "$K/$section->{id}", json => { type => 'FREEFORM' }), 409, qr/^type: cannot change/, 'nor the type');
is($t->api('PATCH', "$K/$section->{id}", json => { description => 'site section' })->{json}{description}, 'site section',
   'the description can');
is($t->api('GET', "$K?type=FREEFORM")->{json}{total}, 1, '?type=');
is($t->api('GET', "$K?q=SECT")->{json}{items}[0]{id}, $section->{id}, '?q=');

# ---- values ------------------------------------------------------------------------------------
my $V = "$K/$section->{id}/values";
my $sport = $t->created($V, { name => 'sport' });
is_deeply([ @$sport{qw(key_id name)} ], [ $section->{id}, 'sport' ], 'a value, with its key');
my $news = $t->api('POST', $V, json => { name => 'news' });
is($news->{headers}{location}, "$V/$news->{json}{id}", 'Location: the nested path');
$news = $news->{json};
is($t->redis('HGET', "adserve:targeting_value_names:$section->{id}", 'sport'), $sport->{id}, 'the value name index');
ok($t->redis('HEXISTS', "adserve:targeting_values:$section->{id}", $sport->{id}), 'adserve:targeting_values:{key}');
$t->refused($t->api('POST', $V, json => { name => 'sport' }), 409, qr/^name: the key has a value with this name/, 'a second "sport"');
my $long = $t->created("$K/$section->{id}/values", { name => 'v' x 256 });
is(length $long->{name}, 256, 'a 256-character name (its name index entry too)');
is($t->api('DELETE', "$V/$long->{id}")->{status}, 204, '... deleted again');
my $color = $t->created($K, { name => 'color', type => 'PREDEFINED' });
is($t->created("$K/$color->{id}/values", { name => 'sport' })->{name}, 'sport', 'the same name under another key');
$t->refused($t->api('POST', $V, json => { name => 'x', key_id => $color->{id} }), 422, qr/^key_id: is read-only/, 'key_id comes from the path');
$t->refused($t->api('POST', "$K/$ghost/values", json => { name => 'x' }), 404, qr/^custom targeting key not found/, 'values of an unknown key');
$t->refused($t->api('GET', "$K/$ghost/values"), 404, qr/^custom targeting key not found/, '... listed');
$t->refused($t->api('GET', "$K/$color->{id}/values/$sport->{id}"), 404, qr/^custom targeting value not found/, 'a value under another key');
is($t->api('GET', "$V/$sport->{id}")->{json}{name}, 'sport', 'under its own');
is($t->api('GET', $V)->{json}{total}, 2, 'the key\'s values');
is($t->api('GET', "$V?q=new")->{json}{items}[0]{id}, $news->{id}, '?q=');
$t->refused($t->api('PATCH', "$V/$sport->{id}", json => { name => 'sports' }), 409, qr/^name: cannot change/, 'a value name cannot change');

# what a line item may name now
my $kv = sub { { kv => { type => 'cmp', data => { lhs => [ $_[0] ], op => 'in', rhs => $_[1] } } } };
my $body = sub { { order_id => $order->{id}, name => 'KV', type => 'HOUSE', cost_type => 'CPM', rate => 0, targeting => $_[0] } };
is($t->api('POST', '/api/line-items', json => $body->($kv->('section', [ 'sport', 'news' ])))->{status}, 201,
   'kv naming the key\'s values');
$t->refused($t->api('POST', '/api/line-items', json => $body->($kv->('section', [ 'weather' ]))), 422,
        qr/"weather" is not a value of key "section"/, 'an unknown value of a PREDEFINED key');
$t->refused($t->api('POST', '/api/line-items', json => $body->($kv->('section', [ 7 ]))), 422,
        qr/must be a string naming a value of PREDEFINED key "section"/, 'a number for a PREDEFINED key');
is($t->api('POST', '/api/line-items', json => $body->($kv->('q', [ 'anything', 7 ])))->{status}, 201, 'a FREEFORM key takes any');

$t->refused($t->api('DELETE', "$K/$section->{id}"), 409, qr/^the custom targeting key has values \(2\)/, 'a key with values cannot go');
is($t->api('DELETE', "$V/$news->{id}")->{status}, 204, 'a value deleted');
$t->refused($t->api('POST', '/api/line-items', json => $body->($kv->('section', [ 'news' ]))), 422,
        qr/"news" is not a value of key "section"/, '... no longer named by new rules');
is($t->redis('HEXISTS', "adserve:targeting_value_names:$section->{id}", 'news'), '0', '... nor in the name index');
is($t->api('DELETE', "$V/$sport->{id}")->{status}, 204, 'the last value deleted');
is($t->api('DELETE', "$K/$section->{id}")->{status}, 204, 'then the key');
is($t->redis('HEXISTS', 'adserve:targeting_key_names', 'section'), '0', 'its name is free');
is($t->created($K, { name => 'section', type => 'FREEFORM' })->{type}, 'FREEFORM', 'and can be used again');

# ---- advertisers see none of it ---------------------------------------------------------------------
my $p = $t->created('/api/placements', { name => 'Hidden' });
$t->refused($t->api('GET', '/api/placements', @buyer), 403, qr/role/, 'advertiser: placements list 403');
$t->refused($t->api('POST', '/api/placements', json => { name => 'x' }, @buyer), 403, qr/role/, 'advertiser: placement create 403');
for my $m (qw(GET PATCH DELETE)) {
    $t->refused($t->api($m, "/api/placements/$p->{id}", ($m eq 'PATCH' ? (json => { name => 'x' }) : ()), @buyer), 404,
            qr/placement not found/, "advertiser: $m placement 404");
    $t->refused($t->api($m, "$K/$color->{id}", ($m eq 'PATCH' ? (json => { description => 'x' }) : ()), @buyer), 404,
            qr/key not found/, "advertiser: $m key 404");
}
$t->refused($t->api('GET', $K, @buyer), 403, qr/role/, 'advertiser: keys list 403');
$t->refused($t->api('GET', "$K/$color->{id}/values", @buyer), 403, qr/role/, 'advertiser: values list 403');
my $cv = $t->api('GET', "$K/$color->{id}/values")->{json}{items}[0];
$t->refused($t->api('GET', "$K/$color->{id}/values/$cv->{id}", @buyer), 404, qr/value not found/, 'advertiser: a value 404');

done_testing;
