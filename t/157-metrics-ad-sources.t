# Metrics per ad source (issue 15, point 6): the auction's counters, which
# the module keeps per ad unit and ad source in the hour hashes
# (as:{ad unit id}/{ad source id}:{breq|bids|wins|timeouts|errors|blocked},
# and a won bid's imp, clk and spend on the same field), summed per source
# by GET /api/metrics?group_by=ad_source and today's by GET /api/dashboard.
# The counters are written straight into Redis with HINCRBY, as the module
# would, on a fixed date (and today's for the dashboard), so every row is
# checked exact: the sums over ad units, revenue, ecpm and win_rate (null
# without impressions or bids), both granularities, the filters
# (ad_source_id, ad_unit_id), ext.metric_mode for both audiences (a source
# row sums only the units its audience sees), CSV, the roles (advertisers
# 403), the 422s, and the OpenAPI document against real answers.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use File::Temp qw(tempdir);
use Adserve::Test;

# the counters' grammar, from the contract (src/adserve_contract.[ch]), not spelled again here
my ($AS, %M) = do {
    local $/;
    open my $h, '<', "$FindBin::Bin/../src/adserve_contract.h" or die "contract: $!";
    my $text = <$h>;
    my ($dim) = $text =~ /#define ADSERVE_V_DIM_AD_SOURCE\s+"([^"]+)"/ or die 'no ADSERVE_V_DIM_AD_SOURCE';
    open my $c, '<', "$FindBin::Bin/../src/adserve_contract.c" or die "contract: $!";
    $text = <$c>;
    my %m;
    for my $n (qw(BREQ BIDS WINS TIMEOUTS ERRORS BLOCKED IMP CLK)) {
        ($m{ lc $n }) = $text =~ /\[ADSERVE_METRIC_$n\]\s*=\s*"([^"]+)"/ or die "no ADSERVE_METRIC_$n";
    }
    ($dim, %m);
};
$M{spend} = 'spend';      # ADSERVE_V_SPEND: the API's word too

my $t = Adserve::Test->new;
my $pw = 'a-good-password';

# ---- the records ---------------------------------------------------------------------------------------
my %unit;
for my $u ([ all => 'all' ], [ int => 'internal_only' ], [ ext => 'external_only' ]) {
    $unit{ $u->[0] } = $t->created('/api/ad-units', { code => "u-$u->[0]", name => "Unit $u->[0]",
                                                       ext => { metric_mode => $u->[1] } })->{id};
}
my %src = (a => $t->created('/api/ad-sources', { name => 'Bidder A', endpoint_url => 'https://a.example/bid' })->{id},
           b => $t->created('/api/ad-sources', { name => 'Bidder, "B"', endpoint_url => 'https://b.example/bid' })->{id},
           gone => Adserve::Test::uuid());      # a source that no longer exists
my %name = (a => 'Bidder A', b => 'Bidder, "B"', gone => undef);
my $adv = $t->created('/api/advertisers', { name => 'Acme' });
$t->created('/api/users', { email => 'buyer@acme.example', password => $pw, role => 'advertiser', advertiser_id => $adv->{id} });
$t->created('/api/users', { email => 'ops@example.com', password => $pw, role => 'operator' });
my @buyer = (as => [ 'buyer@acme.example', $pw ]);
my @ops = (as => [ 'ops@example.com', $pw ]);

# ---- the counters: 2024-03-10 10:00 and 11:00, and 2024-03-09 23:00 --------------------------------------
# {hour => {"unit/source" => {metric => n}}}
my %hours = (
    2024031010 => {
        'all/a' => { breq => 100, bids => 40, wins => 10, timeouts => 5, errors => 2, blocked => 1, imp => 8, clk => 2, spend => 12000 },
        'int/a' => { breq => 50, bids => 10, wins => 5, imp => 5, spend => 10000 },
        'ext/a' => { breq => 20, bids => 20, wins => 20, imp => 20, clk => 1, spend => 100000 },
        'all/b' => { breq => 30, timeouts => 30 },
        'ext/b' => { breq => 4, errors => 4 },
        'all/gone' => { breq => 3, bids => 1 },
    },
    2024031011 => {
        'all/a' => { breq => 10, bids => 4, wins => 1, imp => 1, spend => 2500 },
    },
    2024030923 => {
        'all/a' => { breq => 7, bids => 7, wins => 7, imp => 7, spend => 7000 },
    },
);
sub field { my ($pair, $metric) = @_; my ($u, $s) = split m{/}, $pair; "$AS$unit{$u}/$src{$s}:$M{$metric}" }
for my $hour (sort keys %hours) {
    for my $pair (sort keys %{ $hours{$hour} }) {
        $t->redis('HINCRBY', "adserve:stats:$hour", field($pair, $_), $hours{$hour}{$pair}{$_}) for sort keys %{ $hours{$hour}{$pair} };
    }
}
# the module also counts a won bid's events on its ad unit (u:): that is
# the ad unit's row, not the source's, and the reverse
$t->redis('HINCRBY', 'adserve:stats:2024031010', "u:$unit{all}:imp", 8);
# fields a source report never reads: no separator, two, an id that is not
# ours, metrics that are not the auction's nor its wins' events (on a pair
# of their own, which would make a row of zeros), the auction's on another
# kind, a value that is not a count
my $noise = Adserve::Test::uuid();
$t->redis('HSET', 'adserve:stats:2024031010', "$AS$unit{all}:$M{breq}", 9, "$AS$unit{all}/$src{a}/x:$M{breq}", 9,
          "$AS$unit{all}/a\"b:$M{breq}", 9, "$AS$unit{all}/$src{a}:opp", 9, "$AS$unit{all}/$noise:req", 9,
          "$AS$unit{all}/$noise:conv", 9, "$AS$unit{all}/$noise:passback", 9, "$AS$unit{all}/$noise:start", 9,
          "li:$src{a}:$M{breq}", 9, "$AS$unit{all}/$src{b}:$M{wins}", 'many');

# ---- helpers -------------------------------------------------------------------------------------------
sub get { my ($query, @as) = @_; return $t->api('GET', "/api/metrics?$query", @as) }
sub rows {
    my ($query, @as) = @_;
    my $res = get($query, @as);
    is($res->{status}, 200, "$query: 200") or diag $res->{content};
    return $res->{json}{rows} // [];
}
sub r6 { 0 + sprintf '%.6f', $_[0] }
# the counters of these hours and pairs, summed
sub sum {
    my ($hours, @pairs) = @_;
    my %c = map { $_ => 0 } keys %M;
    for my $h (@$hours) {
        for my $p (@pairs) {
            my $f = $hours{$h}{$p} or next;
            $c{$_} += $f->{$_} for keys %$f;
        }
    }
    return %c;
}
# an expected row from counters
sub row {
    my ($source, $time, %c) = @_;
    return { ad_source_id => $src{$source}, name => $name{$source}, time => $time, bid_requests => $c{breq},
             bids => $c{bids}, wins => $c{wins}, timeouts => $c{timeouts}, errors => $c{errors},
             blocked => $c{blocked}, impressions => $c{imp}, clicks => $c{clk}, revenue => $c{spend} / 1e6,
             ecpm => $c{imp} ? r6($c{spend} / 1e6 / $c{imp} * 1000) : undef,
             win_rate => $c{bids} ? r6($c{wins} / $c{bids}) : undef };
}
sub by_id { [ sort { $a->{ad_source_id} cmp $b->{ad_source_id} } @_ ] }
my $T10 = '2024-03-10T10:00:00Z';
my $T11 = '2024-03-10T11:00:00Z';
my $DAY = 'from=2024-03-10T00:00:00Z&to=2024-03-11T00:00:00Z';

# ---- rows ----------------------------------------------------------------------------------------------
my $a10 = row(a => $T10, sum([2024031010], qw(all/a int/a)));
is_deeply($a10, { ad_source_id => $src{a}, name => 'Bidder A', time => $T10, bid_requests => 150, bids => 50, wins => 15,
                  timeouts => 5, errors => 2, blocked => 1, impressions => 13, clicks => 2, revenue => 0.022,
                  ecpm => 1.692308, win_rate => 0.3 },
          '(the expected row, spelled out once: revenue / impressions x 1000, wins / bids)');
my $b10 = row(b => $T10, sum([2024031010], 'all/b'));
my $gone10 = row(gone => $T10, sum([2024031010], 'all/gone'));
is_deeply([ @$b10{qw(ecpm win_rate)} ], [ undef, undef ], '(no impression, no bid: ecpm and win_rate null)');
my $a11 = row(a => $T11, sum([2024031011], 'all/a'));
my @internal = (@{ by_id($a10, $b10, $gone10) }, $a11);
is_deeply(rows("group_by=ad_source&$DAY"), \@internal,
          'ad sources per hour: each sums its ad units but the external_only one; sorted by time, then id; '
          . 'a source without a record keeps its row, name null');
is_deeply(rows("group_by=ad_source&granularity=hour&$DAY", @ops), \@internal, '... the same for an operator');
my @external = (@{ by_id(row(a => $T10, sum([2024031010], qw(all/a ext/a))), row(b => $T10, sum([2024031010], qw(all/b ext/b))),
                         $gone10) }, $a11);
is_deeply(rows("group_by=ad_source&$DAY&audience=external"), \@external,
          'audience=external: the internal_only unit\'s counters left out, the external_only one\'s in');
is_deeply(rows('group_by=ad_source&granularity=day&from=2024-03-09T00:00:00Z&to=2024-03-11T00:00:00Z'),
          [ row(a => '2024-03-09T00:00:00Z', sum([2024030923], 'all/a')),
            @{ by_id(row(a => '2024-03-10T00:00:00Z', sum([2024031010, 2024031011], qw(all/a int/a))),
                     row(b => '2024-03-10T00:00:00Z', sum([2024031010], 'all/b')),
                     row(gone => '2024-03-10T00:00:00Z', sum([2024031010], 'all/gone'))) } ],
          'per day: the sum of its hours');
is_deeply(rows('group_by=ad_source&from=2024-03-10T11:00:00Z&to=2024-03-10T11:00:01Z'), [ $a11 ], 'the window: one hour');

# ---- filters -------------------------------------------------------------------------------------------
is_deeply(rows("group_by=ad_source&$DAY&ad_source_id=$src{a}"), [ $a10, $a11 ], 'ad_source_id filters');
is_deeply(rows("group_by=ad_source&$DAY&ad_unit_id=$unit{int}"), [ row(a => $T10, sum([2024031010], 'int/a')) ],
          'ad_unit_id: that unit\'s counters alone');
is_deeply(rows("group_by=ad_source&$DAY&ad_unit_id=$unit{all}&ad_source_id=$src{b}"), [ $b10 ], '... with ad_source_id');
is_deeply(rows("group_by=ad_source&$DAY&ad_unit_id=$unit{ext}"), [], 'an external_only unit stays hidden internally');
is_deeply(rows("group_by=ad_source&$DAY&ad_unit_id=$unit{ext}&audience=external"),
          by_id(row(a => $T10, sum([2024031010], 'ext/a')), row(b => $T10, sum([2024031010], 'ext/b'))),
          '... and shows externally');
is_deeply(rows("group_by=ad_source&$DAY&ad_unit_id=$unit{int}&audience=external"), [], '... the internal_only one the reverse');
is_deeply(rows("group_by=ad_source&$DAY&ad_source_id=" . Adserve::Test::uuid()), [], 'an unknown source: no rows');

# the two kinds of rows stay apart
is_deeply([ map { $_->{ad_unit_id} } @{ rows("group_by=ad_unit&$DAY") } ], [ $unit{all} ],
          'ad unit rows: the as: fields are not an ad unit\'s counters (only the u: one makes a row)');
is(rows("group_by=ad_unit&$DAY")->[0]{impressions}, 8, '... whose own impressions count as before');

# ---- CSV -------------------------------------------------------------------------------------------------
my $HEAD = "time,ad_source_id,name,bid_requests,bids,wins,timeouts,errors,blocked,impressions,clicks,revenue,ecpm,win_rate\r\n";
sub csv_line {
    my ($r) = @_;
    my $name = !defined $r->{name} ? '' : $r->{name} =~ /[,"]/ ? '"' . ($r->{name} =~ s/"/""/gr) . '"' : $r->{name};
    return join(',', $r->{time}, $r->{ad_source_id}, $name,
                map { $_ // '' } @$r{qw(bid_requests bids wins timeouts errors blocked impressions clicks revenue ecpm win_rate)}) . "\r\n";
}
is(csv_line($b10), "$T10,$src{b},\"Bidder, \"\"B\"\"\",30,0,0,30,0,0,0,0,0,,\r\n", '(the expected CSV line, spelled out once)');
my $res = $t->api('GET', "/api/metrics?group_by=ad_source&$DAY", headers => { Accept => 'text/csv' });
is($res->{status}, 200, 'CSV: 200');
is($res->{headers}{'content-type'}, 'text/csv; charset=utf-8', '... text/csv');
is($res->{content}, $HEAD . join('', map { csv_line($_) } @internal),
   '... the header of the ad source fields, then the same rows: quoted names, nulls empty');
$res = get("group_by=ad_source&$DAY&ad_unit_id=$unit{ext}&format=csv");
is($res->{content}, $HEAD, 'no rows: the header alone');

# ---- who may ----------------------------------------------------------------------------------------------
$t->refused(get("group_by=ad_source&$DAY", @buyer), 403, qr/^group_by=ad_source: advertisers/, 'group_by=ad_source as an advertiser');
$t->refused(get("group_by=ad_source&$DAY&audience=external", @buyer), 403, qr/ad_source/, '... also for its own audience');
$res = get("group_by=ad_source&$DAY&format=csv", @buyer);
is($res->{status}, 403, '... and as CSV');
like($res->{headers}{'content-type'}, qr{^application/json}, '... the error as JSON');
is($t->request('GET', "/api/metrics?group_by=ad_source&$DAY")->{status}, 401, 'no token: 401');
for my $case (
    [ "group_by=ad_unit&ad_source_id=$src{a}", qr/^ad_source_id: not a filter of group_by=ad_unit/, 'ad_source_id on ad units' ],
    [ "group_by=line_item&ad_source_id=$src{a}", qr/^ad_source_id: not a filter of group_by=line_item/, '... on line items' ],
    [ "group_by=ad_source&line_item_id=$src{a}", qr/^line_item_id: not a filter of group_by=ad_source/, 'line_item_id on ad sources' ],
    [ "group_by=ad_source&advertiser_id=$adv->{id}", qr/^advertiser_id: not a filter of group_by=ad_source/, 'advertiser_id on ad sources' ],
    [ 'group_by=ad_source&ad_source_id=42', qr/^ad_source_id: must be a UUID/, 'an ad_source_id that is no UUID' ],
    [ 'group_by=source', qr/^group_by: must be one of ad_unit, line_item, creative, advertiser, ad_source/, 'an unknown group' ],
) {
    $t->refused(get($case->[0]), 422, $case->[1], $case->[2]);
}

# ---- the dashboard: today's ---------------------------------------------------------------------------------
sub hour_key { my @g = gmtime $_[0]; sprintf 'adserve:stats:%04d%02d%02d%02d', $g[5] + 1900, $g[4] + 1, @g[3, 2] }
# far enough from midnight that today stays one day for the whole check
sleep 1 while time % 86400 > 86400 - 30;
my $now = int time;
my $hour = $now - $now % 3600;
my $today = $now - $now % 86400;
my %todays;
$todays{$hour} = { 'all/a' => { breq => 40, bids => 20, wins => 4, imp => 4, clk => 1, spend => 6000 },
                   'int/a' => { breq => 10, bids => 5, wins => 1, imp => 1, spend => 500 },
                   'ext/a' => { breq => 99, bids => 99, wins => 99, imp => 99, spend => 990000 },
                   'ext/b' => { breq => 5, bids => 5, wins => 5, imp => 5, spend => 5000000 },
                   'all/b' => { breq => 60, bids => 6, timeouts => 50, errors => 4 } };
$todays{$today}{'all/gone'} = { breq => 1, bids => 1, wins => 1, imp => 1, spend => 100 };   # 00:00 today
$todays{ $today - 3600 }{'all/a'} = { breq => 1000, bids => 1000 };                          # yesterday
for my $h (sort keys %todays) {
    for my $pair (sort keys %{ $todays{$h} }) {
        $t->redis('HINCRBY', hour_key($h), field($pair, $_), $todays{$h}{$pair}{$_}) for sort keys %{ $todays{$h}{$pair} };
    }
}
%hours = %todays;
sub dash_row { my $r = row(@_); delete $r->{time}; $r }
my @want = (dash_row(a => undef, sum([ $hour ], qw(all/a int/a))),        # revenue 0.0065
            dash_row(gone => undef, sum([ $today ], 'all/gone')),          # 0.0001
            dash_row(b => undef, sum([ $hour ], 'all/b')));                # 0, 60 bid requests
my $d = $t->api('GET', '/api/dashboard');
is($d->{status}, 200, 'the dashboard') or diag $d->{content};
is_deeply($d->{json}{ad_sources}, \@want,
          'ad_sources: today\'s per source (not yesterday\'s), over every unit but the external_only ones, '
          . 'by revenue; ecpm and win_rate as in the report');
is_deeply($t->api('GET', '/api/dashboard', @ops)->{json}{ad_sources}, \@want, '... the same for an operator');
my $own = $t->api('GET', '/api/dashboard', @buyer);
is($own->{status}, 200, 'an advertiser\'s dashboard');
ok(exists $own->{json}{ad_sources} && !defined $own->{json}{ad_sources}, '... ad_sources null');

# ---- the OpenAPI document, against real answers ---------------------------------------------------------------
my $doc = $t->request('GET', '/api/openapi.json');
my $op = $doc->{json}{paths}{'/api/metrics'}{get};
my %p = map { $_->{name} => $_ } @{ $op->{parameters} };
is_deeply($p{group_by}{schema}{enum}, [qw(ad_unit line_item creative advertiser ad_source)], 'OpenAPI: group_by has ad_source');
ok($p{ad_source_id} && $p{ad_source_id}{schema}{format} eq 'uuid', '... and the ad_source_id filter');
like($op->{responses}{200}{content}{'text/csv'}{schema}{description}, qr/group_by=ad_source: time,ad_source_id,name,bid_requests,bids,wins/,
     '... and the CSV header of ad source rows');
my $tmp = tempdir(CLEANUP => 1);
my $n = 0;
sub json_file { my $f = "$tmp/" . $n++ . '.json'; open my $fh, '>', $f or die $!; print $fh $_[0]; close $fh; $f }
my @files = (json_file($doc->{content}),
             MetricsReport => json_file(get("group_by=ad_source&$DAY")->{content}),
             MetricsReport => json_file(get("group_by=ad_unit&$DAY")->{content}),
             Dashboard => json_file($d->{content}), Dashboard => json_file($own->{content}));
my $out = qx{node "$Adserve::Test::ROOT/t/js/validate-openapi.mjs" @{[ map { quotemeta } @files ]} 2>&1};
is($?, 0, 'real reports of ad sources and ad units, and dashboards, validate against the document') or diag $out;

done_testing;
