# Experiments on the real stack (README "Experiments"): an ACTIVE experiment
# splits an ad unit's traffic between variants of its ext and recommendation
# fields by a stable draw of user.id, within 3% of its weights over 10,000
# users; each variant is counted (requests, answers, shown, and its ad_log's
# impressions and clicks), and the results report gives each variant's CTR
# with its 95% interval and a p-value against the first. A display unit's
# variant may change which creatives fit (bcat). The API checks that every
# variant makes a valid unit, allows one ACTIVE experiment per unit, and
# keeps inventory to admins and operators.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use Adserve::Test;

my $t = Adserve::Test->new;
sub current { ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the change') }
sub body { my ($user, %ext) = @_; return { version => '0.1.0', device => { ua => 'Mozilla/5.0' },
                                           defined $user ? (user => { id => $user }) : (),
                                           %ext ? (ext => { %ext }) : () } }
sub items { my ($res) = @_; scalar @{ $res->{json}{ad}{recommendation}{items} // [] } }

# ---- a recommendation unit: a pool of 7 items, topn 5 -------------------------------------------------
my @ids = map { "exp:$_" } 'a' .. 'h';
$t->created('/api/catalog-items', { item_id => $_, title => "Item $_", url => "https://shop.example/$_" }) for @ids;
$t->created('/api/associated-items-pools', { source_item_id => 'exp:a',
                                             items => [ map { { item_id => $ids[$_], score => 10 - $_ } } 1 .. 7 ] });
my $unit = $t->created('/api/ad-units', { code => "exp-$$", name => 'Related', status => 'ACTIVE',
                                          recommendation => { topn => 5 }, ext => { recommendation => { enabled => 1 } } });
my $U = $unit->{id};

# ---- what the API refuses -----------------------------------------------------------------------------
my %good = (name => 'Shorter lists', ad_unit_id => $U,
            variants => [ { id => 'control', weight => 70 },
                          { id => 'short', weight => 30, recommendation => { topn => 2 } } ]);
sub with { my (%o) = @_; return { %good, %o } }
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'only', weight => 1 } ])),
            422, qr/variants: 2 at least/, 'one variant');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ map { { id => 'v', weight => 1 } } 1 .. 2 ])),
            422, qr/variants\[1\]\.id: "v" twice/, 'a variant id twice');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'a b', weight => 1 }, { id => 'c', weight => 1 } ])),
            422, qr/variants\[0\]\.id/, 'a variant id with a space');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'a', weight => 0 }, { id => 'c', weight => 1 } ])),
            422, qr/variants\[0\]\.weight/, 'a weight of 0');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'a', weight => 1 },
                                                                          { id => 'b', weight => 1, ext => { algorithm => 5 } } ])),
            422, qr/variants\[1\]\.ext\.algorithm/, 'a variant whose ext is not an AdUnitExt');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'a', weight => 1 },
                                                                          { id => 'b', weight => 1, recommendation => { topn => 500 } } ])),
            422, qr/variants\[1\]\.recommendation\.topn/, 'a variant\'s topn out of range');
$t->refused($t->api('POST', '/api/experiments', json => with(variants => [ { id => 'a', weight => 1 },
                                                                          { id => 'b', weight => 1, recommendation => {
                                                                              content_filter_rule => { type => 'cmp', data => { lhs => ['price'], op => 'lt', rhs => 'x' } } } } ])),
            422, qr/variants\[1\]: recommendation\.content_filter_rule/, 'a variant whose content filter does not compile');
$t->refused($t->api('POST', '/api/experiments', json => with(ad_unit_id => $t->uuid)), 422, qr/ad_unit_id/, 'an unknown ad unit');

# ---- created PAUSED: nothing splits -------------------------------------------------------------------
my $x = $t->created('/api/experiments', \%good);
my $X = $x->{id};
is($x->{status}, 'PAUSED', 'an experiment is made PAUSED');
is_deeply([ map { $_->{ext} } @{ $x->{variants} } ], [ {}, {} ], 'a variant\'s ext defaults to {}');
current();
is(items($t->ad($U, body('user-1', item_id => 'exp:a'))), 5, 'PAUSED: every user is served the unit as it is');

my $adv = $t->created('/api/advertisers', { name => 'Exp advertiser' });
$t->created('/api/users', { email => "exp-adv-$$\@example.com", password => 'correct horse battery',
                            role => 'advertiser', advertiser_id => $adv->{id} });
my @as_adv = (as => [ "exp-adv-$$\@example.com", 'correct horse battery' ]);
is($t->api('GET', '/api/experiments', @as_adv)->{status}, 403, 'advertisers: 403');
is($t->api('POST', '/api/experiments', @as_adv, json => \%good)->{status}, 403, '... and cannot make one');
is($t->api('PATCH', "/api/experiments/$X", json => { ad_unit_id => $t->uuid })->{status}, 409, 'ad_unit_id cannot change');

# ---- ACTIVE: the split ----------------------------------------------------------------------------------
is($t->api('PATCH', "/api/experiments/$X", json => { status => 'ACTIVE' })->{status}, 200, 'PAUSED -> ACTIVE');
my $other = $t->created('/api/experiments', with(name => 'Another'));
$t->refused($t->api('PATCH', "/api/experiments/$other->{id}", json => { status => 'ACTIVE' }), 409,
            qr/\Q$X\E is ACTIVE/, 'a second ACTIVE experiment on the unit');
is($t->api('DELETE', "/api/experiments/$X")->{status}, 409, 'an ACTIVE experiment cannot be deleted');
is($t->api('DELETE', "/api/experiments/$other->{id}")->{status}, 204, '... a PAUSED one can');
current();

my $N = 10_000;
my %answers;
my $http = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
$answers{ items($_) }++ for $t->ads_pipelined($U, [ map { body("reader-$_", item_id => 'exp:a') } 1 .. $N ]);
is_deeply([ sort { $a <=> $b } keys %answers ], [ 2, 5 ], 'each answer is the control\'s 5 items or the variant\'s 2');
my $share = ($answers{5} // 0) / $N;
cmp_ok(abs($share - 0.7), '<=', 0.03, "the control's share is within 3% of its weight 70/100 ($share)");
my @again = map { items($_) } $t->ads_pipelined($U, [ map { body("reader-$_", item_id => 'exp:a') } 1 .. 50 ]);
my @first = map { items($_) } $t->ads_pipelined($U, [ map { body("reader-$_", item_id => 'exp:a') } 1 .. 50 ]);
is_deeply(\@again, \@first, 'a user draws the same variant every time');
is(items($t->ad($U, body(undef, item_id => 'exp:a'))), 5, 'no user.id: the unit as it is');

ok($t->wait_until(10, sub { $t->stat_sum("xv:$X/control:req") + $t->stat_sum("xv:$X/short:req") == $N + 100 }),
   'every request with a user.id is counted in its variant');
is($t->stat_sum("xv:$X/control:req"), $answers{5} + scalar(grep { $_ == 5 } @again, @first),
   '... the control\'s requests are those that got 5 items');
is($t->stat_sum("xv:$X/short:shown"), 2 * ($answers{2} + scalar(grep { $_ == 2 } @again, @first)),
   '... the variant\'s shown items are 2 an answer');

# ---- events are counted per variant through the ad_log ---------------------------------------------------
my %by;
for my $i (1 .. 60) {
    my $res = $t->ad($U, body("clicker-$i", item_id => 'exp:a'), via => $http);
    my $v = items($res) == 5 ? 'control' : 'short';
    $t->request('GET', $res->{json}{ad}{impression_url} =~ s{^\Q@{[$t->base]}\E}{}r, via => $http);
    $by{$v}{imp}++;
    # every third answer of each variant clicked: equal CTRs whatever the
    # split (every third request overall left the p-value below to chance)
    next unless $by{$v}{imp} % 3 == 0;
    my $click = $res->{json}{ad}{recommendation}{items}[0]{click_url} =~ s{^\Q@{[$t->base]}\E}{}r;
    is($t->request('GET', $click, redirect => 0)->{status}, 302, "click $i") for 1 .. 2;   # the second: a dup
    $by{$v}{clk}++;
}
ok($t->wait_until(10, sub { $t->stats_are("xv:$X/control:imp" => $by{control}{imp}, "xv:$X/short:imp" => $by{short}{imp},
                                          "xv:$X/control:clk" => $by{control}{clk} // 0, "xv:$X/short:clk" => $by{short}{clk} // 0) }),
   'each variant counted its impressions and its clicks, once per answer');

# ---- the results -------------------------------------------------------------------------------------------
my $r = $t->api('GET', "/api/experiments/$X/results");
is($r->{status}, 200, 'the results: 200') or diag $r->{content};
my ($c, $s) = @{ $r->{json}{variants} };
is_deeply([ map { $_->{id} } $c, $s ], [ 'control', 'short' ], 'the variants in the experiment\'s order');
is($c->{impressions}, $by{control}{imp}, 'the control\'s impressions');
is($s->{clicks}, $by{short}{clk} // 0, 'the variant\'s clicks');
is($c->{requests}, $t->stat_sum("xv:$X/control:req"), 'requests as counted');
ok($c->{ctr_low} <= $c->{ctr} && $c->{ctr} <= $c->{ctr_high} && $c->{ctr_high} - $c->{ctr_low} > 0,
   "the control's CTR $c->{ctr} in its interval [$c->{ctr_low}, $c->{ctr_high}]");
is($c->{p_value}, undef, 'the first variant has no p-value');
ok(defined $s->{p_value} && $s->{p_value} > 0.05, "equal true CTRs: no significant difference (p = $s->{p_value})");
is($t->api('GET', "/api/experiments/$X/results?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z")->{status}, 422,
   'a window over 31 days: 422');
is($t->api('GET', "/api/experiments/$X/results", @as_adv)->{status}, 403, 'advertisers: 403');
is($t->api('GET', '/api/experiments/' . $t->uuid . '/results')->{status}, 404, 'an unknown experiment: 404');

# ---- the dashboard: recommendation CTR per source and algorithm, the experiment's variants ---------------
my $dash = $t->api('GET', '/api/dashboard')->{json}{recommendations};
my ($dxp) = grep { $_->{experiment_id} eq $X } @{ $dash->{experiments} // [] };
is_deeply([ map { $_->{id} } @{ $dxp->{variants} // [] } ], [ 'control', 'short' ], 'the dashboard shows the ACTIVE experiment');
is($dxp->{variants}[0]{impressions}, $by{control}{imp}, '... with its variants\' figures today');
ok(defined $dxp->{variants}[1]{ctr_low} && exists $dxp->{variants}[1]{p_value}, '... their CTR interval and p-value');
my ($axa0) = grep { $_->{algorithm} eq 'axa0' } @{ $dash->{algorithms} // [] };
ok($axa0 && $axa0->{shown} >= 2 * $N && $axa0->{ctr_high} >= $axa0->{ctr}, 'the dashboard: CTR per algorithm (axa0)');
ok(grep({ $_->{source} eq 'algorithm' && $_->{shown} == $axa0->{shown} } @{ $dash->{sources} // [] }),
   '... and per source, the algorithm\'s being axa0\'s');
is($t->api('GET', '/api/dashboard', @as_adv)->{json}{recommendations}, undef, 'advertisers: no recommendations');
my $rm = $t->api('GET', "/api/metrics/recommendations?ad_unit_id=$U")->{json};
is_deeply([ map { $_->{algorithm} } @{ $rm->{algorithms} // [] } ], [ 'axa0' ], 'the unit\'s metrics per algorithm');

# ---- paused again: the unit as it is ---------------------------------------------------------------------
is($t->api('PATCH', "/api/experiments/$X", json => { status => 'PAUSED' })->{status}, 200, 'ACTIVE -> PAUSED');
current();
my %paused;
$paused{ items($_) }++ for $t->ads_pipelined($U, [ map { body("reader-$_", item_id => 'exp:a') } 1 .. 40 ]);
is_deeply(\%paused, { 5 => 40 }, 'paused: every user has the unit as it is');

# ---- a variant with another algorithm and its own fallback ------------------------------------------------
# (a co-view pool as the sidecar's job writes it: the item h after the item a)
$t->put(coview_pools => { id => 'cv-exp-a', source_item_id => 'exp:a', items => [ { item_id => 'exp:h', score => 3 } ] });
my $cvx = $t->created('/api/experiments', { name => 'Co-view', ad_unit_id => $U, status => 'ACTIVE', variants => [
    { id => 'axa0', weight => 1 },
    { id => 'coview', weight => 1, ext => { algorithm => 'coview' },
      recommendation => { topn => 3, fallback => [ { type => 'preset', items => [ { id => 'exp:g' }, { id => 'exp:f' } ] } ] } } ] });
current();
my %seen;
for my $res ($t->ads_pipelined($U, [ map { body("cv-reader-$_", item_id => 'exp:a') } 1 .. 60 ])) {
    $seen{ join ',', map { "$_->{id}/$_->{source}" } @{ $res->{json}{ad}{recommendation}{items} } }++;
}
is_deeply([ sort keys %seen ], [ 'exp:b/algorithm,exp:c/algorithm,exp:d/algorithm,exp:e/algorithm,exp:f/algorithm',
                                 'exp:h/algorithm,exp:g/preset,exp:f/preset' ],
          'the control serves axa0\'s pool; the variant its co-view pool, then its own preset fallback');
ok($t->wait_until(10, sub {
       my %a = map { $_->{algorithm} => $_->{shown} } @{ $t->api('GET', "/api/metrics/recommendations?ad_unit_id=$U")->{json}{algorithms} // [] };
       ($a{coview} // 0) == $seen{'exp:h/algorithm,exp:g/preset,exp:f/preset'} }),
   '... and the co-view items are counted under coview, per algorithm');
is($t->api('PATCH', "/api/experiments/$cvx->{id}", json => { status => 'ARCHIVED' })->{status}, 200, 'archived');
current();

# ---- a display unit: a variant changes which creatives fit ----------------------------------------------
my $d = $t->chain(unit => { code => "exp-display-$$", name => 'Display', ext => { bcat => ['IAB7'] } },
                  line_item => { frequency_caps => [ { max => 1, seconds => 3600 } ] },
                  creative => { categories => ['IAB7-39'] });
current();
is($t->ad($d->{unit}, body('viewer-1'))->{status}, 204, 'the unit blocks the creative\'s category: 204');
my $dx = $t->created('/api/experiments', { name => 'Unblock IAB7', ad_unit_id => $d->{unit}, status => 'ACTIVE',
                                           variants => [ { id => 'blocked', weight => 1 },
                                                         { id => 'open', weight => 1, ext => { bcat => [] } } ] });
current();
my %status;
my %ok_users;
my @viewers = $t->ads_pipelined($d->{unit}, [ map { body("viewer-$_") } 1 .. 200 ]);
for my $i (1 .. 200) {
    my $res = $viewers[$i - 1];
    $status{ $res->{status} }++;
    $ok_users{"viewer-$i"} = $res->{json}{ext}{ad_log} if $res->{status} == 200;
}
ok($status{200} && $status{204} && abs($status{200} - 100) <= 30, "half the users see the ad: the open variant ($status{200} of 200)");
my ($viewer, $log) = each %ok_users;
ok($t->wait_until(5, sub { $t->ad($d->{unit}, body($viewer))->{status} == 204 }),
   'the line item only the open variant serves keeps its cap of 1 an hour: the same viewer again, 204');
$t->request('GET', "/app/v0/event/impression?ad_log=$log", via => $http);
ok($t->wait_until(10, sub { $t->stat_sum("xv:$dx->{id}/open:imp") == 1 && $t->stat_sum("xv:$dx->{id}/open:ads") == $status{200} }),
   'the open variant counted its ads and the impression its token names');
is($t->stat_sum("xv:$dx->{id}/blocked:ads"), 0, '... the blocked one none');

# ---- a restart: the full load builds the variants as every later build does -----------------------------
# (those who saw the ad are capped now: each check asks for users not seen yet)
sub split_of { my ($from) = @_; my %n;
               $n{ $_->{status} }++ for $t->ads_pipelined($d->{unit}, [ map { body("viewer-$_") } $from .. $from + 199 ]);
               return \%n }
$t->stop('nginx');
$t->start('nginx');
ok($t->wait_until(10, sub { $t->workers_at($t->revision) }), 'nginx restarted and loaded');
my $after = split_of(1001);
ok($after->{200} && $after->{204} && abs($after->{200} - 100) <= 30,
   "after a restart the experiment still splits ($after->{200} of 200 see the ad)");
is($t->api('PATCH', "/api/catalog-items/" . $t->api('GET', '/api/catalog-items?item_id=exp:h')->{json}{items}[0]{id},
           json => { title => 'Item h, renamed' })->{status}, 200, 'another record changes');
current();
$after = split_of(2001);
ok($after->{200} && $after->{204} && abs($after->{200} - 100) <= 30,
   "... and the build after it too ($after->{200} of 200)");

# ---- the unit goes: the experiment can still be paused and deleted ---------------------------------------
is($t->api('DELETE', "/api/ad-units/$U")->{status}, 204, 'the recommendation unit is deleted');
is($t->api('PATCH', "/api/experiments/$X", json => { name => 'Shorter lists (unit gone)' })->{status}, 200,
   'its experiment can still be renamed');
$t->refused($t->api('PATCH', "/api/experiments/$X", json => { status => 'ACTIVE' }), 422, qr/no such ad unit/,
            '... but not started');
is($t->api('DELETE', "/api/experiments/$X")->{status}, 204, '... and deleted');

# the audit log has the experiment's changes
my $audit = $t->api('GET', "/api/audit-logs?resource=experiment&id=$X");
is($audit->{status}, 200, 'the audit log of the experiment');
is_deeply([ map { $_->{action} } reverse @{ $audit->{json}{items} } ], [ 'create', 'update', 'update', 'update', 'delete' ],
          '... its creation, two status changes, the rename and the delete');

done_testing;
