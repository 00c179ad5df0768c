# The recommendation jobs on the real stack (README "Recommendation"):
# serving counts each request's viewed item per serving context in
# adserve:pop:{hour} through its flush; the sidecar's job ranks them into
# popular_items records (only what changed), and a popular fallback serves
# its context's ranking within a second; the counts per item and per source
# (shown, view, clk) land in the stats hashes; and the co-view algorithm
# recommends B after users viewed A then B, from their view histories.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX qw(strftime);
use Adserve::Test;

my $t = Adserve::Test->new(test_clock => 1);   # co-view: views spaced in time
sub current { ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the change') }
sub body {
    my (%ext) = @_;
    return { version => '0.1.0', user => { id => 'pop-reader' }, device => { ua => 'Mozilla/5.0' },
             %ext ? (ext => { %ext }) : () };
}
sub items { my ($res) = @_; [ map { "$_->{id}/$_->{source}" } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }
sub rec_unit {
    my ($name, %rec) = @_;
    return $t->created('/api/ad-units', { code => "pop-$name-$$", name => "Popular, $name", status => 'ACTIVE',
                                          recommendation => { %rec }, ext => { recommendation => { enabled => 1 } } })->{id};
}
sub run_jobs {
    my $res = $t->api('POST', '/api/recommendation-jobs/run');
    is($res->{status}, 200, 'POST /api/recommendation-jobs/run: 200') or diag $res->{content};
    return $res->{json} // {};
}
my $hour = strftime('%Y%m%d%H', gmtime);

for my $id (map { "p:$_" } 1 .. 8) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Story $id", url => "https://pop.example/$id" });
}
my $all = $t->created('/api/ad-units', { code => "pop-all-$$", name => 'Popular, all', status => 'ACTIVE',
    recommendation => { topn => 3, fallback => [ { type => 'popular' } ] },
    ext => { algorithm => 'none-of-ours', recommendation => { enabled => 1 } } })->{id};
my $blog = rec_unit('blog', topn => 3, fallback => [ { type => 'popular', serving_context => 'blog' } ]);
my $late = rec_unit('timeout-only', topn => 3, fallback => [ { type => 'popular', activation => 'timeout_only' } ]);
current();

is($t->ad($all, body(item_id => 'p:1'))->{status}, 204, 'nothing counted yet: the popular fallback has nothing (204)');

# views: p:3 five times, p:2 three, p:5 twice (in "blog"), p:7 once; plus views in an
# unknown context and of an item the catalog lacks
my %views = ('p:3' => 5, 'p:2' => 3, 'p:7' => 1);
for my $id (sort keys %views) { $t->ad($all, body(item_id => $id)) for 1 .. $views{$id} }
$t->ad($blog, body(item_id => 'p:5', context => 'blog')) for 1 .. 2;
$t->ad($blog, body(item_id => 'p:4', context => 'nobody-asks'));
$t->ad($all, body(item_id => 'p:ghost'));

my %want = ("all/p:3" => 5, "all/p:2" => 3, "all/p:7" => 1, "all/p:5" => 2, "all/p:4" => 1, "blog/p:5" => 2);
ok($t->wait_until(10, sub { !grep { ($t->redis('HGET', "adserve:pop:$hour", $_) || 0) != $want{$_} } keys %want }),
   'the flush counted each view in "all", and in "blog" (a context a fallback queries)')
    or diag $t->redis('HGETALL', "adserve:pop:$hour");
is($t->redis('HEXISTS', "adserve:pop:$hour", 'nobody-asks/p:4'), 0, '... not in a context no fallback queries');
is($t->redis('HEXISTS', "adserve:pop:$hour", 'all/p:ghost'), 0, '... nor an item the catalog lacks');

my $r = run_jobs();
cmp_ok($r->{written}, '>=', 1, "the job wrote the rankings ($r->{written} written, $r->{views} views read)");
my $rec = JSON::PP::decode_json($t->redis('HGET', 'adserve:popular_items', 'all'));
is_deeply($rec->{items}, [ 'p:3', 'p:2', 'p:5', 'p:1', 'p:4', 'p:7' ],
          'all: most viewed first, ties by id (p:1 was viewed by the first request)');
my $ttl = $t->redis('TTL', "adserve:pop:$hour");
ok($ttl > 0 && $ttl <= 90000, "the hour's popularity hash expires ($ttl s)");
is(run_jobs()->{written}, 0, 'run again with nothing new: nothing written (nodes do not rebuild)');
current();

is_deeply(items($t->ad($all, body())), [ 'p:3/popular', 'p:2/popular', 'p:5/popular' ],
          'the popular fallback: the top 3 of "all"');
is_deeply(items($t->ad($all, body(item_id => 'p:3'))), [ 'p:2/popular', 'p:5/popular', 'p:1/popular' ],
          '... never the item being viewed');
is_deeply(items($t->ad($blog, body())), [ 'p:5/popular' ], 'serving_context blog: its own ranking');
is($t->ad($late, body())->{status}, 204, 'activation timeout_only: not without a timeout (204)');

# the counts per item and per source
my $res = $t->ad($all, body(item_id => 'p:8'));
my ($first) = @{ $res->{json}{ad}{recommendation}{items} };
like($first->{click_url}, qr/&item=p:3&src=popular$/, "an item's click URL names its source");
is($t->request('GET', $first->{click_url} =~ s{^\Q${\ $t->base }\E}{}r, redirect => 0)->{status}, 302, 'a click');
is($t->request('GET', ($first->{click_url} =~ s{^\Q${\ $t->base }\E}{}r) =~ s/src=popular/src=bogus/r,
               redirect => 0)->{status}, 302, 'a click with a source not of the vocabulary still lands');
ok($t->wait_until(10, sub { $t->stats_are("it:p:3:clk" => 2, "rs:$all/popular:clk" => 1) }),
   'it:{item}:clk counts both clicks; rs:{unit}/popular:clk only the one naming a real source')
    or diag join ' ', map { "$_=" . $t->stat_sum($_) } "it:p:3:clk", "rs:$all/popular:clk";
ok($t->wait_until(10, sub { $t->stat_sum("it:p:3:view") == 6 && $t->stat_sum("it:p:8:view") == 1 }),
   'it:{item}:view: the requests that viewed it');
is($t->stat_sum("it:p:3:shown"), 2, 'it:{item}:shown: the answers that showed it');
is($t->stat_sum("rs:$all/popular:shown"), 3 + 3 + 3, "rs:{unit}/popular:shown: each item shown by the unit's popular fallback");

# ... and in the report: per source, with CTR and its interval; per item
my $m = $t->api('GET', "/api/metrics/recommendations?ad_unit_id=$all");
is($m->{status}, 200, 'GET /api/metrics/recommendations: 200') or diag $m->{content};
is_deeply([ map { [ @$_{qw(source shown clicks)} ] } @{ $m->{json}{sources} } ], [ [ 'popular', 9, 1 ] ],
          '... the popular source: 9 shown, 1 click');
my ($src) = @{ $m->{json}{sources} };
ok(abs($src->{ctr} - 1 / 9) < 1e-6 && $src->{ctr_low} < $src->{ctr} && $src->{ctr} < $src->{ctr_high}
   && $src->{ctr_low} >= 0 && $src->{ctr_high} <= 1,
   "... its CTR 1/9 inside its 95% interval [$src->{ctr_low}, $src->{ctr_high}]");
is_deeply([ @{ $m->{json} }{qw(algorithm target_service requests answers)} ], [ 'none-of-ours', JSON::PP::false, 14, 3 ],
          '... the unit: its algorithm, requests and answers with items');
my ($p3) = grep { $_->{item_id} eq 'p:3' } @{ $m->{json}{items} };
is_deeply([ @$p3{qw(shown views clicks)} ], [ 2, 6, 2 ], '... the item p:3: shown 2, viewed 6, clicked 2');
is($t->api('GET', '/api/metrics/recommendations?ad_unit_id=' . $t->uuid)->{status}, 404, '... an unknown unit: 404');
is($t->api('GET', '/api/metrics/recommendations')->{status}, 422, '... no unit: 422');

# ---- co-view: users who viewed A then B ----------------------------------------------------------
for my $id (map { "c:$_" } qw(a b c d)) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Coview $id", url => "https://pop.example/$id" });
}
my $cv = $t->created('/api/ad-units', { code => "coview-$$", name => 'Co-view', status => 'ACTIVE',
    recommendation => { topn => 3 }, ext => { algorithm => 'coview', recommendation => { enabled => 1 } } })->{id};
my $axa0 = rec_unit('axa0', topn => 3);
# the spec's ext.algorithm is any string: one adserve does not have gives no items of its own
my $bogus = $t->created('/api/ad-units', { code => "bogus-$$", name => 'Bogus', status => 'ACTIVE',
    recommendation => { topn => 3, fallback => [ { type => 'preset', items => [ { id => 'c:d' } ] } ] },
    ext => { algorithm => 'bogus', recommendation => { enabled => 1 } } })->{id};
current();
my $T = time - 3600;
sub view {
    my ($user, $item, $at) = @_;
    return $t->ad($cv, { version => '0.1.0', user => { id => $user }, ext => { item_id => $item } },
                  headers => { 'x-adserve-clock' => $at });
}
for my $u (1 .. 5) {
    view("cv-$u", 'c:a', $T);
    view("cv-$u", 'c:b', $T + 60);
    view("cv-$u", 'c:c', $T + 120) if $u <= 2;
}
view('cv-6', 'c:c', $T);
view('cv-6', 'c:a', $T + 60);
view('cv-7', 'c:a', $T - 3 * 86400);
view('cv-7', 'c:d', $T - 3 * 86400 + 2 * 86400 + 1);
$r = run_jobs();
cmp_ok($r->{histories}, '>=', 7, "the job read the users' histories ($r->{histories})");
cmp_ok($r->{pools_written}, '>=', 3, "... and wrote the co-view pools ($r->{pools_written})");
my $pool = JSON::PP::decode_json($t->redis('HGET', 'adserve:coview_pools', 'c:a'));
is_deeply($pool->{items}, [ { item_id => 'c:b', score => 5 }, { item_id => 'c:c', score => 2 } ],
          'c:a: c:b (5 users viewed it next), c:c (2); not c:d, viewed two days later')
    or diag explain $pool;
is_deeply([ map { $_->{item_id} } @{ JSON::PP::decode_json($t->redis('HGET', 'adserve:coview_pools', 'c:c'))->{items} } ],
          [ 'c:a' ], 'c:c: c:a, by the one user who viewed them in that order');
is($t->redis('HEXISTS', 'adserve:coview_pools', 'c:d'), 0, 'c:d: no one viewed anything after it');
is(run_jobs()->{pools_written}, 0, 'run again: nothing written');
current();
is_deeply(items($t->ad($cv, body(item_id => 'c:a'))), [ 'c:b/algorithm', 'c:c/algorithm' ],
          'the algorithm coview recommends B after A: the users\' order');
is($t->ad($axa0, body(item_id => 'c:a'))->{status}, 204, 'an axa0 unit does not serve co-view pools');
$t->created('/api/associated-items-pools', { source_item_id => 'c:d', items => [ { item_id => 'c:a', score => 1 } ] });
current();
is_deeply(items($t->ad($axa0, body(item_id => 'c:d'))), [ 'c:a/algorithm' ], 'a customer\'s pool for c:d serves axa0');
is($t->ad($cv, body(item_id => 'c:d'))->{status}, 204, '... and not coview (no one viewed anything after c:d)');
is_deeply(items($t->ad($bogus, body(item_id => 'c:a'))), [ 'c:d/preset' ],
          'an algorithm adserve does not have: no items of its own, the fallbacks serve');

# a day later the views are out of the window: the ranking goes. Every hour's views go (the
# co-view views above were counted an hour back, and later requests in the workers' test clock's
# hour), once the views of the requests above are flushed: a flush after the DEL would bring
# "all" back.
ok($t->wait_until(5, sub { my $s = $t->worker_status;
                           $s && !grep { $_->{events}{pending_counters} || $_->{events}{in_flight} } values %$s }),
   'the views counted above are flushed');
$t->redis('DEL', $_) for grep { /^adserve:pop:\d+$/ } split /\n/, $t->redis('KEYS', 'adserve:pop:*');
$r = run_jobs();
is($r->{removed}, 2, 'no view left in the window: both contexts\' records removed');
current();
is($t->ad($all, body())->{status}, 204, '... and the popular fallback has nothing again');
unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');

done_testing;
