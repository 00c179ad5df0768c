# The recommendation catalog through the API (README "Recommendation
# catalog"): catalog items and associated items pools, CRUD, roles, audit,
# their rules (an item id's characters, a flat attribute map, one record per
# customer id, a pool ranked by score), and a bulk upload of 10,000 items and
# 1,000 pools in batches of 100, timed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new;
sub audit_count { my ($id) = @_; scalar grep { /^\Q$id\E$/ } split /\n/, $t->redis('XRANGE', 'adserve:audit', '-', '+') }

my $I = '/api/catalog-items';
my $P = '/api/associated-items-pools';

# ---- catalog items --------------------------------------------------------------------------------
my %shoe = (item_id => 'sku:trail-x_2026', title => 'Trail Runner X', url => 'https://shop.example/trail-x',
            image => 'https://cdn.example/trail-x.jpg',
            attributes => { category => 'shoes', price => 129.5, in_stock => JSON::PP::true, tags => [ 'trail', 'mud' ] });
my $shoe = $t->created($I, \%shoe);
is_deeply([ @$shoe{qw(item_id title url image)} ], [ @shoe{qw(item_id title url image)} ], 'an item: its fields as sent');
is_deeply($shoe->{attributes}, $shoe{attributes}, '... its attributes');
is_deeply($shoe->{contexts}, [ 'all' ], '... in the context "all" by default');
is(audit_count($shoe->{id}), 1, '... one audit record');
my $r0 = $t->revision;
my $sock = $t->created($I, { item_id => 'sku:sock-1', title => 'Trail sock', url => 'https://shop.example/sock',
                             contexts => [ 'shop', 'blog' ] });
is($t->revision, $r0 + 1, 'serving reads the catalog: one revision');
is($t->api('PATCH', "$I/$sock->{id}", json => { title => 'Trail sock, merino' })->{json}{title}, 'Trail sock, merino', 'PATCH it');
is_deeply([ map { $_->{item_id} } @{ $t->api('GET', "$I?item_id=sku:sock-1")->{json}{items} } ], [ 'sku:sock-1' ],
          'find an item by its item_id');
is_deeply([ map { $_->{item_id} } @{ $t->api('GET', "$I?context=blog")->{json}{items} } ], [ 'sku:sock-1' ], '... or by context');
is_deeply([ map { $_->{item_id} } @{ $t->api('GET', "$I?q=runner")->{json}{items} } ], [ 'sku:trail-x_2026' ], '... or by title');

$t->refused($t->api('POST', $I, json => { %shoe, title => 'again' }), 409, qr/^item_id: the catalog has an item with this id/,
            'an item_id twice');
$t->refused($t->api('PATCH', "$I/$shoe->{id}", json => { item_id => 'sku:other' }), 409, qr/item_id/, 'item_id cannot change');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'has space' }), 422, qr/^item_id: letters, digits/, 'a space in an item_id');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'x' x 129 }), 422, qr/^item_id/, 'an item_id over 128 bytes');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'sku:n1', attributes => { deep => { a => 1 } } }), 422,
            qr/^attributes\.deep: a string/, 'a nested attribute');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'sku:n2', attributes => { list => [ 1, 2 ] } }), 422,
            qr/^attributes\.list: an array of strings/, 'an array of numbers');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'sku:n3', attributes => { map { ("k$_" => 1) } 1 .. 65 } }), 422,
            qr/^attributes: up to 64 members/, '65 attributes');
$t->refused($t->api('POST', $I, json => { %shoe, item_id => 'sku:n4', url => 'javascript:alert(1)' }), 422, qr/^url/,
            'a url that is not http(s)');

# ---- pools ----------------------------------------------------------------------------------------
my $pool = $t->created($P, { source_item_id => 'sku:trail-x_2026',
                             items => [ { item_id => 'sku:a', score => 0.2 }, { item_id => 'sku:sock-1', score => 0.9 },
                                        { item_id => 'sku:b', score => 0.2 }, { item_id => 'sku:c' } ] });
is_deeply([ map { $_->{item_id} } @{ $pool->{items} } ], [qw(sku:sock-1 sku:a sku:b sku:c)],
          'a pool is stored ranked: highest score first, ties as sent, no score as 0');
is(audit_count($pool->{id}), 1, '... one audit record');
$t->refused($t->api('POST', $P, json => { source_item_id => 'sku:trail-x_2026', items => [] }), 409,
            qr/^source_item_id: this item has a pool already/, 'a second pool for an item');
$t->refused($t->api('POST', $P, json => { source_item_id => 'sku:s', items => [ { item_id => 'sku:s' } ] }), 422,
            qr/^items\[0\]\.item_id: the source item itself/, 'the source among its own items');
$t->refused($t->api('POST', $P, json => { source_item_id => 'sku:s', items => [ { item_id => 'a' }, { item_id => 'a' } ] }),
            422, qr/^items\[0\]\.item_id: a is listed twice/, 'an item twice');
$t->refused($t->api('POST', $P, json => { source_item_id => 'sku:s', items => [ map { { item_id => "i$_" } } 1 .. 101 ] }),
            422, qr/^items/, '101 items');
my $patched = $t->api('PATCH', "$P/$pool->{id}", json => { items => [ { item_id => 'sku:z', score => 1 } ] })->{json};
is_deeply($patched->{items}, [ { item_id => 'sku:z', score => 1 } ], 'a pool\'s items replaced whole');
is($t->api('GET', "$P?source_item_id=sku:trail-x_2026")->{json}{items}[0]{id}, $pool->{id}, 'find a pool by its source');

# ---- roles ----------------------------------------------------------------------------------------
my $acme = $t->created('/api/advertisers', { name => 'Acme catalog' });
is($t->api('POST', '/api/users', json => { email => 'cat@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201,
   'an advertiser user');
my @buyer = (as => [ 'cat@acme.example', 'a-good-password' ]);
$t->refused($t->api('GET', $I, @buyer), 403, qr/role/, 'advertiser: items list 403');
$t->refused($t->api('GET', "$I/$shoe->{id}", @buyer), 404, qr/not found/, 'advertiser: an item 404');
$t->refused($t->api('POST', "$P/batch", json => { items => [] }, @buyer), 403, qr/role/, 'advertiser: pools batch 403');

# ---- a bulk upload: 10,000 items and 1,000 pools, batches of 100 -------------------------------------
my $N = 10_000;
my (@results, $start);
$start = time;
for my $b (0 .. $N / 100 - 1) {
    my @items = map { { op => 'create', data => { item_id => "bulk:$_", title => "Bulk item $_",
                                                  url => "https://shop.example/p/$_", contexts => [ 'shop' ],
                                                  attributes => { n => $_ } } } } $b * 100 .. $b * 100 + 99;
    my $res = $t->api('POST', "$I/batch", json => { items => \@items });
    push @results, @{ $res->{json}{results} // [ { status => $res->{status} } ] };
}
my $took = time - $start;
is(scalar(grep { $_->{status} == 201 } @results), $N, "$N items in 100 batches: every one created");
note sprintf '%d catalog items in %.1f s (%.0f a second), the sidecar under AddressSanitizer', $N, $took, $N / $took;
is($t->redis('HLEN', 'adserve:catalog_items'), $N + 2, '... all in Redis');
$start = time;
my @pools;
for my $b (0 .. 9) {
    my @items = map { my $s = $_; { op => 'create', data => { source_item_id => "bulk:$s",
                      items => [ map { { item_id => "bulk:" . (($s + $_) % $N), score => 1 / $_ } } 1 .. 20 ] } } }
                $b * 100 .. $b * 100 + 99;
    push @pools, @{ $t->api('POST', "$P/batch", json => { items => \@items })->{json}{results} // [] };
}
is(scalar(grep { $_->{status} == 201 } @pools), 1000, '1,000 pools of 20 items in 10 batches');
note sprintf '1,000 pools in %.1f s', time - $start;
my $mixed = $t->api('POST', "$I/batch", json => { items => [
    { op => 'create', data => { item_id => 'bulk:0', title => 'dup', url => 'https://shop.example/' } },
    { op => 'create', data => { item_id => 'bad id', title => 'x', url => 'https://shop.example/' } },
    { op => 'create', data => { item_id => 'bulk:new', title => 'fine', url => 'https://shop.example/' } } ] });
is_deeply([ map { $_->{status} } @{ $mixed->{json}{results} } ], [ 409, 422, 201 ],
          'a batch with failures: a result per item, the good one created');
like($mixed->{json}{results}[1]{detail}, qr/^item_id/, '... each failure saying why');
$t->refused($t->api('POST', "$I/batch", json => { items => [ ({ op => 'delete', id => $shoe->{id} }) x 101 ] }), 422,
            qr/items/, '101 items in a batch');

# ---- scripts/import-catalog: JSON Lines, upserts, progress, per-line errors ---------------------------
use File::Temp qw(tempfile);
sub import_catalog {
    my ($lines, @args) = @_;
    my ($fh, $path) = tempfile(UNLINK => 1);
    print $fh map { "$_\n" } @$lines;
    close $fh;
    local %ENV = (%ENV, %{ $t->env });
    my $out = qx{"$FindBin::Bin/../scripts/import-catalog" @args '$path' 2>&1};
    return ($? >> 8, $out);
}
my $J = JSON::PP->new->canonical;
my @file = map { $J->encode({ item_id => "imp:$_", title => "Imported $_", url => "https://shop.example/i/$_" }) } 1 .. 2500;
my ($rc, $out) = import_catalog(\@file);
is($rc, 0, 'import-catalog: 2,500 lines, exit 0') or diag $out;
like($out, qr/==> import-catalog: 2500 lines sent, 0 failed \(\d+ a second\)/, '... its progress on stderr');
note((split /\n/, $out)[-1]);
is(scalar @{ $t->api('GET', "$I?q=Imported&limit=500")->{json}{items} }, 500, '... the items are there');
is($t->api('GET', "$I?q=Imported&limit=1")->{json}{total}, 2500, '... all 2,500');
$file[0] = $J->encode({ item_id => 'imp:1', title => 'Imported 1, renamed', url => 'https://shop.example/i/1' });
push @file, 'not json', $J->encode({ item_id => 'bad id', title => 'x', url => 'https://shop.example/' }), '[1]';
($rc, $out) = import_catalog(\@file);
is($rc, 1, 'again, with three bad lines: exit 1');
like($out, qr/^line 2501: not JSON/m, '... the line that is not JSON, by number');
like($out, qr/^line 2502: 422 item_id: letters, digits/m, '... the one the API refused, with its status and why');
like($out, qr/^line 2503: not a JSON object/m, '... and the one that is not an object');
is($t->api('GET', "$I?item_id=imp:1")->{json}{items}[0]{title}, 'Imported 1, renamed',
   'an item uploaded again: updated in place (upsert by item_id)');
is($t->api('GET', "$I?q=Imported&limit=1")->{json}{total}, 2500, '... no duplicate made');
($rc, $out) = import_catalog([ $J->encode({ source_item_id => 'imp:1', items => [ { item_id => 'imp:2', score => 1 } ] }),
                               $J->encode({ source_item_id => 'imp:1', items => [ { item_id => 'imp:3', score => 1 } ] }) ],
                             '--pools');
is($rc, 0, 'import-catalog --pools: exit 0') or diag $out;
is($t->api('GET', "$P?source_item_id=imp:1")->{json}{items}[0]{items}[0]{item_id}, 'imp:3',
   '... a pool given twice: the second replaced the first');
my $upsert = $t->api('POST', '/api/line-items/batch', json => { items => [ { op => 'upsert', data => { name => 'x' } } ] });
is($upsert->{json}{results}[0]{status}, 422, 'upsert on line items (no natural key): 422');

# ---- counting many ids at once ------------------------------------------------------------------
# Each request to a recommendation unit that names a catalog item counts a view of it, per item and in
# its popularity: 2,499 distinct items back to back make about 5,000 counters in a worker's table
# within a flush interval or two, more than one events batch takes (2,000 increments), so a table
# drains over several batches. Every view arrives, once. (imp:1 has a pool, and is left out.)
my $counting = $t->created('/api/ad-units', { code => "rec-count-$$", name => 'Counting', status => 'ACTIVE',
                                              recommendation => { topn => 1 }, ext => { recommendation => { enabled => 1 } } })->{id};
ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'a recommendation unit, on every worker');
my @views = $t->ads_pipelined($counting, [ map { { version => '0.1.0', ext => { item_id => "imp:$_" } } } 2 .. 2500 ]);
is(scalar(grep { $_->{status} == 204 } @views), 2499, '2,499 requests, each naming another item (no pool: 204)');
sub view_counts {
    my %n;
    for my $key (split /\n/, $t->redis('KEYS', 'adserve:stats:*')) {
        my %h = split /\n/, $t->redis('HGETALL', $key);
        for (keys %h) { $n{$1} += $h{$_} if /^it:imp:(\d+):view$/ }
    }
    return \%n;
}
ok($t->wait_until(10, sub { keys %{ view_counts() } == 2499 }), '... every item\'s view counted');
my $counted = view_counts();
is_deeply([ grep { ($counted->{$_} // 0) != 1 } 2 .. 2500 ], [], '... each exactly once');

# ---- delete -------------------------------------------------------------------------------------
is($t->api('DELETE', "$P/$pool->{id}")->{status}, 204, 'a pool: deleted');
is($t->api('DELETE', "$I/$shoe->{id}")->{status}, 204, 'an item: deleted');
my $again = $t->api('POST', $I, json => \%shoe);
is($again->{status}, 201, '... and its item_id free again');

done_testing;
