# GET /api/dashboard: today against yesterday (whole, and up to the same
# hour), today's top line items, and the pacing of every ACTIVE line item
# with a goal. Counters are written straight into Redis on today's and
# yesterday's hours (the sidecar's clock is the real one); pacing figures
# are computed here from the answer's own "at", with +-1 for rounding.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use POSIX qw(floor);
use Time::HiRes qw(sleep time);
use Time::Local qw(timegm);
use File::Temp qw(tempdir);
use Adserve::Test;

my $t = Adserve::Test->new;
my $pw = 'a-good-password';

sub iso { my @g = gmtime $_[0]; sprintf '%04d-%02d-%02dT%02d:%02d:%02dZ', $g[5] + 1900, $g[4] + 1, @g[3, 2, 1, 0] }
sub epoch { my @p = $_[0] =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)Z$/ or die "not a time: $_[0]"; timegm(@p[5, 4, 3], $p[2], $p[1] - 1, $p[0]) }
sub hour_key { my @g = gmtime $_[0]; sprintf 'adserve:stats:%04d%02d%02d%02d', $g[5] + 1900, $g[4] + 1, @g[3, 2] }

# far enough from midnight that today stays one day for the whole test, and
# from 23:00, where yesterday_same_time takes in yesterday's last hour
sub near { my ($at) = @_; my $s = time % 86400; return $s > $at - 60 && $s < $at + 2 }
sleep 1 while near(86400) || near(23 * 3600);
my $now = int time;
my $today = $now - $now % 86400;
my $hour = $now - $now % 3600;

# ---- nothing yet --------------------------------------------------------------------------------------
my $empty = $t->api('GET', '/api/dashboard');
is($empty->{status}, 200, 'a dashboard with no counters and no line items') or diag $empty->{content};
my $zero = { requests => 0, ads => 0, impressions => 0, clicks => 0, conversions => 0, spend => 0, conversion_value => 0,
             ctr => 0, fill_rate => 0, video_starts => 0, video_completion_rate => 0 };
is_deeply({ map { $_ => $empty->{json}{$_} } qw(today yesterday yesterday_same_time top_line_items pacing) },
          { today => $zero, yesterday => $zero, yesterday_same_time => $zero, top_line_items => [], pacing => [] },
          '... zeros and empty lists');

# ---- advertisers, users, ad units ---------------------------------------------------------------------
my %adv = map { $_ => $t->created('/api/advertisers', { name => $_ }) } qw(Acme Globex);
my %order = map { $_ => $t->created('/api/orders', { advertiser_id => $adv{$_}{id}, name => "$_ order" }) } keys %adv;
$t->created('/api/users', { email => 'acme@buyers.example', password => $pw, role => 'advertiser',
                             advertiser_id => $adv{Acme}{id} });
$t->created('/api/users', { email => 'ops@example.com', password => $pw, role => 'operator' });
my @acme = (as => [ 'acme@buyers.example', $pw ]);
my @ops = (as => [ 'ops@example.com', $pw ]);
my %unit;
for my $u ([ all => 'all' ], [ ext => 'external_only' ], [ int => 'internal_only' ]) {
    $unit{ $u->[0] } = $t->created('/api/ad-units', { code => $u->[0], name => $u->[0], ext => { metric_mode => $u->[1] } })->{id};
}

# ---- line items ----------------------------------------------------------------------------------------------
my ($start, $end) = ($now - 10000, $now + 10000);
my %li;
sub line_item {
    my ($key, %o) = @_;
    my $who = delete $o{advertiser} // 'Acme';
    my $status = delete $o{status} // 'ACTIVE';
    my $li = $t->created('/api/line-items', { order_id => $order{$who}{id}, type => 'STANDARD', cost_type => 'CPM', rate => 1,
                                              start_at => iso($start), end_at => iso($end), %o });
    if ($status ne 'DRAFT') {
        for my $s ('ACTIVE', $status eq 'ACTIVE' ? () : $status) {
            my $res = $t->api('PATCH', "/api/line-items/$li->{id}", json => { status => $s });
            is($res->{status}, 200, "$o{name}: $s") or diag $res->{content};
        }
    }
    $li{$key} = $li;
}
my %imp = (goal => { type => 'IMPRESSIONS', units => 20000 });
line_item(behind => name => 'P1 even behind', %imp, delivery => 'EVEN');
line_item(on => name => 'P2 even on track', %imp, delivery => 'EVEN');
line_item(ahead => name => 'P3 even ahead', %imp, delivery => 'EVEN');
line_item(clicks => name => 'P4 asap clicks', cost_type => 'CPC', goal => { type => 'CLICKS', units => 100 }, delivery => 'ASAP');
line_item(open => name => 'P5 asap open end', goal => { type => 'IMPRESSIONS', units => 1000 }, delivery => 'ASAP', end_at => undef);
line_item(unflighted => name => 'P6 even no flight', goal => { type => 'IMPRESSIONS', units => 1000 }, start_at => undef, end_at => undef);
line_item(complete => name => 'P7 complete', goal => { type => 'IMPRESSIONS', units => 1000 });
line_item(later => name => 'P8 not started', goal => { type => 'IMPRESSIONS', units => 1000 },
          start_at => iso($now + 5000), end_at => iso($now + 15000));
line_item(globex => name => 'P9 globex', advertiser => 'Globex', goal => { type => 'IMPRESSIONS', units => 500 });
line_item(paused => name => 'X paused', %imp, status => 'PAUSED');
line_item(draft => name => 'X draft', %imp, status => 'DRAFT');
line_item(nogoal => name => 'X no goal');
my %delivered = (behind => 5000, on => 10000, ahead => 15000, clicks => 30, open => 10, unflighted => 0, complete => 1000,
                 later => 0, globex => 250, paused => 1, draft => 1);
$t->redis('HSET', 'adserve:delivery', map { ("$li{$_}{id}:" . ($_ eq 'clicks' ? 'clk' : 'imp') => $delivered{$_}) } sort keys %delivered);
$t->redis('HSET', 'adserve:delivery', "$li{behind}{id}:clk", 99, "$li{clicks}{id}:imp", 99999);   # the other count: not read

# ---- counters -------------------------------------------------------------------------------------------------
sub add {
    my ($time, $id, %c) = @_;
    $t->redis('HINCRBY', hour_key($time), "$id:$_", $c{$_}) for sort keys %c;
}
add($today, "u:$unit{all}", req => 100, ads => 50, imp => 40, clk => 4, conv => 1, spend => 60000, convval => 2000000);
add($hour, "u:$unit{all}", req => 20, ads => 10, imp => 10, clk => 1, spend => 15000);
add($today, "u:$unit{ext}", req => 1000, ads => 1000, imp => 1000, clk => 100, spend => 1000000);
add($today, "u:$unit{int}", req => 30, ads => 30, imp => 30, clk => 3, spend => 45000);
add($today - 86400, "u:$unit{all}", req => 200, ads => 100, imp => 80, clk => 8, spend => 120000);
add($today - 3600, "u:$unit{all}", req => 50, ads => 50, imp => 50, clk => 5, spend => 75000);
add($today - 86400, "u:$unit{ext}", req => 7, ads => 7, imp => 7);
add($today - 2 * 86400, "u:$unit{all}", req => 9999);           # the day before yesterday: nowhere

add($today, "li:$li{behind}{id}", ads => 60, imp => 50, clk => 5, spend => 75000);
add($today, "li:$li{on}{id}", ads => 60, imp => 50, clk => 2, spend => 75000);
add($hour, "li:$li{clicks}{id}", ads => 80, imp => 70, clk => 9, conv => 2, spend => 90000, convval => 3000000);
add($today, "li:$li{globex}{id}", ads => 120, imp => 100, clk => 1, spend => 150000);
my @others = map { Adserve::Test::uuid() } 1 .. 8;
add($today, "li:$others[$_ - 1]", imp => $_) for 1 .. 8;
my ($ads_only, $clicks_only) = map { Adserve::Test::uuid() } 1 .. 2;
add($today, "li:$ads_only", ads => 500);
add($today, "li:$clicks_only", clk => 1);
add($today - 86400, "li:$li{behind}{id}", ads => 25, imp => 20, clk => 1, spend => 30000);

# ---- admins and operators -------------------------------------------------------------------------------------------
my $res = $t->api('GET', '/api/dashboard');
is($res->{status}, 200, 'the dashboard') or diag $res->{content};
my $d = $res->{json};
my $at = epoch($d->{at});
cmp_ok(abs($at - time), '<=', 5, 'at: now');
# expected totals; without req (an advertiser's), requests and fill_rate are null
sub totals {
    my (%c) = @_;
    my $units = exists $c{req};
    $c{$_} //= 0 for qw(req ads imp clk conv spend convval);
    return { requests => $units ? $c{req} : undef, ads => $c{ads}, impressions => $c{imp}, clicks => $c{clk},
             conversions => $c{conv}, spend => $c{spend} / 1e6, conversion_value => $c{convval} / 1e6,
             ctr => $c{imp} ? 0 + sprintf('%.6f', $c{clk} / $c{imp}) : 0,
             fill_rate => !$units ? undef : $c{req} ? 0 + sprintf('%.6f', $c{ads} / $c{req}) : 0,
             video_starts => 0, video_completion_rate => 0 };
}
is_deeply($d->{today}, totals(req => 150, ads => 90, imp => 80, clk => 8, conv => 1, spend => 120000, convval => 2000000),
          'today: every ad unit\'s counters but the external_only one\'s, every hour of the day');
is_deeply($d->{yesterday}, totals(req => 250, ads => 150, imp => 130, clk => 13, spend => 195000),
          'yesterday: the whole day before');
my $late = ($at % 86400) >= 23 * 3600;
is_deeply($d->{yesterday_same_time}, $late ? $d->{yesterday} : totals(req => 200, ads => 100, imp => 80, clk => 8, spend => 120000),
          'yesterday_same_time: yesterday up to the current hour (23:00 is out unless it is 23:00 now)');

my %name = map { $li{$_}{id} => $li{$_}{name} } keys %li;
sub top { my ($id, %c) = @_; return +{ line_item_id => $id, name => $name{$id}, impressions => $c{imp}, clicks => $c{clk} // 0, spend => ($c{spend} // 0) / 1e6 } }
my @top = (top($li{globex}{id}, imp => 100, clk => 1, spend => 150000), top($li{clicks}{id}, imp => 70, clk => 9, spend => 90000),
           top($li{behind}{id}, imp => 50, clk => 5, spend => 75000), top($li{on}{id}, imp => 50, clk => 2, spend => 75000),
           map { top($others[$_ - 1], imp => $_) } reverse 3 .. 8);
is_deeply($d->{top_line_items}, \@top,
          'top_line_items: ten, by impressions, then clicks; deleted ones named null; ads alone do not count');

# pacing, from the answer's own time
sub pace {
    my ($key, $units, $even, $s, $e) = @_;
    my $n = $delivered{$key};
    my ($expected, $projected);
    if (defined $s && defined $e) {
        my $frac = ($at - $s) / ($e - $s);
        $expected = floor($units * ($frac < 0 ? 0 : $frac > 1 ? 1 : $frac)) if $even;
        $projected = $at >= $e ? $n : floor($n * ($e - $s) / ($at - $s)) if $at > $s;
        $projected = $units if defined $projected && $projected > $units;
    }
    return ($expected, $projected);
}
my %want = (
    behind => [ 20000, 1, $start, $end, 'behind' ],
    on => [ 20000, 1, $start, $end, 'on_track' ],
    ahead => [ 20000, 1, $start, $end, 'ahead' ],
    clicks => [ 100, 0, $start, $end, 'behind' ],
    open => [ 1000, 0, $start, undef, 'on_track' ],
    unflighted => [ 1000, 1, undef, undef, 'on_track' ],
    complete => [ 1000, 1, $start, $end, 'complete' ],
    later => [ 1000, 1, $now + 5000, $now + 15000, 'on_track' ],
    globex => [ 500, 1, $start, $end, 'on_track' ],
);
my @pacing = @{ $d->{pacing} };
is_deeply([ map { $_->{name} } @pacing ], [ map { $li{$_}{name} } qw(behind on ahead clicks open unflighted complete later globex) ],
          'pacing: every ACTIVE line item with a goal, by name (not the paused, draft or goal-less ones)');
my %got = map { $_->{line_item_id} => $_ } @pacing;
for my $key (sort keys %want) {
    my ($units, $even, $s, $e, $status) = @{ $want{$key} };
    my $p = $got{ $li{$key}{id} } or next;
    my ($expected, $projected) = pace($key, $units, $even, $s, $e);
    my $type = $key eq 'clicks' ? 'CLICKS' : 'IMPRESSIONS';
    is_deeply({ map { $_ => $p->{$_} } qw(goal delivery start_at end_at delivered status) },
              { goal => { type => $type, units => $units }, delivery => $even ? 'EVEN' : 'ASAP',
                start_at => defined $s ? iso($s) : undef, end_at => defined $e ? iso($e) : undef,
                delivered => $delivered{$key}, status => $status }, "$li{$key}{name}: goal, delivery, flight, delivered, $status");
    for my $f ([ expected_now => $expected ], [ projected_end => $projected ]) {
        if (defined $f->[1]) {
            ok(defined $p->{ $f->[0] } && abs($p->{ $f->[0] } - $f->[1]) <= 1, "$li{$key}{name}: $f->[0] $f->[1] (+-1)")
                or diag "got " . ($p->{ $f->[0] } // 'null');
        } else {
            is($p->{ $f->[0] }, undef, "$li{$key}{name}: $f->[0] null");
        }
    }
}
# the figures themselves, roughly, in case the formulas above drifted with the code
my $half = $got{ $li{behind}{id} };
ok(abs($half->{expected_now} - 10000) <= 10, 'EVEN at half its flight: about half its goal expected');
ok(abs($half->{projected_end} - 10000) <= 10, '... 5000 delivered in half the flight projects about 10000');
is($got{ $li{ahead}{id} }{projected_end}, 20000, 'a projection past the goal is capped at it');
is($got{ $li{complete}{id} }{projected_end}, 1000, '... as is a complete one\'s');
is($got{ $li{later}{id} }{expected_now}, 0, 'not started: nothing expected yet');

# asked a moment later: the figures that move with the clock aside
my $ops = $t->api('GET', '/api/dashboard', @ops)->{json};
for my $dash ($ops, $d) {
    delete $dash->{at};
    delete @$_{qw(expected_now projected_end)} for @{ $dash->{pacing} };
}
is_deeply($ops, $d, 'an operator sees the same dashboard');

# ---- an advertiser ----------------------------------------------------------------------------------------------------
$res = $t->api('GET', '/api/dashboard', @acme);
is($res->{status}, 200, 'an advertiser reads its dashboard') or diag $res->{content};
my $own = $res->{json};
is_deeply($own->{today}, totals(ads => 200, imp => 170, clk => 16, conv => 2, spend => 240000, convval => 3000000),
          'its totals: its own line items\' counters; requests and fill_rate null');
is_deeply($own->{yesterday}, totals(ads => 25, imp => 20, clk => 1, spend => 30000), '... yesterday too');
is_deeply($own->{top_line_items}, [ @top[1 .. 3] ], 'its top line items: its own only');
is_deeply([ map { $_->{name} } @{ $own->{pacing} } ], [ map { $li{$_}{name} } qw(behind on ahead clicks open unflighted complete later) ],
          'its pacing: its own line items only');

# ---- refusals and the document ----------------------------------------------------------------------------------------------
is($t->request('GET', '/api/dashboard')->{status}, 401, 'no token: 401');
$t->refused($t->api('GET', '/api/dashboard?day=monday'), 422, qr/^day: unknown property/, 'an unknown parameter');

my $tmp = tempdir(CLEANUP => 1);
my $n = 0;
sub json_file { my $f = "$tmp/" . $n++ . '.json'; open my $fh, '>', $f or die $!; print $fh $_[0]; close $fh; $f }
my $doc = $t->request('GET', '/api/openapi.json');
ok($doc->{json}{paths}{'/api/dashboard'}{get}, 'GET /api/dashboard is documented');
my @files = (json_file($doc->{content}), map { (Dashboard => json_file($t->api('GET', '/api/dashboard', @$_)->{content})) } [], [ @acme ]);
my $out = qx{node "$Adserve::Test::ROOT/t/js/validate-openapi.mjs" @{[ map { quotemeta } @files ]} 2>&1};
is($?, 0, 'real dashboards (admin, advertiser) validate against the Dashboard component') or diag $out;

done_testing;
