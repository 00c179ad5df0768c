# /api/advertisers: the fields and their defaults, validation (422 naming
# the field), reads, lists with paging and ?q=, updates, the delete rule
# (409 while orders or creatives exist), the audit records, Redis (the
# record as the API shows it; no serving revision: serving does not read
# advertisers), and what an advertiser user may do: read its own record
# and balance, nothing else (403 on the collection, 404 on others, 403 on
# changing its own).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;
my $UUID = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
my $TIME = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

sub rc { $t->redis(@_) }
sub revision { rc('GET', 'adserve:rev') || 0 }
sub audit_count {
    my ($id) = @_;
    my @ids = grep { /^\Q$id\E$/ } split /\n/, rc('XRANGE', 'adserve:audit', '-', '+');
    return scalar @ids;
}

my $me = $t->api('GET', '/api/auth/me')->{json};

# ---- create: the defaults -------------------------------------------------------------
my $rev = revision();
my $res = $t->api('POST', '/api/advertisers', json => { name => 'Acme' });
is($res->{status}, 201, 'POST with a name only: 201');
my $acme = $res->{json};
like($acme->{id}, $UUID, 'a version 4 UUID');
like($acme->{created_at}, $TIME, 'created_at is RFC 3339 UTC');
is_deeply($acme, {
    id => $acme->{id}, name => 'Acme', domain => undef, categories => [], balance => 0, manager_id => undef,
    created_at => $acme->{created_at}, updated_at => $acme->{created_at}, created_by => $me->{id},
}, 'the whole advertiser: domain null, no categories, balance 0, no manager, created_by the caller');
is($res->{headers}{location}, "/api/advertisers/$acme->{id}", 'Location names it');
is_deeply($JSON->decode(rc('HGET', 'adserve:advertisers', $acme->{id})), $acme,
          'Redis holds the response shape');
is(revision(), $rev, 'serving does not read advertisers: no revision bump');
is(audit_count($acme->{id}), 1, 'one audit record');

my $full = $t->created('/api/advertisers', { name => 'Globex', domain => 'globex.example',
                                         categories => ['IAB2', 'IAB2-3'], balance => 1250.5 });
is_deeply([ @$full{qw(domain categories balance)} ], [ 'globex.example', ['IAB2', 'IAB2-3'], 1250.5 ],
          'domain, categories and balance kept');

# ---- validation ---------------------------------------------------------------------------
for my $case (
    [ {}, qr/^name: is required/, 'no name' ],
    [ { name => '' }, qr/^name: must not be empty/, 'empty name' ],
    [ { name => 'x' x 257 }, qr/^name: must be at most 256/, 'name too long' ],
    [ { name => 'A', colour => 'red' }, qr/^colour: unknown property/, 'unknown field' ],
    [ { name => 'A', id => Adserve::Test::uuid() }, qr/^id: is read-only/, 'id is read-only' ],
    [ { name => 'A', created_by => $me->{id} }, qr/^created_by: is read-only/, 'created_by is read-only' ],
    [ { name => 'A', balance => -1 }, qr/^balance: must be >= 0/, 'negative balance' ],
    [ { name => 'A', balance => '10' }, qr/^balance: must be a number/, 'balance as a string' ],
    [ { name => 'A', categories => 'IAB1' }, qr/^categories: must be an array/, 'categories not an array' ],
    [ { name => 'A', categories => [''] }, qr/^categories\[0\]: must not be empty/, 'an empty category' ],
    [ { name => 'A', domain => 'd' x 254 }, qr/^domain: must be at most 253/, 'domain too long' ],
) {
    $t->refused($t->api('POST', '/api/advertisers', json => $case->[0]), 422, $case->[1], $case->[2]);
}
$t->refused($t->api('POST', '/api/advertisers', body => '{"name":', headers => { 'content-type' => 'application/json' }),
        400, qr/malformed/, 'malformed JSON');

# ---- read and list -------------------------------------------------------------------------
is_deeply($t->api('GET', "/api/advertisers/$acme->{id}")->{json}, $acme, 'GET answers the record');
is_deeply($t->api('GET', '/api/advertisers/' . uc $acme->{id})->{json}, $acme, 'an upper-case id is the same id');
$t->refused($t->api('GET', '/api/advertisers/' . Adserve::Test::uuid()), 404, qr/advertiser not found/, 'unknown id');
$t->refused($t->api('GET', '/api/advertisers/nope'), 404, qr/not found/, 'an id that is no UUID');

$t->created('/api/advertisers', { name => "Initech $_" }) for 1 .. 5;
my $list = $t->api('GET', '/api/advertisers')->{json};
is($list->{total}, 7, 'the list counts all');
my @keys = map { "$_->{created_at} $_->{id}" } @{ $list->{items} };
is_deeply(\@keys, [ sort @keys ], 'oldest first (then by id, for stable pages)');
my $page = $t->api('GET', '/api/advertisers?limit=2&offset=2')->{json};
is(scalar @{ $page->{items} }, 2, 'limit');
is($page->{items}[0]{id}, $list->{items}[2]{id}, 'offset');
is($page->{total}, 7, 'total is before paging');
is($t->api('GET', '/api/advertisers?q=initech')->{json}{total}, 5, '?q= a name substring, any case');
is($t->api('GET', '/api/advertisers?q=nothing-like-it')->{json}{total}, 0, '?q= without a match');
$t->refused($t->api('GET', '/api/advertisers?colour=red'), 422, qr/^colour: unknown property/, 'unknown query parameter');
$t->refused($t->api('GET', '/api/advertisers?limit=0'), 422, qr/^limit: must be between 1 and 500/, 'limit 0');

# ---- update --------------------------------------------------------------------------------
$res = $t->api('PATCH', "/api/advertisers/$acme->{id}", json => { balance => 99.5, domain => 'acme.example' });
is($res->{status}, 200, 'PATCH: 200') or diag $res->{content};
is_deeply([ @{ $res->{json} }{qw(name balance domain)} ], [ 'Acme', 99.5, 'acme.example' ], 'only the fields sent change');
is(audit_count($acme->{id}), 2, 'the update: one more audit record');
my $again = $t->api('PATCH', "/api/advertisers/$acme->{id}", json => { balance => 99.5 });
is($again->{status}, 200, 'a PATCH that changes nothing: 200');
is($again->{json}{updated_at}, $res->{json}{updated_at}, '... writes nothing');
is(audit_count($acme->{id}), 2, '... and no audit record');
$t->refused($t->api('PATCH', "/api/advertisers/$acme->{id}", json => { name => undef }), 422, qr/^name: must not be null/, 'name null');
$t->refused($t->api('PATCH', "/api/advertisers/$acme->{id}", json => { updated_at => 'x' }), 422, qr/read-only/, 'updated_at read-only');
$t->refused($t->api('PATCH', '/api/advertisers/' . Adserve::Test::uuid(), json => { name => 'x' }), 404, qr/not found/, 'PATCH unknown id');

# ---- an advertiser user ------------------------------------------------------------------
is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status},
   201, 'a user of Acme');
my @acme = (as => [ 'buyer@acme.example', 'a-good-password' ]);
$res = $t->api('GET', "/api/advertisers/$acme->{id}", @acme);
is($res->{status}, 200, 'it reads its own advertiser');
is($res->{json}{balance}, 99.5, '... with its balance');
$t->refused($t->api('GET', "/api/advertisers/$full->{id}", @acme), 404, qr/advertiser not found/, 'another advertiser: 404');
$t->refused($t->api('GET', '/api/advertisers', @acme), 403, qr/role/, 'the list: 403');
$t->refused($t->api('POST', '/api/advertisers', json => { name => 'Mine' }, @acme), 403, qr/role/, 'creating one: 403');
$t->refused($t->api('PATCH', "/api/advertisers/$acme->{id}", json => { balance => 1e6 }, @acme), 403,
        qr/cannot change/, 'raising its own balance: 403');
is($t->api('GET', "/api/advertisers/$acme->{id}")->{json}{balance}, 99.5, '... the balance is unchanged');
$t->refused($t->api('PATCH', "/api/advertisers/$full->{id}", json => { name => 'x' }, @acme), 404, qr/not found/, 'changing another: 404');
$t->refused($t->api('DELETE', "/api/advertisers/$acme->{id}", @acme), 403, qr/cannot change/, 'deleting its own: 403');
$t->refused($t->api('DELETE', "/api/advertisers/$full->{id}", @acme), 404, qr/not found/, 'deleting another: 404');

# ---- delete ---------------------------------------------------------------------------------
my $order = $t->created('/api/orders', { advertiser_id => $full->{id}, name => 'An order' });
$t->refused($t->api('DELETE', "/api/advertisers/$full->{id}"), 409, qr/has orders \(1\)/, 'an advertiser with an order');
is($t->api('DELETE', "/api/orders/$order->{id}")->{status}, 204, 'the order deleted (DRAFT)');
my $creative = $t->created('/api/creatives', { advertiser_id => $full->{id}, name => 'Banner', type => 'IMAGE', w => 300,
                                          h => 250, image_url => 'https://cdn.example/b.png',
                                          landing_url => 'https://globex.example/' });
$t->refused($t->api('DELETE', "/api/advertisers/$full->{id}"), 409, qr/has creatives \(1\)/, '... with a creative');
is($t->api('DELETE', "/api/creatives/$creative->{id}")->{status}, 204, 'the creative deleted');
$res = $t->api('DELETE', "/api/advertisers/$full->{id}");
is($res->{status}, 204, 'then it can go: 204');
ok(!length($res->{content} // ''), '... with no body');
is($t->api('GET', "/api/advertisers/$full->{id}")->{status}, 404, 'gone');
is(rc('HEXISTS', 'adserve:advertisers', $full->{id}), '0', '... from Redis too');
$t->refused($t->api('DELETE', "/api/advertisers/$full->{id}"), 404, qr/not found/, 'deleting it again: 404');
is(audit_count($full->{id}), 2, 'its audit records: create and delete');

# ---- control characters: cJSON ends a string at a NUL ("a\u0000b" was stored as "a", a code
# "x\u0000-new" collided with "x"); every body is checked, the field named ----------------------
$t->refused($t->api('POST', '/api/advertisers', json => { name => "a\x00b" }), 422,
            qr/field 'name' holds a control character/, 'a NUL in a name (\u0000)');
$t->refused($t->api('POST', '/api/advertisers', json => { name => "a\x01b" }), 422,
            qr/field 'name' holds a control character/, 'U+0001 in a name');
$t->refused($t->api('POST', '/api/advertisers', body => qq({"name":"a\x1fb"}),
                    headers => { 'content-type' => 'application/json' }), 422,
            qr/field 'name' holds a control character/, 'a raw U+001F byte in a name');
$t->refused($t->api('POST', '/api/ad-units', json => { code => "demo\x00-new", name => 'x',
                                                        ext => { bcat => [ 'IAB1', "IAB\x002" ] } }), 422,
            qr/field '(code|ext\.bcat\[1\])' holds a control character/, 'a NUL in a code or deeper');
$t->refused($t->api('POST', '/api/ad-units', json => { name => 'x', code => 'ok-code',
                                                        ext => { bcat => [ 'IAB1', "IAB\x002" ] } }), 422,
            qr/field 'ext\.bcat\[1\]' holds a control character/, '... the path of a nested one');
$t->refused($t->api('POST', '/api/advertisers', json => { "na\x00me" => 'x' }), 422,
            qr/holds a control character/, 'a NUL in a key');
my $text = $t->created('/api/advertisers', { name => "Tab\tand\nlines, and a \\u0000 written out" });
is($text->{name}, "Tab\tand\nlines, and a \\u0000 written out",
   'tab, line feed and an escaped backslash before u0000 are text: stored as sent');
is(scalar(grep { $_ } map { $t->redis('HEXISTS', 'adserve:advertisers', $_) } $text->{id}), 1, '... in Redis');

done_testing;
