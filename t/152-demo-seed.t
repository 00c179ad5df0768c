# scripts/demo, the demo publisher's seed, and make run's use of it: what it
# makes through the API, the page it writes, a second run changing nothing,
# a change of ports fixing the creatives, ADSERVE_DEMO=off, and a failed
# seed leaving the stack running.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $demo = $t->demo_base;

# ---- make run, as a new user runs it -----------------------------------------
my $out = $t->script('run');
like($out, qr{^  demo:\s+\Q$demo\E/$}m, 'make run prints the demo page\'s URL');
like($out, qr{^  SDK:\s+\Q${\ $t->base}\E/sdk/v0/adserve\.js$}m, '... and the SDK\'s');
like($out, qr{^  console:\s+\Q${\ $t->base}\E/console/$}m, '... and the console\'s');
like($out, qr{==> demo: created ad-units}, '... after seeding the demo through the API');

my %unit = map { $_->{code} => $_ } @{ $t->api('GET', '/api/ad-units?q=demo-')->{json}{items} };
is_deeply([ sort keys %unit ], [qw(demo-empty demo-leaderboard demo-native-feed demo-native-html demo-rectangle
                                   demo-related demo-video)],
          'seven demo ad units');
is_deeply([ map { $unit{$_}{status} } sort keys %unit ], [ ('ACTIVE') x 7 ], '... all ACTIVE');
is_deeply([ map { "$_->{display}{w}x$_->{display}{h}" }
            @unit{qw(demo-rectangle demo-leaderboard demo-empty demo-native-feed demo-native-html demo-video)} ],
          [qw(300x250 728x90 300x250 600x126 300x250 640x360)], '... of the sizes the page registers');
is_deeply([ map { $unit{$_}{ext}{native}{render_mode} } qw(demo-native-feed demo-native-html) ], [qw(asset html)],
          '... a native unit in each render mode');
is($unit{'demo-video'}{ext}{video}{enabled}, 1, '... and a video player');
is($unit{'demo-related'}{ext}{recommendation}{enabled}, 1, '... and related articles, a recommendation unit');
is($unit{'demo-related'}{recommendation}{topn}, 4, '... of 4 items');

# the related articles: a catalog of the demo's articles and their pools
my $items = $t->api('GET', '/api/catalog-items?limit=100')->{json};
is($items->{total}, 12, 'a catalog of twelve articles');
is_deeply([ grep { $_->{url} ne "$demo/?article=$_->{item_id}" } @{ $items->{items} } ], [],
          '... each landing on the demo page that shows it');
is_deeply([ grep { ($_->{image} // '') !~ m{^\Q$demo\E/assets/article-\w+\.svg$} } @{ $items->{items} } ], [],
          '... with a thumbnail of the demo\'s');
is($t->api('GET', '/api/associated-items-pools?limit=100')->{json}{total}, 8, 'eight of them have related articles');

# scripts/demo saw one worker serve the demo; these requests may reach the other
ok($t->wait_until(10, sub { $t->workers_at($t->revision) }), 'every worker has the demo');
my $ad = $t->ad($unit{'demo-rectangle'}{id});
is($ad->{status}, 200, 'the rectangle serves');
is($ad->{json}{ad}{display}{banner}{img}, "$demo/assets/rectangle.svg", '... its image, on the demo server');
$ad = $t->ad($unit{'demo-leaderboard'}{id});
like($ad->{json}{ad}{display}{adm} // '', qr{href="%%CLICK_URL%%"}, 'the leaderboard serves markup with the click macro');
is($t->ad($unit{'demo-empty'}{id})->{status}, 204, 'the empty slot has no demand');
$ad = $t->ad($unit{'demo-native-feed'}{id});
is($ad->{json}{ad}{native}{ver}, '1.2', 'the in-feed slot serves a native ad in asset mode');
$ad = $t->ad($unit{'demo-native-html'}{id});
like($ad->{json}{ad}{display}{adm} // '', qr{<a class="card" href="\Q$ad->{json}{ad}{click_url}\E">},
     'the sidebar card serves it through the unit\'s style');
$ad = $t->ad($unit{'demo-video'}{id});
like($ad->{json}{ad}{video}{vast} // '', qr{<MediaFile [^>]*type="video/webm"[^>]*>\Q$demo\E/assets/demo\.webm</MediaFile>},
     'the video slot serves a VAST of the shipped WebM');
$ad = $t->ad($unit{'demo-related'}{id}, { user => { id => 'reader' }, ext => { item_id => 'mud-10k' } });
is_deeply([ map { "$_->{id}/$_->{source}" } @{ $ad->{json}{ad}{recommendation}{items} // [] } ],
          [ map { "$_/algorithm" } qw(gps-trackers shoes-grip race-food volunteers) ],
          'the related articles of the page\'s article: the first four of its pool');
$ad = $t->ad($unit{'demo-related'}{id}, { user => { id => 'reader' }, ext => { item_id => 'navigation' } });
is_deeply([ map { "$_->{id}/$_->{source}" } @{ $ad->{json}{ad}{recommendation}{items} // [] } ],
          [ map { "$_/preset" } qw(first-ultra night-running mud-10k hill-training) ],
          '... of an article without a pool: the editors\' picks');

my $http = HTTP::Tiny->new(timeout => 10);
my $page = $http->get("$demo/");
is($page->{status}, 200, 'the demo page is served on its own port');
like($page->{headers}{'content-type'}, qr{^text/html; charset=utf-8}, '... as HTML');
like($page->{content}, qr{<script async src="\Q${\ $t->base}\E/sdk/v0/adserve\.js"></script>}, '... loading the SDK from the ad server');
like($page->{content}, qr{item_id: article \|\| 'mud-10k'}, '... asking for the related articles of its article');
for my $code (sort keys %unit) {
    like($page->{content}, qr{tagid: '\Q$unit{$code}{id}\E'}, "... registering $code by its id");
}
unlike($page->{content}, qr/\{\{(?:SDK_URL|ARTICLE|demo-)/, '... with every placeholder of the seed filled');
for my $file (qw(landing.html demo.css assets/rectangle.svg assets/native-main.svg assets/demo.webm
                 assets/article-ridge.svg assets/article-forest.svg assets/article-river.svg)) {
    is($http->get("$demo/$file")->{status}, 200, "$file is served");
}

# ---- again: nothing changes ----------------------------------------------
my $rev = $t->revision;
my $audit = $t->api('GET', '/api/audit-logs?limit=1')->{json}{total};
$out = $t->script('demo');
unlike($out, qr/created|updated|is (ACTIVE|APPROVED)/, 'a second run changes nothing') or diag $out;
is($t->revision, $rev, '... the serving revision stays');
is($t->api('GET', '/api/audit-logs?limit=1')->{json}{total}, $audit, '... and no write is audited');
like($out, qr{^\Q$demo\E/$}m, '... and prints the URL again');

# ---- the demo server moved: the creatives follow -------------------------------
{
    local $t->{env}{ADSERVE_DEMO_PORT} = 1 + $t->{env}{ADSERVE_DEMO_PORT};
    $out = $t->script('demo');
}
like($out, qr{updated creatives \S+: image_url, landing_url}, 'another demo port: the image creative is fixed');
like($out, qr{updated creatives \S+: landing_url}, '... and the HTML one');
like($out, qr{updated catalog-items \S+: image, url}, '... and the articles');
$t->script('demo');

# ---- off, and failing ----------------------------------------------------------
{
    local $t->{env}{ADSERVE_DEMO} = 'off';
    like($t->script('run'), qr{^  demo:\s+off \(ADSERVE_DEMO=off\)$}m, 'ADSERVE_DEMO=off: no seed');
}
{
    local $t->{env}{ADSERVE_ADMIN_PASSWORD} = 'not-the-password';
    $out = $t->script('run');
    like($out, qr{error: demo: POST /api/auth/login: 401}, 'a wrong admin password: the seed says why');
    like($out, qr{^  demo:\s+not seeded}m, '... and make run still succeeds, saying so');
}
is($t->ad($unit{'demo-rectangle'}{id})->{status}, 200, 'the stack kept serving');

done_testing;
