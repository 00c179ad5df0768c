# External demand's creatives (issue 15, point 4, the management half):
# /api/blocked-creatives (CRUD, roles, value rules, one block per kind,
# value, ad unit and source, references, Redis, change log, audit) and
# /api/external-creatives, whose records the module writes: the test writes
# them with redis-cli as the module will (the contract's shape, its id from
# adserve_external_creative_id), then lists, reads and blocks them.
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
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);
my $unit = $t->created('/api/ad-units', { code => "bc-$$", name => 'Unit' });
my $src = $t->created('/api/ad-sources', { name => 'Bidder', endpoint_url => 'https://bidder.example/rtb' });
my $audits = sub { $t->api('GET', "/api/audit-logs?resource=blocked_creative&id=$_[0]")->{json}{total} // 0 };

# ---- blocked creatives ----------------------------------------------------------------------
my $B = '/api/blocked-creatives';
my $rev = $t->revision;
my $dom = $t->created($B, { kind => 'adomain', value => 'Casino.Example' });
is_deeply([ @$dom{qw(kind value ad_unit_id ad_source_id external_creative_id)} ], [ 'adomain', 'casino.example', undef, undef, undef ],
          'a global adomain block, in lower case');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:blocked_creatives', $dom->{id})), $dom, 'adserve:blocked_creatives holds it');
is($t->revision, $rev + 1, 'one revision: serving reads blocks');
like($t->redis('XRANGE', 'adserve:changes', '-', '+'), qr/blocked_creatives\n.*\n\Q$dom->{id}\E/, '... in the change log');
is($audits->($dom->{id}), 1, '... audited');
my $cat = $t->created($B, { kind => 'cat', value => 'IAB7-39', ad_unit_id => $unit->{id} });
is($cat->{ad_unit_id}, $unit->{id}, 'a category for one ad unit');
my $crid = $t->created($B, { kind => 'crid', value => 'cr-1', ad_source_id => $src->{id}, description => 'broken' });

$t->refused($t->api('POST', $B, json => { kind => 'adomain', value => 'casino.example' }), 409,
            qr/^value: blocked already/, 'a global block twice (any case)');
is($t->created($B, { kind => 'adomain', value => 'casino.example', ad_unit_id => $unit->{id} })->{kind}, 'adomain',
   'the same value for one unit is another block');
$t->refused($t->api('POST', $B, json => { kind => 'adomain', value => 'https://casino.example/' }), 422,
            qr/^value: a domain such as shop\.example/, 'a URL is no domain');
$t->refused($t->api('POST', $B, json => { kind => 'cat', value => 'IAB 7' }), 422, qr/^value: an IAB category code/, 'a bad category');
$t->refused($t->api('POST', $B, json => { kind => 'badv', value => 'x' }), 422, qr/^kind: must be one of adomain, crid, cat/, 'a bad kind');
$t->refused($t->api('POST', $B, json => { kind => 'crid', value => '' }), 422, qr/^value: /, 'an empty value');
$t->refused($t->api('POST', $B, json => { kind => 'crid', value => 'x', ad_unit_id => Adserve::Test::uuid() }), 422,
            qr/^ad_unit_id: no such ad unit/, 'an unknown ad unit');
$t->refused($t->api('POST', $B, json => { kind => 'crid', value => 'x', ad_source_id => Adserve::Test::uuid() }), 422,
            qr/^ad_source_id: no such ad source/, 'an unknown source');
$t->refused($t->api('GET', $B, @buyer), 403, qr/role/, 'advertisers: 403');
$t->refused($t->api('GET', "$B/$dom->{id}", @buyer), 404, qr/not found/, '... and 404');
is($t->api('GET', "$B?kind=cat")->{json}{items}[0]{id}, $cat->{id}, '?kind=');
is($t->api('GET', "$B?ad_source_id=$src->{id}")->{json}{total}, 1, '?ad_source_id=');
is($t->api('PATCH', "$B/$crid->{id}", json => { value => 'cr-2' })->{json}{value}, 'cr-2', 'a PATCH');
is($t->api('POST', $B, json => { kind => 'crid', value => 'cr-1', ad_source_id => $src->{id} })->{status}, 201,
   '... frees the old value');
$rev = $t->revision;
is($t->api('DELETE', "$B/$cat->{id}")->{status}, 204, 'a delete');
is($t->revision, $rev + 1, '... with a revision');
is($audits->($cat->{id}), 2, '... audited');
is($t->api('POST', $B, json => { kind => 'cat', value => 'IAB7-39', ad_unit_id => $unit->{id} })->{status}, 201,
   '... and the value is free again');

# ---- external creatives, written as the module will ----------------------------------------
my $E = '/api/external-creatives';
# adserve_external_creative_id("src", "crid") is what the module computes;
# any UUID names a record for the API, so the test picks its own
my $ext_id = lc Adserve::Test::uuid();
my %ext = (id => $ext_id, ad_source_id => $src->{id}, crid => 'ext-cr-7', adomain => [ 'Shop.Example', 'shop2.example' ],
           cat => [ 'IAB22' ], w => 300, h => 250, markup_sample => '<div>ad</div>',
           first_seen => '2025-01-01T00:00:00Z', last_seen => '2025-01-02T00:00:00Z');
$t->redis('HSET', 'adserve:external_creatives', $ext_id, $JSON->encode(\%ext));
my $other = lc Adserve::Test::uuid();
$t->redis('HSET', 'adserve:external_creatives', $other, $JSON->encode({ %ext, id => $other, crid => 'ext-cr-8', adomain => [],
                                                                         first_seen => '2025-01-03T00:00:00Z' }));
my $res = $t->api('GET', $E);
is($res->{status}, 200, 'the external creatives');
is($res->{json}{total}, 2, '... both');
is_deeply($t->api('GET', "$E/$ext_id")->{json}, \%ext, 'one, as the module wrote it');
is($t->api('GET', "$E?crid=ext-cr-8")->{json}{items}[0]{id}, $other, '?crid=');
is($t->api('GET', "$E?adomain=shop2.example")->{json}{total}, 1, '?adomain=');
is($t->api('GET', "$E?ad_source_id=$src->{id}")->{json}{total}, 2, '?ad_source_id=');
$t->refused($t->api('GET', $E, @buyer), 403, qr/role/, 'advertisers: 403');
$t->refused($t->api('GET', "$E/$ext_id", @buyer), 404, qr/not found/, '... and 404');
is($t->api('GET', "$E/" . Adserve::Test::uuid())->{status}, 404, 'an unknown one: 404');

# block this: its crid, from its source
$rev = $t->revision;
$res = $t->api('POST', "$E/$ext_id/block", json => {});
is($res->{status}, 201, 'block this creative');
my ($blk) = @{ $res->{json}{items} };
is_deeply([ @$blk{qw(kind value ad_source_id ad_unit_id external_creative_id)} ], [ 'crid', 'ext-cr-7', $src->{id}, undef, $ext_id ],
          '... its crid, from its source, everywhere');
is($t->revision, $rev + 1, '... a revision');
is($audits->($blk->{id}), 1, '... audited');
$res = $t->api('POST', "$E/$ext_id/block", json => {});
is($res->{status}, 200, 'again: nothing new');
is($res->{json}{items}[0]{id}, $blk->{id}, '... the block that covers it');

# its domains, for one ad unit; one already blocked
$t->created($B, { kind => 'adomain', value => 'shop.example', ad_unit_id => $unit->{id} });
$res = $t->api('POST', "$E/$ext_id/block", json => { kind => 'adomain', ad_unit_id => $unit->{id} });
is($res->{status}, 201, 'block its domains for one unit');
is_deeply([ sort map { $_->{value} } @{ $res->{json}{items} } ], [ 'shop.example', 'shop2.example' ], '... each of them');
is_deeply([ map { $_->{ad_source_id} } @{ $res->{json}{items} } ], [ undef, undef ], '... from any source');
is($t->api('GET', "$B?external_creative_id=$ext_id")->{json}{total}, 2, 'the blocks it made name it');
$t->refused($t->api('POST', "$E/$other/block", json => { kind => 'adomain' }), 422, qr/^kind: the external creative has no adomain/,
            'a creative without domains');
$t->refused($t->api('POST', "$E/$ext_id/block", json => { kind => 'cat', ad_unit_id => Adserve::Test::uuid() }), 422,
            qr/^ad_unit_id: no such ad unit/, 'an unknown ad unit');
$t->refused($t->api('POST', "$E/$ext_id/block", json => { kind => 'x' }), 422, qr/^kind: must be one of/, 'a bad kind');
$t->refused($t->api('POST', "$E/" . Adserve::Test::uuid() . '/block', json => {}), 404, qr/not found/, 'an unknown creative');
$t->refused($t->api('POST', "$E/$ext_id/block", json => {}, @buyer), 403, qr/role/, 'advertisers cannot block');
is($t->api('POST', "$E/$ext_id/block", json => { kind => 'cat', description => 'no dating' })->{json}{items}[0]{value}, 'IAB22',
   'its categories');

done_testing();
