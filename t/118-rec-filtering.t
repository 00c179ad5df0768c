# Recommendation filtering on the real stack (README "Recommendation"):
# content_filter_rule, compiled by the engine's targeting compiler, over the
# items' attributes and the request's ext.kv, refused by the API where it
# does not compile; candidate_filtering over the user's view history in
# Redis, written after every answer and item click, read by both workers
# (ViewOut drops what the user was shown or viewed, ViewPenalty ranks it
# last); and the history's bounds and its safe outcome when Redis is late.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(test_clock => 1);   # the history's age bound
sub current { ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the change') }
sub body {
    my ($user, %ext) = @_;
    return { version => '0.1.0', device => { ua => 'Mozilla/5.0' }, defined $user ? (user => { id => $user }) : (),
             %ext ? (ext => { %ext }) : () };
}
sub ids { my ($res) = @_; [ map { $_->{id} } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }
sub rec_unit {
    my ($name, %rec) = @_;
    return $t->created('/api/ad-units', { code => "rec-$name-$$", name => "Related, $name", status => 'ACTIVE',
                                          recommendation => { %rec }, ext => { recommendation => { enabled => 1 } } })->{id};
}
sub cmp_rule { my ($lhs, $op, $rhs) = @_; return { type => 'cmp', data => { lhs => $lhs, op => $op, rhs => $rhs } } }
# the contract's hash of an item id as a history keeps it, and a user's history in Redis
sub fnv { Adserve::Test::history_hash(@_) }
sub history { $t->history(@_) }

# ---- a catalog with attributes, one pool ranking all of it -------------------------------------------
my %attrs = (
    'n:1' => { section => 'sport', premium => JSON::PP::false, words => 300, tags => [ 'football', 'uk' ] },
    'n:2' => { section => 'news', premium => JSON::PP::true, words => 1200, tags => [ 'politics' ] },
    'n:3' => { section => 'sport', premium => JSON::PP::true, words => 800, tags => [ 'tennis' ] },
    'n:4' => { section => 'culture', premium => JSON::PP::false, words => 50 },
    'n:5' => { section => 'news', premium => JSON::PP::false, words => 2000, tags => [ 'uk', 'economy' ] },
    'n:6' => {},
);
for my $id (sort keys %attrs) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Story $id", url => "https://news.example/$id",
                                        attributes => $attrs{$id} });
}
for my $id (map { "n:$_" } 7 .. 20) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Story $id", url => "https://news.example/$id" });
}
$t->created('/api/associated-items-pools', { source_item_id => 'n:0', items => [
    map { { item_id => "n:$_", score => 100 - $_ } } 1 .. 20 ] });
$t->created('/api/catalog-items', { item_id => 'n:0', title => 'Story 0', url => 'https://news.example/n:0' });

# ---- content_filter_rule ------------------------------------------------------------------------------
my %f;
$f{sport} = rec_unit('sport', topn => 5, content_filter_rule => cmp_rule([ 'section' ], 'eq', 'sport'));
$f{free_long} = rec_unit('free-long', topn => 5, content_filter_rule => { type => 'and', data => [
    cmp_rule([ 'premium' ], 'eq', JSON::PP::false), cmp_rule([ 'words' ], 'ge', 100) ] });
$f{uk} = rec_unit('uk', topn => 5, content_filter_rule => cmp_rule([ 'tags' ], 'intersects', [ 'uk', 'tennis' ]));
$f{not_news} = rec_unit('not-news', topn => 3, content_filter_rule => { type => 'not', data =>
    cmp_rule([ 'section' ], 'in', [ 'news', 'culture' ]) });
# premium stories only for subscribers: the request's ext.kv decides
$f{paywall} = rec_unit('paywall', topn => 3, content_filter_rule => { type => 'or', data => [
    cmp_rule([ 'kv', 'subscriber' ], 'eq', 'yes'), cmp_rule([ 'premium' ], 'eq', JSON::PP::false) ] });
current();

is_deeply(ids($t->ad($f{sport}, body('f1', item_id => 'n:0'))), [ 'n:1', 'n:3' ],
          'section eq sport: the two sport stories, in the pool\'s rank');
is_deeply(ids($t->ad($f{free_long}, body('f1', item_id => 'n:0'))), [ 'n:1', 'n:5' ],
          'and: premium false (a boolean attribute) and words >= 100');
is_deeply(ids($t->ad($f{uk}, body('f1', item_id => 'n:0'))), [ 'n:1', 'n:3', 'n:5' ],
          'intersects over an array attribute');
is_deeply(ids($t->ad($f{not_news}, body('f1', item_id => 'n:0'))), [ 'n:1', 'n:3', 'n:6' ],
          'not in: an item without the attribute passes a not');
is_deeply(ids($t->ad($f{paywall}, body('f1', item_id => 'n:0'))), [ 'n:1', 'n:4', 'n:5' ],
          'or with a request fact: no ext.kv, the free stories only');
is_deeply(ids($t->ad($f{paywall}, body('f1', item_id => 'n:0', kv => { subscriber => 'yes' }))),
          [ 'n:1', 'n:2', 'n:3' ], '... ext.kv subscriber yes: premium ones too');
$f{none} = rec_unit('none', topn => 3, content_filter_rule => cmp_rule([ 'section' ], 'eq', 'weather'),
                    fallback => [ { type => 'preset', items => [ { id => 'n:2' }, { id => 'n:4' } ] } ]);
current();
is($t->ad($f{none}, body('f1', item_id => 'n:0'))->{status}, 204,
   'no item passes, the presets neither (the filter applies to every source): 204');

# the API refuses what the compiler cannot evaluate, with the path
my %bad = (
    'lhs of three' => [ cmp_rule([ 'a', 'b', 'c' ], 'eq', 'x'), qr/^recommendation\.content_filter_rule\.data\.lhs: must name an item attribute/ ],
    'lhs of two, not kv' => [ cmp_rule([ 'item', 'x' ], 'eq', 'x'), qr/content_filter_rule\.data\.lhs/ ],
    'lt a string' => [ cmp_rule([ 'words' ], 'lt', 'many'), qr/content_filter_rule\.data\.rhs: must be a finite number for op lt/ ],
    'in not a list' => [ { type => 'and', data => [ cmp_rule([ 'x' ], 'in', 'a') ] },
                         qr/content_filter_rule\.data\[0\]\.data\.rhs: must be an array for op in/ ],
);
for my $name (sort keys %bad) {
    my $res = $t->api('POST', '/api/ad-units', json => { code => "bad-$name-$$" =~ s/\W/-/gr, name => 'Bad',
        recommendation => { content_filter_rule => $bad{$name}[0] }, ext => { recommendation => { enabled => 1 } } });
    $t->refused($res, 422, $bad{$name}[1], "a rule with $name");
}
is($t->api('PATCH', "/api/ad-units/$f{sport}", json => { recommendation => {
    content_filter_rule => cmp_rule([ 'x' ], 'gt', [ 1 ]) } })->{status}, 422, 'a PATCH too');
# written past the API: the unit recommends nothing rather than unfiltered
my $odd = $t->api('GET', "/api/ad-units/$f{sport}")->{json};
$odd->{recommendation}{content_filter_rule} = cmp_rule([ 'a', 'b', 'c' ], 'eq', 'x');
$t->put(ad_units => $odd);
current();
is($t->ad($f{sport}, body('f1', item_id => 'n:0'))->{status}, 204,
   'a rule written past the API that does not compile: nothing passes (204)');

# ---- candidate_filtering: ViewOut, over both workers ---------------------------------------------------
my @conns = @{ $t->worker_connections };
is(scalar @conns, 2, 'two connections, one on each worker');
my $turn = 0;
sub rec { my ($unit, $user, %ext) = @_; return $t->ad($unit, body($user, %ext), via => $conns[ $turn++ % 2 ]) }

my $out = rec_unit('viewout', topn => 4, candidate_filtering => { method => 'ViewOut' });
my $pen = rec_unit('penalty', topn => 4, candidate_filtering => { method => 'ViewPenalty' },
                   fallback => [ { type => 'preset', items => [ map { { id => "n:$_" } } 1 .. 3 ] } ]);
my $nof = rec_unit('nofilter', topn => 4, candidate_filtering => { method => 'NoFilter' });
current();

is_deeply(ids(rec($out, 'vo-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'ViewOut, a new user: the top 4');
is_deeply(ids(rec($out, 'vo-1', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ],
          '... again, on the other worker: the next 4 (the first 4 were shown)');
is_deeply(ids(rec($out, 'vo-1', item_id => 'n:0')), [ map { "n:$_" } 9 .. 12 ], '... and the next');
is_deeply(ids(rec($out, 'vo-2', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'another user: the top 4 again');
is_deeply(ids(rec($nof, 'vo-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'NoFilter: the history changes nothing');

# a viewed item (the request's ext.item_id) is history too, and so is a click
rec($out, 'vo-3', item_id => 'n:2');
my $res = rec($out, 'vo-3', item_id => 'n:0');
ok(!grep({ $_ eq 'n:2' } @{ ids($res) }), 'an item the user viewed (an earlier ext.item_id) is out');
is_deeply(ids($res), [ 'n:1', 'n:3', 'n:4', 'n:5' ], '... the others in rank');
my $clicked = $res->{json}{ad}{recommendation}{items}[1];
is($t->request('GET', $clicked->{click_url} =~ s{^\Q${\ $t->base }\E}{}r, redirect => 0)->{status}, 302, 'a click on n:3');
# the node holds a user's entries for adserve_history_delay (1 s), then writes them in one APPEND
ok($t->wait_until(5, sub { $t->history_len('vo-3') == 7 }),
   'the entries reach Redis after the delay');
my %kinds;
push @{ $kinds{ $_->[2] } }, $_->[0] for history('vo-3');
is_deeply([ map { scalar @{ $kinds{$_} // [] } } qw(s v) ], [ 4, 3 ],
          'the history in Redis: 8-byte entries, 4 shown (s), 3 viewed (v): two requests (the first '
          . 'had no items) and a click');
is_deeply($kinds{v}, [ fnv('n:2'), fnv('n:0'), fnv('n:3') ], '... the views in order: n:2, n:0, then the click on n:3');
ok((grep { $_ eq fnv('n:5') } @{ $kinds{s} }), '... n:5 among the shown');
my $ttl = $t->redis('TTL', Adserve::Test::history_key('vo-3'));
ok($ttl > 6 * 86400 && $ttl <= 7 * 86400, "it expires with its last entry, in 7 days ($ttl s)");

# ---- ViewPenalty: seen items go last, and still fill -----------------------------------------------------
is_deeply(ids(rec($pen, 'vp-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'ViewPenalty, a new user: the top 4');
is_deeply(ids(rec($pen, 'vp-1', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ], '... then the next 4 first');
my $nof18 = rec_unit('nofilter-18', topn => 18);
current();
rec($nof18, 'vp-2', item_id => 'n:0');
is_deeply(ids(rec($pen, 'vp-2', item_id => 'n:0')), [ 'n:19', 'n:20', 'n:1', 'n:2' ],
          'a user who saw 18 of 20: the 2 unseen, then the seen ones in rank');

# ---- bounds -----------------------------------------------------------------------------------------
$t->ad($nof, body('vb-1', item_id => 'n:0'), headers => { 'x-adserve-clock' => time - 8 * 86400 });
is(scalar(history('vb-1')), 5, 'shown 8 days ago: 4 shown, 1 viewed');
# (a worker's test clock only goes forward: now again, on both)
$t->ad($nof, body('vb-0'), via => $_, headers => { 'x-adserve-clock' => time }) for @conns;
is_deeply(ids(rec($out, 'vb-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ],
          'an entry older than 7 days does not count');
# the cut follows APPEND's reply: a round trip after the answer; a script
# called by its SHA-1 (EVALSHA), its text never sent again (no EVAL)
my $evals = sub { $t->redis('INFO', 'commandstats') =~ /^cmdstat_(evalsha?):calls=(\d+)/mg };
my %before = $evals->();
my (@lengths, $cut);
for (1 .. 34) {
    rec($nof18, 'vb-2', item_id => 'n:0');
    my $ok = $t->wait_until(2, sub { $t->history_len('vb-2') < 600 });
    $cut //= $_ if $_ == 32 && $ok;
    push @lengths, $t->history_len('vb-2');
}
is_deeply([ @lengths[0, 1, 29, 30, 31, 32] ], [ 19, 38, 570, 589, 200, 219 ],
          'the history grows 19 entries an answer; at 600 (3 times the 200 kept) it is cut to its latest 200');
ok($cut, '... within 2 s of the answer that made it 608');
my %after = $evals->();
is(($after{eval} // 0) - ($before{eval} // 0), 0, '... by a script not sent whole (no EVAL)');
cmp_ok(($after{evalsha} // 0) - ($before{evalsha} // 0), '>=', 1, '... but called by its SHA-1 (EVALSHA)');
is_deeply((history('vb-2'))[-1], [ fnv('n:0'), (history('vb-2'))[-1][1], 'v' ], '... the latest kept, last');
my $ttl2 = $t->redis('TTL', Adserve::Test::history_key('vb-2'));
ok($ttl2 > 6 * 86400 && $ttl2 <= 7 * 86400, "... and still expires with its last entry ($ttl2 s)");
# the TTL of a user the node's copy does not hold (NoFilter reads no history): set when APPEND's reply
# shows the string new, or grown past a multiple of 64 entries (ADSERVE_HISTORY_TTL_EVERY): not on every
# write. 19 entries an answer: 19, 38, 57, then 76 crosses 64.
rec($nof18, 'vt-1', item_id => 'n:0');
ok($t->wait_until(2, sub { $t->redis('TTL', Adserve::Test::history_key('vt-1')) > 6 * 86400 }), 'a new history gets its TTL at once');
$t->redis('EXPIRE', Adserve::Test::history_key('vt-1'), 1000);
my @ttls;
for (2 .. 4) {
    rec($nof18, 'vt-1', item_id => 'n:0');
    $t->wait_until(2, sub { $t->history_len('vt-1') == 19 * $_ });
    # an EXPIRE would come a round trip after the append: time for it to land, or not
    $t->wait_until(0.5, sub { $t->redis('TTL', Adserve::Test::history_key('vt-1')) > 1000 });
    push @ttls, $t->redis('TTL', Adserve::Test::history_key('vt-1')) > 1000 ? 'refreshed' : 'kept';
}
is_deeply(\@ttls, [ 'kept', 'kept', 'refreshed' ],
          '... then kept at 38 and 57 entries, and set again when the string passes 64 (76)');

# ---- the node's copy (adserve_history_zone, refresh 2 s) -------------------------------------------
# The workers' test clocks stand still here: each step moves both on, past the refresh.
my $clock = time + 10;
sub tick { $clock += shift; $t->ad($nof, body('tick'), via => $_, headers => { 'x-adserve-clock' => $clock }) for @conns }
# an entry as another node appends it: [item, kind] at the clock
sub other_node {
    my ($user, @items) = @_;
    $t->history_append($user, map { Adserve::Test::history_entry($_, 'v', $clock) } @items);
}
tick(0);
my $zone0 = $t->status->{history_zone};
ok($zone0 && $zone0->{users} > 10000, "a status shows the node's copy: room for $zone0->{users} users");
is_deeply(ids(rec($out, 'hz-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'a new user: read from Redis, the top 4');
ok($t->wait_until(2, sub { $t->history_len('hz-1') == 5 }), '... their 5 entries in Redis');
$t->redis('DEL', Adserve::Test::history_key('hz-1'));
is_deeply(ids(rec($out, 'hz-1', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ],
          '... within the refresh, the other worker filters from the node\'s copy, not Redis (deleted there)');
my $zone1 = $t->worker_status;
my $hits = 0; $hits = $_->{history_zone}{hits} for values %$zone1;
ok($hits > $zone0->{hits}, "... counted as a hit of the copy ($zone0->{hits} then $hits)");
my $prom = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is($prom->{'adserve_history_copy_total{result="hit"}'}, $hits, '... which /metrics shows, node-wide');
ok($prom->{'adserve_history_copy_total{result="read"}'} >= 2, '... beside the reads of Redis');
# (a user's answers are held adserve_history_delay, 1 s, before they go to Redis: a test clock
# moves 3 s in no time, so a read past the refresh finds them held, and merges them exactly)
tick(3);
is_deeply(ids(rec($out, 'hz-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ],
          'past the refresh, Redis is read again and its word is the history: the deleted answer counts no more');
is_deeply(ids(rec($out, 'hz-1', item_id => 'n:0')), [ map { "n:$_" } 9 .. 12 ],
          '... and what the node added since counts (5 to 8 in Redis, 1 to 4 in the copy)');
# back to back, the second request on the other worker: the copy has the first answer before Redis may
my $repeats = 0;
for my $i (1 .. 100) {
    my %first = map { $_ => 1 } @{ ids(rec($out, "bb-$i", item_id => 'n:0')) };
    $repeats += grep { $first{$_} } @{ ids(rec($out, "bb-$i", item_id => 'n:0')) };
}
is($repeats, 0, '100 new users, two requests back to back on the two workers: no item repeated');
# another node's views: seen at the next read, not before
rec($out, "hz-$_", item_id => 'n:0') for 2, 3;
other_node("hz-$_", 'n:5', 'n:6') for 2, 3;
is_deeply(ids(rec($out, 'hz-2', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ],
          "another node's views, within the refresh: not known here yet");
tick(3);
is_deeply(ids(rec($out, 'hz-3', item_id => 'n:0')), [ map { "n:$_" } 7 .. 10 ],
          '... past it: read, and filtered');
# a user's copy is a ring of 200 entries: past it, the newest go over the oldest
tick(3);
is_deeply(ids(rec($out, 'hr-1', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'a ring: a new user, the top 4');
rec($nof18, 'hr-1', item_id => 'n:0') for 1 .. 11;
is_deeply(ids(rec($pen, 'hr-1', item_id => 'n:0')), [ 'n:19', 'n:20', 'n:1', 'n:2' ],
          '... 214 entries later (past the ring\'s 200), the copy knows the 18 shown since');
$t->redis('DEL', Adserve::Test::history_key('hr-1'));
my $full = rec($out, 'hr-1', item_id => 'n:0');
is_deeply([ $full->{status}, @{ ids($full) } ], [ 204 ],
          '... and the newest, written over the oldest: with Redis\'s deleted, every item is seen');

# the TTL of a user the copy holds: set when the string is new, then once an hour of their writes
# (ADSERVE_HISTORY_TTL_REFRESH), however many entries they make, so that a light user's history expires
# with their latest entries too, and a heavy one's costs one EXPIRE an hour
tick(3);
rec($out, 'ht-1', item_id => 'n:0');
ok($t->wait_until(3, sub { $t->redis('TTL', Adserve::Test::history_key('ht-1')) > 6 * 86400 }), 'a user in the copy: a new history gets its TTL');
$t->redis('EXPIRE', Adserve::Test::history_key('ht-1'), 1000);
my @hour;
for my $k (1 .. 5) {
    tick($k < 5 ? 600 : 3600);
    rec($nof18, 'ht-1', item_id => 'n:0');
    $t->wait_until(3, sub { $t->history_len('ht-1') == 5 + 19 * $k });
    $t->wait_until(0.5, sub { $t->redis('TTL', Adserve::Test::history_key('ht-1')) > 1000 });
    push @hour, $t->redis('TTL', Adserve::Test::history_key('ht-1')) > 1000 ? 'refreshed' : 'kept';
}
is_deeply(\@hour, [ ('kept') x 4, 'refreshed' ],
          '... kept through 40 minutes of writes (24 to 81 entries: past 64 too), set again an hour on');

# ---- without a user, and with Redis stalled --------------------------------------------------------------
is_deeply(ids(rec($out, undef, item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'no user id: nothing to filter by');
tick(3);
rec($out, 'hz-o', item_id => 'n:0');
tick(8 * 86400);    # hz-o's copy is 8 days old: past the history's 7
rec($out, 'hz-4', item_id => 'n:0');
my $port = $t->env->{ADSERVE_REDIS_PORT};
system("redis-cli -p $port EVAL 'local s = redis.call(\"TIME\")[1] + 2; "
       . "while tonumber(redis.call(\"TIME\")[1]) < s do end return 1' 0 >/dev/null 2>&1 &");
ok($t->wait_until(1.5, sub { $t->redis_stalled }), 'Redis is stalled by a script');
is_deeply(ids(rec($out, 'hz-4', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ],
          'Redis stalled: a user the node read lately is filtered from its copy');
tick(3);
is_deeply(ids(rec($out, 'hz-4', item_id => 'n:0')), [ map { "n:$_" } 9 .. 12 ],
          '... one it read longer ago than the refresh: the read misses its deadline, the older copy filters');
is_deeply(ids(rec($out, 'hz-o', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ],
          '... an older copy\'s entries past the 7 days do not count');
is_deeply(ids(rec($out, 'vo-9', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ],
          '... a user new to the node: the answer comes unfiltered');
ok($t->wait_until(10, sub { ids(rec($out, 'vo-9', item_id => 'n:0'))->[0] ne 'n:1' }),
   '... once Redis answers, the history filters again');
like($t->log_text('nginx-error.log'), qr/view history not read in time, recommending from the node's older copy/,
     'the late reads are logged');
like($t->log_text('nginx-error.log'), qr/view history not read in time, recommending without it/,
     '... both kinds');
# the copy is the node's: a reload's new workers find it
tick(3);
is_deeply(ids(rec($out, 'hz-r', item_id => 'n:0')), [ map { "n:$_" } 1 .. 4 ], 'before a reload: the top 4');
ok($t->wait_until(2, sub { $t->history_len('hz-r') == 5 }), '... in Redis');
$t->redis('DEL', Adserve::Test::history_key('hz-r'));
my @old = $t->workers;
is($t->nginx('-s', 'reload'), 0, 'nginx -s reload');
ok($t->wait_until(10, sub { my %o = map { $_ => 1 } @old; my @w = $t->workers; @w == 2 && !grep { $o{$_} } @w }),
   '... new workers');
@conns = @{ $t->worker_connections };
tick(0);
is_deeply(ids(rec($out, 'hz-r', item_id => 'n:0')), [ map { "n:$_" } 5 .. 8 ],
          '... filter from the copy the old ones filled (Redis has no history for the user)');
unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');

done_testing;
