# External demand at serving (issue 15, README "External demand"): an ad
# unit with allocations asks its ad sources for bids over OpenRTB 2.6
# (nginx subrequests, in parallel, within tmax), against the reference
# bidder (scripts/rtb-bidder). Checked here: every field of the bid request
# as the bidder received it; a bid against HOUSE, SPONSORSHIP and
# PRICE_PRIORITY line items; the floors; nurl with the price filled, lurl
# with the loss reason, burl on the impression (once); a source that times
# out, is down, errs or answers garbage; blocked adomain, crid and
# category; app inference from a user agent keyword; the per-source
# counters, and metric_mode hiding them from an audience.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Time::HiRes qw(time sleep);
use Adserve::Test;

my $t = Adserve::Test->new(test_clock => 1);
my $J = JSON::PP->new->canonical;
my $http = HTTP::Tiny->new(timeout => 5, keep_alive => 1);

# ---- two reference bidders, and a port where nothing listens ----------------------
my ($port_a, $port_b, $port_down) = Adserve::Test::free_ports(3);
my @bidders;
for my $b ([ $port_a, 2.5, 'seat-a' ], [ $port_b, 1.0, 'seat-b' ]) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        exec "$FindBin::Bin/../scripts/rtb-bidder", '--port', $b->[0], '--quiet', '--price', $b->[1],
             '--seat', $b->[2];
        die "exec: $!";
    }
    push @bidders, $pid;
}
END { kill 'TERM', @bidders if @bidders }

sub bidder {
    my ($port, $method, $path, $body) = @_;
    my $res = $http->request($method, "http://127.0.0.1:$port$path",
                             defined $body ? { content => $J->encode($body) } : {});
    return length($res->{content} // '') ? eval { $J->decode($res->{content}) } : undef;
}
for my $port ($port_a, $port_b) {
    ok($t->wait_until(5, sub { defined bidder($port, 'GET', '/requests') }), "bidder on $port listens");
}
sub reset_bidders {
    for my $port ($port_a, $port_b) {
        bidder($port, 'POST', '/reset');
        bidder($port, 'POST', '/behaviour', { mode => 'bid', latency_ms => 0, adomain => 'bidder.example',
                                              crid => 'rtb-creative-1', cat => 'IAB1' });
    }
}
sub notices { my ($port, $kind) = @_; [ grep { !$kind || $_->{kind} eq $kind } @{ bidder($port, 'GET', '/notices') // [] } ] }

# ---- inventory -----------------------------------------------------------------------
my $UA = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120 Mobile';
my $unit = $t->created('/api/ad-units', {
    code => "rtb-$$", name => 'Auctioned', status => 'ACTIVE', gpid => '/1234/home/top',
    ad_unit_sizes => [ { w => 300, h => 250 }, { w => 320, h => 50 } ],
    ext => { bcat => [ 'IAB25' ], target_ecpm => 0.8,
             publisher => { id => 'pub-1', name => 'Example News', domain => 'news.example',
                            page => 'https://news.example/front', seller_id => 'seller-9' },
             implicit_app_inference => { android_bundle => 'com.example.news', app_name => 'News',
                                         ua_keywords => [ 'NewsApp' ] } } });
my $src_a = $t->created('/api/ad-sources', { name => 'Bidder A', endpoint_url => "http://127.0.0.1:$port_a/openrtb2/auction",
                                             tmax_ms => 150, floor => 0.5, seat => 'seat-a' });
my $alloc_a = $t->created('/api/allocations', { ad_source_id => $src_a->{id}, target => 'ad_unit',
                                               target_id => $unit->{id}, share => 100 });
$t->created('/api/blocked-creatives', { kind => 'adomain', value => 'blocked.example' });
reset_bidders();
ok($t->wait_until(10, sub { $t->workers_at($t->revision) }), 'every worker serves the unit and its allocation');

my $body = { version => '0.1.0', user => { id => 'user-42', yob => 1990, gender => 'F' }, device => { ua => 'Mozilla/5.0 (X11; Linux x86_64)' } };
my $res = $t->ad($unit->{id}, $body);
is($res->{status}, 200, 'an allocated unit that no line item fills: the bid serves (200)');
my $ad = $res->{json}{ad} // {};
is_deeply($ad->{display}, { w => 300, h => 250, adm => '<div class="rtb-ad">a reference bid</div>' },
          '... as ad.display: the bid\'s markup at its size');
like($ad->{id}, qr/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, '... ad.id: the external creative\'s id');
like($ad->{impression_url}, qr{/app/v0/event/impression\?ad_log=}, '... an impression URL');
ok($res->{json}{ext}{ad_log}, '... and an ad_log');

# ---- the bid request, as the bidder received it ----------------------------------------
my ($req) = @{ bidder($port_a, 'GET', '/requests') };
like($req->{id}, qr/^[0-9a-f]{32}$/, 'bid request: an id');
my $imp = $req->{imp}[0] // {};
is($imp->{tagid}, $unit->{id}, 'imp.tagid: the unit');
is_deeply($imp->{banner}{format}, [ { w => 300, h => 250 }, { w => 320, h => 50 } ], 'imp.banner.format: its sizes');
is($imp->{ext}{gpid}, '/1234/home/top', 'imp.ext.gpid');
is($imp->{bidfloor}, 0.8, 'imp.bidfloor: the larger of the source\'s floor (0.5) and the unit\'s target_ecpm (0.8)');
is($imp->{bidfloorcur}, 'USD', 'imp.bidfloorcur: the account currency');
ok(exists $imp->{instl}, 'imp.instl');
is_deeply($req->{site}{publisher}{id}, 'pub-1', 'site.publisher from PublisherSettings');
is($req->{site}{domain}, 'news.example', 'site.domain');
ok(!$req->{app}, 'no app: the user agent names none of the keywords');
is($req->{device}{ua}, 'Mozilla/5.0 (X11; Linux x86_64)', 'device.ua');
is_deeply($req->{user}, { id => 'user-42', yob => 1990, gender => 'F' }, 'user: id, yob, gender');
is($req->{tmax}, 150, 'tmax: the source\'s');
is_deeply($req->{cur}, [ 'USD' ], 'cur');
is($req->{at}, 1, 'at: first price');
is_deeply($req->{wseat}, [ 'seat-a' ], 'wseat: the source\'s seat');
is_deeply($req->{bcat}, [ 'IAB25' ], 'bcat: the unit\'s ext.bcat');
is_deeply($req->{badv}, [ 'blocked.example' ], 'badv: the blocked adomains');

# ---- notices: nurl now, burl with the impression -------------------------------------------
my $win;
ok($t->wait_until(5, sub { ($win) = @{ notices($port_a, 'win') }; $win }), 'nurl fired');
is_deeply([ @{ $win->{query} }{qw(PRICE CUR IMP_ID SEAT_ID AUCTION_ID)} ], [ '2.5', 'USD', '1', 'seat-a', $req->{id} ],
          '... with ${AUCTION_PRICE} and the other macros filled');
is(scalar @{ notices($port_a, 'bill') }, 0, 'no burl before the impression');
is($http->get($ad->{impression_url})->{status}, 204, 'the impression: 204');
my $bill;
ok($t->wait_until(5, sub { ($bill) = @{ notices($port_a, 'bill') }; $bill }), 'burl fired on the impression');
is($bill->{query}{PRICE}, '2.5', '... with the price');
# the same impression again, on a connection to each worker (one of them is
# not the worker that billed): the node bills once
my $each = $t->worker_connections;
is_deeply([ map { $_->get($ad->{impression_url})->{status} } @$each ], [ (204) x @$each ],
          'the same impression again, through each worker: 204');
sleep 0.3;
is(scalar @{ notices($port_a, 'bill') }, 1, '... burl not fired twice');
is($http->get($ad->{click_url})->{status}, 204, 'a click on an external ad: counted, 204 (its markup lands)');

# ---- against direct demand -----------------------------------------------------------------
sub direct {
    my (%li) = @_;
    my $c = $t->chain(unit => { id => $unit->{id}, %{ $t->api('GET', "/api/ad-units/$unit->{id}")->{json} } },
                      line_item => { %li });
    $t->wait_until(10, sub { $t->workers_at($c->{rev}) });
    return $c;
}
sub pause { $t->put(line_items => { %{ $_[0]{records}{line_items} }, status => 'PAUSED' }); $t->wait_until(10, sub { $t->workers_at($t->revision) }) }
sub served_by {
    my $r = $t->ad($unit->{id}, $body);
    return 'none' if $r->{status} == 204;
    return ($r->{json}{ad}{display}{adm} // '') =~ /rtb-ad/ ? 'bid' : 'direct';
}

my $house = direct(type => 'HOUSE', rate => 0.1, priority => 16);
is(served_by(), 'bid', 'a HOUSE line item loses to a bid above the floor');
pause($house);
reset_bidders();
my $spon = direct(type => 'SPONSORSHIP', rate => 0.1, priority => 4);
is(served_by(), 'direct', 'a SPONSORSHIP line item wins');
is(scalar @{ bidder($port_a, 'GET', '/requests') }, 0, '... and no bid is even asked for');
pause($spon);
my $pp = direct(type => 'PRICE_PRIORITY', rate => 3, priority => 12);
reset_bidders();
is(served_by(), 'direct', 'PRICE_PRIORITY at 3 CPM beats a bid of 2.5');
my $loss;
ok($t->wait_until(5, sub { ($loss) = @{ notices($port_a, 'loss') }; $loss }), '... the bid\'s lurl fired');
is($loss->{query}{LOSS}, '102', '... lost to a higher bid (102)');
pause($pp);
$pp = direct(type => 'PRICE_PRIORITY', rate => 2, priority => 12);
is(served_by(), 'bid', 'PRICE_PRIORITY at 2 CPM loses to 2.5');
pause($pp);

# ---- two sources: the higher bid wins ------------------------------------------------------
my $src_b = $t->created('/api/ad-sources', { name => 'Bidder B', endpoint_url => "http://127.0.0.1:$port_b/openrtb2/auction",
                                             tmax_ms => 150 });
$t->created('/api/allocations', { ad_source_id => $src_b->{id}, target => 'ad_unit', target_id => $unit->{id}, share => 100 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
is(served_by(), 'bid', 'two sources asked: a bid serves');
is(scalar @{ bidder($port_b, 'GET', '/requests') }, 1, '... the second source was asked too');
ok($t->wait_until(5, sub { @{ notices($port_a, 'win') } && @{ notices($port_b, 'loss') } }),
   '... the higher (A, 2.5) won, the lower (B, 1.0) got its lurl');
is((notices($port_b, 'loss')->[0] // {})->{query}{LOSS}, '102', '... with 102');

# ---- floors -------------------------------------------------------------------------------
$t->api('PATCH', "/api/ad-sources/$src_b->{id}", json => { enabled => JSON::PP::false });
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { floor => 3 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
is(served_by(), 'none', 'a source floor of 3 over the bidder\'s 2.5: no bid, 204');
is(bidder($port_a, 'GET', '/requests')->[0]{imp}[0]{bidfloor}, 3, '... bidfloor 3 was sent');
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { floor => 1.5, bid_adjustment => 0.5 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
is(served_by(), 'none', 'a bid of 2.5 adjusted by 0.5 (1.25) under the floor of 1.5: dropped by adserve');
ok($t->wait_until(5, sub { @{ notices($port_a, 'loss') } }), '... its lurl fired');
is((notices($port_a, 'loss')->[0] // {})->{query}{LOSS}, '100', '... below the floor (100)');
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { floor => 0.5, bid_adjustment => undef });
$t->wait_until(10, sub { $t->workers_at($t->revision) });

# ---- blocks -------------------------------------------------------------------------------
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { adomain => 'ads.blocked.example' });
is(served_by(), 'none', 'a bid whose adomain is under a blocked domain: dropped, 204');
ok($t->wait_until(5, sub { @{ notices($port_a, 'loss') } }) && notices($port_a, 'loss')->[0]{query}{LOSS} eq '205',
   '... lurl with 205 (advertiser exclusions)');
my $crid_block = $t->created('/api/blocked-creatives', { kind => 'crid', value => 'bad-crid', ad_source_id => $src_a->{id} });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { crid => 'bad-crid' });
is(served_by(), 'none', 'a bid whose crid is blocked for its source: dropped');
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { cat => 'IAB25-3' });
is(served_by(), 'none', 'a bid in a subcategory of the unit\'s bcat: dropped');
reset_bidders();
is(served_by(), 'bid', 'an unblocked bid serves again');

# ---- sources that fail ---------------------------------------------------------------------
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { latency_ms => 2000 });
my $t0 = time;
my $r = $t->ad($unit->{id}, $body);
my $took = (time - $t0) * 1000;
is($r->{status}, 204, 'a source that answers after its tmax: 204 (nothing else fills)');
diag(sprintf 'answered in %.0f ms with a tmax of 150 ms', $took);
cmp_ok($took, '<', 1000, '... at its deadline, long before the bidder answers (2 s)');
reset_bidders();
for my $mode (qw(malformed error)) {
    bidder($port_a, 'POST', '/behaviour', { mode => $mode });
    is($t->ad($unit->{id}, $body)->{status}, 204, "a source in mode $mode: 204, the request unharmed");
}
reset_bidders();
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { endpoint_url => "http://127.0.0.1:$port_down/openrtb2/auction" });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
is($t->ad($unit->{id}, $body)->{status}, 204, 'a source that is down: 204');
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { endpoint_url => "http://127.0.0.1:$port_a/openrtb2/auction" });
$t->wait_until(10, sub { $t->workers_at($t->revision) });

# ---- QPS limit: 2 a second for the node, shared by its two workers ---------------------------------
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { qps_limit => 2 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
my %answers;
$answers{ $t->ad($unit->{id}, $body)->{status} }++ for 1 .. 12;
my $sent = scalar @{ bidder($port_a, 'GET', '/requests') };
ok($sent >= 1 && $sent <= 4, "qps_limit 2: $sent of 12 quick requests asked the source (2 a second, 4 if they crossed one)");
is(($answers{200} // 0) + ($answers{204} // 0), 12, '... the others answered without it (' . ($answers{204} // 0) . ' 204s)');
$t->api('PATCH', "/api/ad-sources/$src_a->{id}", json => { qps_limit => undef });
$t->wait_until(10, sub { $t->workers_at($t->revision) });

# ---- app inference ---------------------------------------------------------------------------
reset_bidders();
is($t->ad($unit->{id}, { %$body, device => { ua => "$UA NewsApp/3.1" } })->{status}, 200, 'a request from the app\'s user agent');
($req) = @{ bidder($port_a, 'GET', '/requests') };
is($req->{app}{bundle}, 'com.example.news', '... the bid request names the app by its Android bundle');
is($req->{app}{publisher}{id}, 'pub-1', '... with the publisher');
ok(!$req->{site}, '... and no site');

# ---- the counters, and metric_mode ----------------------------------------------------------
# every worker flushes its counts each second: wait until what this test did is all there
my $as = sub { $t->stat_sum("as:$unit->{id}/$src_a->{id}:$_[0]") };
ok($t->wait_until(10, sub { $as->('wins') >= 5 && $as->('timeouts') >= 1 && $as->('errors') >= 3
                            && $as->('blocked') >= 3 && $as->('imp') >= 1 }), 'the counters reach Redis');
my %as = map { $_ => $t->stat_sum("as:$unit->{id}/$src_a->{id}:$_") } qw(breq bids wins timeouts errors blocked imp spend);
cmp_ok($as{breq}, '>=', 10, "bid requests counted ($as{breq})");
cmp_ok($as{wins}, '>=', 5, "wins ($as{wins})");
cmp_ok($as{timeouts}, '>=', 1, "timeouts ($as{timeouts})");
cmp_ok($as{errors}, '>=', 3, "errors: malformed, 500, down ($as{errors})");
cmp_ok($as{blocked}, '>=', 3, "blocked: adomain, crid, category ($as{blocked})");
is($as{imp}, 1, 'one impression, counted once');
is($as{spend}, 2500, '... its revenue: 2.5 CPM = 2500 micros');
# the report against the counters as they stood around it: a worker's
# flush may still land after the wait above (it waited for 5 wins at least)
# (one row an hour: a run across the hour has two)
my ($rows, $wins);
my $sum = sub { my ($f) = @_; my $n = 0; $n += $_->{$f} // 0 for @$rows; $n };
$t->wait_until(10, sub {
    my $before = $t->stat_sum("as:$unit->{id}/$src_a->{id}:wins");
    $rows = $t->api('GET', "/api/metrics?group_by=ad_source&ad_source_id=$src_a->{id}")->{json}{rows} // [];
    $wins = $t->stat_sum("as:$unit->{id}/$src_a->{id}:wins");
    @$rows && $wins == $before && $sum->('wins') == $wins });
ok(@$rows >= 1 && @$rows <= 2 && !grep({ $_->{ad_source_id} ne $src_a->{id} } @$rows),
   '/api/metrics group_by=ad_source: the source\'s rows, its alone');
is($sum->('wins'), $wins, "... its wins, as counted ($wins)");
is($sum->('revenue'), 0.0025, '... its revenue: one impression at 2.5 CPM');
$t->api('PATCH', "/api/ad-units/$unit->{id}", json => { ext => { %{ $t->api('GET', "/api/ad-units/$unit->{id}")->{json}{ext} }, metric_mode => 'external_only' } });
is(scalar @{ $t->api('GET', "/api/metrics?group_by=ad_source&ad_source_id=$src_a->{id}")->{json}{rows} // [] }, 0,
   'the unit made external_only: its figures left out of the internal report');
is(scalar @{ $t->api('GET', "/api/metrics?group_by=ad_source&ad_source_id=$src_a->{id}&audience=external")->{json}{rows} // [] },
   scalar @$rows, '... and shown in the external one');

# ---- external creatives: recorded, reviewed, blocked -----------------------------------------
my $ext;
ok($t->wait_until(5, sub { $ext = eval { $J->decode($t->redis('HGET', 'adserve:external_creatives', $ad->{id}) // '') } }),
   'the winning creative is recorded in adserve:external_creatives');
is_deeply({ map { $_ => $ext->{$_} } qw(id ad_source_id crid adomain cat w h markup_sample) },
          { id => $ad->{id}, ad_source_id => $src_a->{id}, crid => 'rtb-creative-1', adomain => [ 'bidder.example' ],
            cat => [ 'IAB1' ], w => 300, h => 250, markup_sample => '<div class="rtb-ad">a reference bid</div>' },
          '... its source, crid, adomain, cat, size and markup');
like($ext->{first_seen}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... first seen (RFC 3339)');
my $listed = $t->api('GET', "/api/external-creatives?ad_source_id=$src_a->{id}")->{json};
ok((grep { $_->{id} eq $ad->{id} } @{ $listed->{data} // $listed->{items} // (ref $listed eq 'ARRAY' ? $listed : []) }),
   'an operator lists it in /api/external-creatives');
$t->redis('HSET', 'adserve:external_creatives', $ad->{id}, $J->encode({ %$ext, first_seen => '2020-01-01T00:00:00Z' }));
is($t->api('POST', "/api/external-creatives/$ad->{id}/block", json => { kind => 'crid' })->{status}, 201,
   '... and blocks its crid');
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
is(served_by(), 'none', 'its next bid is dropped');
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { crid => 'rtb-creative-2' });
my $r2 = $t->ad($unit->{id}, $body);
is(($r2->{json}{ad}{display}{adm} // '') =~ /rtb-ad/ ? 'bid' : 'none', 'bid', 'another creative of the source serves');
my $id2 = $r2->{json}{ad}{id} // '';
ok($t->wait_until(5, sub { $t->redis('HGET', 'adserve:external_creatives', $id2) }), '... and is recorded');
my $rec2 = $J->decode($t->redis('HGET', 'adserve:external_creatives', $id2));
$t->redis('HSET', 'adserve:external_creatives', $id2, $J->encode({ %$rec2, first_seen => '2020-01-01T00:00:00Z' }));
# two hours on (the test clock): past the minute that a worker writes a creative at most once in
my $later = int(time) + 7200;
for (1 .. 4) { $t->ad($unit->{id}, $body, headers => { 'X-Adserve-Clock' => $later }) }
my $again;
ok($t->wait_until(5, sub { $again = eval { $J->decode($t->redis('HGET', 'adserve:external_creatives', $id2)) };
                           $again && $again->{last_seen} ne $rec2->{last_seen} }), 'it wins again later: written again');
is($again->{first_seen}, '2020-01-01T00:00:00Z', '... its first_seen kept, last_seen moved on')
    or diag explain $again;

# ---- a video unit: a video bid, with our impression in its VAST ---------------------------------
my $vunit = $t->created('/api/ad-units', { code => "rtb-video-$$", name => 'Video auctioned', status => 'ACTIVE',
    ext => { video => { enabled => 1 } }, video => { w => 640, h => 360, mindur => 5, maxdur => 30, mime => ['video/mp4'] } });
my $src_v = $t->created('/api/ad-sources', { name => 'Video bidder', endpoint_url => "http://127.0.0.1:$port_b/openrtb2/auction",
                                             tmax_ms => 150, formats => [ 'display', 'video' ] });
$t->created('/api/allocations', { ad_source_id => $src_v->{id}, target => 'ad_unit', target_id => $vunit->{id}, share => 100 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
$res = $t->ad($vunit->{id}, $body);
is($res->{status}, 200, 'a video unit: the video bid serves');
my $vast = $res->{json}{ad}{video}{vast} // '';
is_deeply([ @{ $res->{json}{ad}{video} // {} }{qw(w h)} ], [ 640, 360 ], '... as ad.video at the unit\'s player size');
like($vast, qr{<InLine><Impression id="adserve">http://[^<]+/app/v0/event/impression\?ad_log=[A-Za-z0-9_-]+</Impression><AdSystem>rtb-bidder},
     '... its VAST with our Impression first inside the InLine');
like($vast, qr{/notice/vast-imp}, '... and the bidder\'s own impression kept');
ok(bidder($port_b, 'GET', '/requests')->[0]{imp}[0]{video}, '... the bid request had a video object');
reset_bidders();
my $xml = $t->request('GET', "/app/v0/vast/$vunit->{id}?uid=viewer-1");
is($xml->{status}, 200, 'GET /app/v0/vast: the video bid as the player\'s VAST');
like($xml->{headers}{'content-type'}, qr{^application/xml}, '... XML');
my ($imp_url) = ($xml->{content} // '') =~ m{<Impression id="adserve">([^<]+)</Impression>};
ok($imp_url, '... with our impression');
is(bidder($port_b, 'GET', '/requests')->[0]{user}{id}, 'viewer-1', '... the player\'s uid as user.id');
is($http->get($imp_url =~ s/&amp;/&/gr)->{status}, 204, 'the player fires it: 204');
ok($t->wait_until(5, sub { @{ notices($port_b, 'bill') } }), '... and the video bid\'s burl is fired');

# ---- a native unit in asset mode: a native bid as ad.native, our trackers first -------------------
my $nassets = [ { id => 1, required => 1, title => { len => 90 } },
                { id => 2, required => 1, img => { type => 3, wmin => 600, hmin => 300 } },
                { id => 5, data => { type => 1 } } ];
my $nunit = $t->created('/api/ad-units', { code => "rtb-native-$$", name => 'Native auctioned', status => 'ACTIVE',
    ext => { native => { enabled => 1, render_mode => 'asset' } }, native => { assets => $nassets } });
my $src_n = $t->created('/api/ad-sources', { name => 'Native bidder', endpoint_url => "http://127.0.0.1:$port_b/openrtb2/auction",
                                             tmax_ms => 150, formats => [ 'native' ] });
$t->created('/api/allocations', { ad_source_id => $src_n->{id}, target => 'ad_unit', target_id => $nunit->{id}, share => 100 });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
$res = $t->ad($nunit->{id}, $body);
is($res->{status}, 200, 'a native unit in asset mode: the native bid serves');
$ad = $res->{json}{ad} // {};
my $nat = $ad->{native} // {};
my $asked = eval { $J->decode(bidder($port_b, 'GET', '/requests')->[0]{imp}[0]{native}{request}) } // {};
is_deeply([ map { $_->{id} } @{ $asked->{assets} // [] } ], [ 1, 2, 5 ], '... the bid request asked for the unit\'s assets');
is($nat->{ver}, '1.2', '... as ad.native, a Native 1.2 response');
is_deeply($nat->{assets}, [ { id => 1, title => { text => 'A reference native bid' } },
                            { id => 2, img => { type => 3, w => 1200, h => 627, url => 'https://cdn.bidder.example/rtb-creative-1-3.png' } },
                            { id => 5, data => { type => 1, value => 'Reference data 1' } } ],
          '... each asset under its request\'s id, in the unit\'s order');
is($nat->{link}{url}, 'https://bidder.example/landing', '... the bid\'s landing page');
my @clicks = @{ $nat->{link}{clicktrackers} // [] };
is($clicks[0], $ad->{click_url}, '... our click URL first among its click trackers');
like($clicks[1] // '', qr{/notice/native-click\?.*PRICE=1(&|$)}, '... then the bid\'s, its ${AUCTION_PRICE} filled');
my @events = @{ $nat->{eventtrackers} // [] };
is_deeply($events[0], { event => 1, method => 1, url => $ad->{impression_url} }, '... our impression URL first among the event trackers');
is_deeply([ map { [ $_->{event}, $_->{method}, $_->{url} =~ m{/notice/(native-\w+)\?} ] } @events[1, 2] ],
          [ [ 1, 1, 'native-imp' ], [ 1, 1, 'native-event' ] ], '... then its imptracker, as an event tracker, and its own');
ok(!exists $ad->{display} && !exists $ad->{video}, '... and nothing else');
is($http->get($events[0]{url})->{status}, 204, 'our impression tracker: 204');
ok($t->wait_until(5, sub { @{ notices($port_b, 'bill') } }), '... fires the native bid\'s burl');
is($http->get($clicks[0])->{status}, 204, 'our click tracker: 204');
my $ns = sub { $t->stat_sum("as:$nunit->{id}/$src_n->{id}:$_[0]") };
ok($t->wait_until(10, sub { $ns->('imp') == 1 && $ns->('clk') == 1 && $ns->('wins') == 1 }),
   '... the impression, the click and the win counted on the source');

sub native_bid {
    my ($native) = @_;
    reset_bidders();
    bidder($port_b, 'POST', '/behaviour', { native => $native });
    my $r = $t->ad($nunit->{id}, $body);
    my ($l) = $r->{status} != 200 && $t->wait_until(5, sub { @{ notices($port_b, 'loss') } })
              ? @{ notices($port_b, 'loss') } : ();
    bidder($port_b, 'POST', '/behaviour', { native => undef });
    return wantarray ? ($r->{status}, ($l // {})->{query}{LOSS} // 'no lurl') : $r;
}
my $good = { assets => [ { id => 1, title => { text => 'T' } }, { id => 2, img => { url => 'https://i.example/m.png' } } ],
             link => { url => 'https://bidder.example/landing' } };
my $errors = $ns->('errors');
is_deeply([ native_bid({ %$good, link => { url => 'javascript:alert(document.cookie)' } }) ], [ 204, 3 ],
          'a native bid whose link is javascript: dropped as invalid (lurl 3)');
is_deeply([ native_bid({ %$good, assets => [ $good->{assets}[0] ] }) ], [ 204, 3 ],
          'a native bid without a required asset (the image): dropped (lurl 3)');
is_deeply([ native_bid({ %$good, imptrackers => [ 'data:text/html,x' ] }) ], [ 204, 3 ],
          'a native bid with a tracker that is no http(s) URL: dropped (lurl 3)');
ok($t->wait_until(10, sub { $ns->('errors') >= $errors + 3 }), '... each counted as an error of the source');
is_deeply([ native_bid({ %$good, link => { url => '${AUCTION_BID_ID}https://bidder.example/landing' } }) ], [ 204, 3 ],
          'a native bid whose link is no http(s) URL once its macros are filled: dropped (lurl 3)');
my $macro = native_bid({ %$good, link => { url => 'https://bidder.example/landing?p=${AUCTION_PRICE}#buy' } });
is($macro->{json}{ad}{native}{link}{url}, 'https://bidder.example/landing?p=1#buy',
   'a macro in the link filled, its fragment kept: served');
my $wrapped = native_bid({ native => { %$good, assets => [ @{ $good->{assets} }, { id => 9, title => { text => 'not asked' } } ] } });
is($wrapped->{status}, 200, 'a 1.0 response in its native wrapper serves');
is_deeply([ map { $_->{id} } @{ $wrapped->{json}{ad}{native}{assets} // [] } ], [ 1, 2 ],
          '... an asset asked for by no request left out');

# a banner for a unit that asked for native alone: not what it asked for
reset_bidders();
bidder($port_b, 'POST', '/behaviour', { format => 'banner' });
is($t->ad($nunit->{id}, $body)->{status}, 204, 'a banner bid on a native-only unit: dropped');
ok($t->wait_until(5, sub { @{ notices($port_b, 'loss') } }) && notices($port_b, 'loss')->[0]{query}{LOSS} eq '204',
   '... lurl with 204 (not the format asked for)');
bidder($port_b, 'POST', '/behaviour', { format => undef });

# a unit whose native ads its style draws (html mode) takes no native bid: the source is not asked
$t->api('PATCH', "/api/ad-units/$nunit->{id}", json => { ext => { native => { enabled => 1, render_mode => 'html' } } });
$t->wait_until(10, sub { $t->workers_at($t->revision) });
reset_bidders();
is($t->ad($nunit->{id}, $body)->{status}, 204, 'the unit in html mode: 204');
is(scalar @{ bidder($port_b, 'GET', '/requests') }, 0, '... its native-only source not asked');

# a native bid for a display unit: not what it asked for
reset_bidders();
bidder($port_a, 'POST', '/behaviour', { format => 'native', crid => 'rtb-creative-2' });
is(served_by(), 'none', 'a native bid on a display unit: dropped');
ok($t->wait_until(5, sub { @{ notices($port_a, 'loss') } }) && notices($port_a, 'loss')->[0]{query}{LOSS} eq '204',
   '... lurl with 204 (not the format asked for)');
bidder($port_a, 'POST', '/behaviour', { format => undef });

done_testing;
