# Recommendation serving on the real stack (README "Recommendation"): an ad
# unit with ext.recommendation.enabled answers with up to topn catalog items,
# the associated items pool of the item the request names (axa0), in rank
# order, each with its own click URL landing on the item's url; a change of
# the catalog or a pool serves within a second; both tracking modes count
# the impression exactly; no ad answer is touched.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
sub current { ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the change') }
sub body { my (%ext) = @_; return { version => '0.1.0', user => { id => 'reader-1' }, device => { ua => 'Mozilla/5.0' },
                                    %ext ? (ext => { %ext }) : () } }
sub ids { my ($res) = @_; [ map { $_->{id} } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }

# ---- the catalog, a pool, a recommendation unit: all through the API --------------------------------
my @ids = map { "art:$_" } 'a' .. 'l';
for my $id (@ids) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Article $id <b>", url => "https://news.example/$id",
                                        image => ($id eq 'art:c' ? undef : "https://cdn.example/$id.jpg") });
}
my $pool = $t->created('/api/associated-items-pools', { source_item_id => 'art:a', items => [
    map { { item_id => $ids[$_], score => 20 - $_ } } 1 .. 7 ] });
$t->created('/api/associated-items-pools', { source_item_id => 'art:b',
    items => [ { item_id => 'art:ghost', score => 9 }, { item_id => 'art:c', score => 1 } ] });
my $unit = $t->created('/api/ad-units', { code => "rec-$$", name => 'Related articles', status => 'ACTIVE',
                                          recommendation => { topn => 5 }, ext => { recommendation => { enabled => 1 } } });
my $U = $unit->{id};
current();

# ---- the answer -------------------------------------------------------------------------------------
my $res = $t->ad($U, body(item_id => 'art:a'));
is($res->{status}, 200, 'a recommendation unit, the item a reader looks at: 200') or diag $res->{content};
my $ad = $res->{json}{ad};
is($ad->{id}, $U, 'ad.id: the ad unit (no creative)');
is_deeply(ids($res), [ @ids[1 .. 5] ], 'topn 5 of the pool\'s 7 items, in its rank');
my $first = $ad->{recommendation}{items}[0];
is_deeply([ @$first{qw(title url image source)} ],
          [ 'Article art:b <b>', 'https://news.example/art:b', 'https://cdn.example/art:b.jpg', 'algorithm' ],
          'an item: its catalog fields (the title as the JSON string it is) and its source');
is($ad->{recommendation}{items}[1]{image}, undef, '... an item without an image: null');
my $log = $res->{json}{ext}{ad_log};
my $base = $t->base;
is($first->{click_url}, "$base/app/v0/event/click?ad_log=$log&item=art:b&src=algorithm", 'its own click URL: the token, the item, its source');
is($ad->{click_url}, $first->{click_url}, 'ad.click_url: the first item\'s');
is($ad->{impression_url}, "$base/app/v0/event/impression?ad_log=$log", 'ad.impression_url, as for an ad');
is($res->{json}{ext}{message}, 'ok', 'ext.message');

# clicks land on the item
my $click = $t->request('GET', $ad->{recommendation}{items}[2]{click_url} =~ s{^\Q$base\E}{}r, redirect => 0);
is($click->{status}, 302, 'an item\'s click: 302');
is($click->{headers}{location}, 'https://news.example/art:d', '... to that item\'s url');
is($t->request('GET', "/app/v0/event/click?ad_log=$log&item=art:zzz", redirect => 0)->{status}, 404,
   'an item the catalog lacks: 404');
is($t->request('GET', "/app/v0/event/click?ad_log=$log&item=art%3Ae", redirect => 0)->{headers}{location},
   'https://news.example/art:e', 'an item id %-escaped: unescaped');
is($t->request('GET', "/app/v0/event/click?ad_log=$log", redirect => 0)->{status}, 404, 'no item at all: 404');
is($t->request('GET', "/app/v0/event/click?ad_log=$log&item=" . ('x' x 300), redirect => 0)->{status}, 404,
   'an item id longer than any: 404');
ok($t->wait_until(10, sub { $t->stat_sum("u:$U:clk") == 1 && $t->stat_sum("u:$U:ads") == 1 }),
   'the unit counted its ad and one click (one per answer, like an ad\'s)');

# ---- what gives no items ----------------------------------------------------------------------------
is($t->ad($U, body())->{status}, 204, 'no ext.item_id: 204');
is($t->ad($U, body(item_id => 'art:l'))->{status}, 204, 'an item without a pool: 204');
is_deeply(ids($t->ad($U, body(item_id => 'art:b'))), [ 'art:c' ], 'ids the catalog lacks are skipped');
is($t->ad($U, body(item_id => 'x' x 129))->{status}, 204, 'an item_id over 128 bytes is ignored: 204');
is($t->ad($U, body(item_id => 7))->{status}, 204, 'an item_id that is not a string is ignored');

# ---- changes serve ----------------------------------------------------------------------------------
is($t->api('PATCH', "/api/associated-items-pools/$pool->{id}",
           json => { items => [ { item_id => 'art:k', score => 2 }, { item_id => 'art:j', score => 3 } ] })->{status}, 200,
   'the pool changes');
current();
is_deeply(ids($t->ad($U, body(item_id => 'art:a'))), [ 'art:j', 'art:k' ], '... and serves, ranked by score');
is($t->api('PATCH', "/api/ad-units/$U", json => { recommendation => { topn => 1 } })->{status}, 200, 'topn 1');
current();
is_deeply(ids($t->ad($U, body(item_id => 'art:a'))), [ 'art:j' ], '... one item');
my ($jid) = map { $_->{id} } @{ $t->api('GET', '/api/catalog-items?item_id=art:j')->{json}{items} };
is($t->api('PATCH', "/api/catalog-items/$jid", json => { title => 'Renamed' })->{status}, 200, 'an item changes');
current();
is($t->ad($U, body(item_id => 'art:a'))->{json}{ad}{recommendation}{items}[0]{title}, 'Renamed', '... and serves');

# ---- the fallback chain: presets fill what the algorithm leaves -------------------------------------------
sub rec_unit {
    my ($name, %rec) = @_;
    my $u = $t->created('/api/ad-units', { code => "rec-$name-$$", name => "Related, $name", status => 'ACTIVE',
                                           recommendation => { %rec }, ext => { recommendation => { enabled => 1 } } });
    return $u->{id};
}
sub preset { my ($items, %o) = @_; return { type => 'preset', items => [ map { ref $_ ? $_ : { id => $_ } } @$items ], %o } }
sub sources { my ($res) = @_; [ map { "$_->{id}/$_->{source}" } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }
my %fu;
$fu{chain} = rec_unit('chain', topn => 5, fallback => [
    preset([ { id => 'art:b', expire => '2020-01-01T00:00:00Z' }, 'art:c', 'art:j', 'art:zz', 'art:a' ]),
    { type => 'popular' },
    preset([ 'art:d', { id => 'art:e', expire => '2099-01-01T00:00:00Z' }, 'art:f' ]) ]);
# written past the API: an expire that is not a date-time counts as past
my $odd = $t->api('GET', "/api/ad-units/$fu{chain}")->{json};
$odd->{recommendation}{fallback}[0]{items}[1]{expire} = 12345;
$t->put(ad_units => $odd);
$fu{timeout_only} = rec_unit('timeout-only', topn => 3, fallback => [ preset([ 'art:c' ], activation => 'timeout_only') ]);
$fu{random} = rec_unit('random', topn => 3, fallback => [ preset([ map { "art:$_" } 'b' .. 'i' ], order => 'random') ]);
current();
is_deeply(sources($t->ad($fu{chain}, body(item_id => 'art:a'))),
          [ 'art:j/algorithm', 'art:k/algorithm', 'art:d/preset', 'art:e/preset', 'art:f/preset' ],
          'the pool first, then the presets in chain order: expired, repeated, unknown and viewed items skipped');
is($t->request('GET', "/app/v0/vast/$fu{chain}")->{content}, '<VAST version="4.2"/>',
   'GET /app/v0/vast on a recommendation unit: no ad');
is_deeply(sources($t->ad($fu{chain}, body(item_id => 'art:l'))),
          [ map { "art:$_/preset" } qw(j a d e f) ],
          'no pool for the item: the presets alone, topn of them (art:c\'s expire, 12345, is no date: past)');
is_deeply(sources($t->ad($fu{chain}, body())), [ map { "art:$_/preset" } qw(j a d e f) ],
          '... nor an item at all');
is($t->ad($fu{timeout_only}, body(item_id => 'art:l'))->{status}, 204,
   'a preset activated only on a timeout: never used without a target service (204)');
my (%first, $dups);
for (1 .. 40) {
    my $got = ids($t->ad($fu{random}, body(item_id => 'art:l')));
    $first{ $got->[0] // '' }++;
    my %seen;
    $dups++ if grep { $seen{$_}++ } @$got;
    $dups++ if @$got != 3 || grep { !/^art:[b-i]$/ } @$got;
}
cmp_ok(scalar keys %first, '>=', 4, 'order random: 40 answers begin with ' . join(', ', sort keys %first));
ok(!$dups, '... each three distinct items of the preset');

# ---- snapshot fallbacks: a file of ids in the folder adserve_rec_snapshots names -----------------------
my $dir = $t->var . '/rec-snapshots';
ok(-d $dir, 'the run scripts make the snapshot folder');
sub write_file { my ($path, $text) = @_; open my $fh, '>', $path or die "$path: $!"; print $fh $text; close $fh }
mkdir "$dir/editors";
write_file("$dir/editors/picks.txt", "# the editors' picks\nart:g\n\nart:zz\nart:h\n" . ('x' x 300) . "\nart:i\r\nart:b\n");
write_file($t->var . '/outside.txt', "art:c\n");
symlink($t->var . '/outside.txt', "$dir/escape.txt") or die "symlink: $!";
$fu{snapshot} = rec_unit('snapshot', topn => 4, fallback => [ { type => 'snapshot', path => 'editors/picks.txt' } ]);
$fu{mixed} = rec_unit('mixed', topn => 5, fallback => [ { type => 'snapshot', path => 'editors/picks.txt', order => 'random' },
                                                        { type => 'snapshot', path => 'no-such-file' },
                                                        { type => 'snapshot', path => 'escape.txt' } ]);
for my $bad ('../outside.txt', '/etc/passwd', 'editors/../../outside.txt', 'a//b', './picks', 'with space', '') {
    my $res = $t->api('POST', '/api/ad-units', json => { code => "bad-snap-$$-" . length($bad) . ($bad =~ tr/a-z//),
        name => 'Bad', recommendation => { fallback => [ { type => 'snapshot', path => $bad } ] },
        ext => { recommendation => { enabled => 1 } } });
    $t->refused($res, 422, qr/^recommendation\.fallback\[0\]\.path: /, "a snapshot path \"$bad\"");
}
# written past the API: the build refuses it as well
my $escaping = $t->api('GET', "/api/ad-units/$fu{snapshot}")->{json};
$escaping->{recommendation}{fallback} = [ { type => 'snapshot', path => '../outside.txt' } ];
$escaping->{id} = $t->uuid;
$escaping->{code} = "escaping-$$";
$t->put(ad_units => $escaping);
current();
is_deeply(sources($t->ad($fu{snapshot}, body(item_id => 'art:l'))), [ map { "art:$_/snapshot" } qw(g h i b) ],
          'a snapshot fallback: the file\'s ids in order (comments, blank lines, unknown ids, an over-long line skipped)');
is_deeply(sources($t->ad($fu{snapshot}, body(item_id => 'art:a'))),
          [ 'art:j/algorithm', 'art:k/algorithm', 'art:g/snapshot', 'art:h/snapshot' ],
          '... after the algorithm\'s items');
my %orders;
$orders{ join ',', @{ ids($t->ad($fu{mixed}, body(item_id => 'art:l'))) } }++ for 1 .. 20;
ok(keys %orders > 1 && !grep({ join(',', sort split /,/) ne 'art:b,art:g,art:h,art:i' } keys %orders),
   'order random: the same four items shuffled (' . scalar(keys %orders) . ' orders in 20); a missing file, and a '
   . 'symbolic link out of the folder, give nothing');
is($t->ad($escaping->{id}, body(item_id => 'art:l'))->{status}, 204, 'a path out of the folder written past the API: no items');

# ---- tracking modes ---------------------------------------------------------------------------------
my %units;
for my $mode (qw(on_ad_response on_event_tracker)) {
    $units{$mode} = $t->created('/api/ad-units', { code => "rec-$mode-$$", name => "Related, $mode", status => 'ACTIVE',
                                                   recommendation => { topn => 3, ad_log_tracking_mode => $mode },
                                                   ext => { recommendation => { enabled => 1 } } })->{id};
}
current();
my %answers;
for my $mode (keys %units) {
    $answers{$mode} = [ map { $t->ad($units{$mode}, body(item_id => 'art:a')) } 1 .. 3 ];
}
ok($t->wait_until(10, sub { $t->stat_sum("u:$units{on_ad_response}:imp") == 3 }),
   'on_ad_response: each answer counted its impression when it was made');
is($t->stat_sum("u:$units{on_event_tracker}:imp"), 0, 'on_event_tracker: none yet');
$t->request('GET', $_->{json}{ad}{impression_url} =~ s{^\Q$base\E}{}r) for @{ $answers{on_event_tracker} }[0, 1];
ok($t->wait_until(10, sub { $t->stat_sum("u:$units{on_event_tracker}:imp") == 2 }),
   '... two when two trackers were called');
$t->request('GET', $answers{on_event_tracker}[0]{json}{ad}{impression_url} =~ s{^\Q$base\E}{}r);
ok($t->wait_until(10, sub { $t->stat_sum('dup:imp') == 1 }), '... a tracker called again is a repeat');
is($t->stat_sum("u:$units{on_event_tracker}:imp"), 2, '... and counts once');
is($t->request('POST', '/app/v0/event', json => { ad_log => $answers{on_event_tracker}[2]{json}{ext}{ad_log},
                                                type => 'conversion', value => 5 })->{status}, 204,
   'a conversion on a recommendation\'s token');
ok($t->wait_until(10, sub { $t->stat_sum("u:$units{on_event_tracker}:convval") == 5_000_000 }), '... counted for the unit');
my @stray = grep { /^(?:li|cr)::/ } map { split /\n/, $t->redis('HKEYS', $_) } split /\n/, $t->redis('--scan', '--pattern', 'adserve:stats:*');
is_deeply(\@stray, [], 'no counter of an empty line item or creative id');

# ---- ads are untouched: a display unit beside ------------------------------------------------------------
my $d = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($d->{rev}) }), 'a display chain');
is($t->ad($d->{unit})->{json}{ad}{id}, $d->{creative}, 'a display unit still serves its ad');
unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');

done_testing;
