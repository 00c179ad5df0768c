# GET /api/metrics: the module's hour hashes (adserve:stats:{YYYYMMDDHH})
# summed per ad unit, line item, creative or advertiser, per hour or day.
# Known counters are written straight into Redis on a fixed date, so every
# row is checked exact: each group_by, both granularities, the window
# (hours overlapping [from, to), to exclusive), ctr, spend, fill_rate,
# ad units' ext.metric_mode for both audiences, advertiser scoping, CSV
# with RFC 4180 quoting, 422s and 401. Then the defaults (today) on the
# real clock, and one end-to-end check: an ad served through nginx, its
# impression and click fired, the report shows exactly those.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use File::Temp qw(tempdir);
use Adserve::Test;

my $t = Adserve::Test->new;
my $pw = 'a-good-password';

# ---- the records -------------------------------------------------------------------------------
my %adv = (acme => $t->created('/api/advertisers', { name => 'Acme, Inc.' }),
           globex => $t->created('/api/advertisers', { name => 'Globex "Intl"' }));
my %order = map { $_ => $t->created('/api/orders', { advertiser_id => $adv{$_}{id}, name => "$_ order" }) } keys %adv;
sub line_item {
    my ($who, $name) = @_;
    return $t->created('/api/line-items', { order_id => $order{$who}{id}, name => $name, type => 'STANDARD',
                                            cost_type => 'CPM', rate => 1.5 });
}
my %li = (a1 => line_item(acme => 'Acme one'), a2 => line_item(acme => 'Acme two'), g => line_item(globex => 'Globex line'));
sub creative {
    my ($who, $name) = @_;
    return $t->created('/api/creatives', { advertiser_id => $adv{$who}{id}, name => $name, type => 'IMAGE', w => 300,
                                           h => 250, image_url => 'https://cdn.example/x.png',
                                           landing_url => 'https://x.example/' });
}
my %cr = (a => creative(acme => 'Acme banner'), g => creative(globex => 'Globex banner'));
my %unit;
for my $u ([ u1 => 'all' ], [ u2 => 'internal_only' ], [ u3 => 'external_only' ]) {
    $unit{ $u->[0] } = $t->created('/api/ad-units', { code => $u->[0], name => "Unit $u->[0]", ext => { metric_mode => $u->[1] } });
}
is($unit{u2}{ext}{metric_mode}, 'internal_only', 'ad units with each metric_mode');
$t->created('/api/users', { email => "$_\@buyers.example", password => $pw, role => 'advertiser',
                             advertiser_id => $adv{$_}{id} }) for qw(acme globex);
$t->created('/api/users', { email => 'ops@example.com', password => $pw, role => 'operator' });
my @acme = (as => [ 'acme@buyers.example', $pw ]);
my @globex = (as => [ 'globex@buyers.example', $pw ]);
my @ops = (as => [ 'ops@example.com', $pw ]);
my $gone = Adserve::Test::uuid();       # a line item that no longer exists

# ---- the counters: 2024-03-10 10:00 and 11:00, and 2024-03-09 23:00 ---------------------------------
my ($u1, $u2, $u3) = map { $unit{$_}{id} } qw(u1 u2 u3);
my ($a1, $a2, $g) = map { $li{$_}{id} } qw(a1 a2 g);
my ($ca, $cg) = map { $cr{$_}{id} } qw(a g);
my %hours = (
    2024031010 => {
        "u:$u1" => { req => 100, ads => 80, imp => 60, clk => 3, conv => 1, spend => 90000, convval => 5000000 },
        "u:$u2" => { req => 50, ads => 10, imp => 10, clk => 1, spend => 15000 },
        "u:$u3" => { req => 20, ads => 20, imp => 20, spend => 30000 },
        "li:$a1" => { ads => 50, imp => 40, clk => 2, conv => 1, spend => 60000, convval => 5000000, opp => 500 },
        "li:$a2" => { ads => 20, imp => 15, clk => 1, spend => 22500 },
        "li:$g" => { ads => 40, imp => 35, clk => 1, spend => 52500, start => 30, complete => 21, error => 2,
                     skip => 4, 'error:405' => 1, 'error:777' => 1 },
        "li:$gone" => { ads => 1, imp => 1 },
        "cr:$ca" => { ads => 70, imp => 55, clk => 3, conv => 1, spend => 82500, convval => 5000000 },
        # a video's VAST events, by their names
        "cr:$cg" => { ads => 40, imp => 35, clk => 1, spend => 52500, start => 30, firstQuartile => 28,
                      complete => 21, error => 2, 'error:405' => 1, 'error:900' => 1 },
    },
    2024031011 => {
        "u:$u1" => { req => 10 },
        "li:$a1" => { imp => 5, clk => 1, spend => 7500 },
    },
    2024030923 => {
        "u:$u1" => { req => 7, ads => 7, imp => 7, spend => 10500 },
        "li:$a1" => { ads => 7, imp => 7, spend => 10500 },
        "cr:$ca" => { ads => 7, imp => 7, spend => 10500 },
    },
);
for my $hour (sort keys %hours) {
    my @fv;
    for my $id (sort keys %{ $hours{$hour} }) {
        push @fv, "$id:$_", $hours{$hour}{$id}{$_} for sort keys %{ $hours{$hour}{$id} };
    }
    $t->redis('HSET', "adserve:stats:$hour", @fv);
}
# what a report never shows: repeats, invalid and dropped events, pacing's
# opportunities alone, zeros, a value that is not a count, a foreign id
$t->redis('HSET', 'adserve:stats:2024031010', 'dup:imp', 3, 'invalid:clk', 2, 'dropped:events', 1,
          'li:' . Adserve::Test::uuid() . ':opp', 9, 'li:' . Adserve::Test::uuid() . ':imp', 0,
          "cr:$ca:clk:x", 5, "li:$a2:conv", 'many', 'li:a"b:imp', 4);

# ---- helpers -----------------------------------------------------------------------------------------
sub get {
    my ($query, @as) = @_;
    return $t->api('GET', "/api/metrics?$query", @as);
}
sub rows {
    my ($query, @as) = @_;
    my $res = get($query, @as);
    is($res->{status}, 200, "$query: 200") or diag $res->{content};
    return $res->{json}{rows} // [];
}
sub r6 { 0 + sprintf '%.6f', $_[0] }
# an expected row from counters
sub row {
    my ($group, $id, $name, $time, %c) = @_;
    my $unit = $group eq 'ad_unit';
    $c{$_} //= 0 for qw(req ads imp clk conv spend convval start complete error passback);
    return { "${group}_id" => $id, name => $name, time => $time,
             requests => $unit ? $c{req} : undef, ads => $c{ads}, impressions => $c{imp}, clicks => $c{clk},
             conversions => $c{conv}, ctr => $c{imp} ? r6($c{clk} / $c{imp}) : 0, spend => $c{spend} / 1e6,
             conversion_value => $c{convval} / 1e6,
             fill_rate => $unit ? ($c{req} ? r6($c{ads} / $c{req}) : 0) : undef,
             video_starts => $c{start}, video_completes => $c{complete}, video_errors => $c{error},
             video_completion_rate => $c{start} ? r6($c{complete} / $c{start}) : 0,
             video_error_codes => { map { /^error:(\d+)$/ ? (vast_code($1) => $c{$_}) : () } keys %c },
             passbacks => $unit ? $c{passback} : undef };
}
# VAST 4.2's error codes: a report counts any other as 900 (the module
# writes none such; a field written past it is read so)
my %VAST = map { $_ => 1 } qw(100 101 102 200 201 202 203 204 205 206 300 301 302 303 304 400 401 402 403 405
                              406 407 408 409 410 500 501 502 503 600 601 602 603 604 900 901);
sub vast_code { $VAST{ $_[0] } ? $_[0] : 900 }
sub by_id { my $k = shift; [ sort { $a->{$k} cmp $b->{$k} } @_ ] }
my $T10 = '2024-03-10T10:00:00Z';
my $T11 = '2024-03-10T11:00:00Z';
my $T23 = '2024-03-09T23:00:00Z';
my $DAY = 'from=2024-03-10T00:00:00Z&to=2024-03-11T00:00:00Z';
my %h10 = %{ $hours{2024031010} };
my %h11 = %{ $hours{2024031011} };
my %h23 = %{ $hours{2024030923} };

# ---- ad units ------------------------------------------------------------------------------------------
my $u1_10 = row(ad_unit => $u1, 'Unit u1', $T10, %{ $h10{"u:$u1"} });
is_deeply($u1_10, { ad_unit_id => $u1, name => 'Unit u1', time => $T10, requests => 100, ads => 80, impressions => 60,
                    clicks => 3, conversions => 1, ctr => 0.05, spend => 0.09, conversion_value => 5, fill_rate => 0.8,
                    video_starts => 0, video_completes => 0, video_errors => 0, video_completion_rate => 0,
                    video_error_codes => {}, passbacks => 0 },
          '(the expected row, spelled out once)');
my $u2_10 = row(ad_unit => $u2, 'Unit u2', $T10, %{ $h10{"u:$u2"} });
my $u3_10 = row(ad_unit => $u3, 'Unit u3', $T10, %{ $h10{"u:$u3"} });
my $u1_11 = row(ad_unit => $u1, 'Unit u1', $T11, %{ $h11{"u:$u1"} });
is_deeply(rows("group_by=ad_unit&granularity=hour&$DAY"), [ @{ by_id(ad_unit_id => $u1_10, $u2_10) }, $u1_11 ],
          'ad units per hour: the internal report hides the external_only unit; sorted by time, then id');
is_deeply(rows("group_by=ad_unit&$DAY", @ops), [ @{ by_id(ad_unit_id => $u1_10, $u2_10) }, $u1_11 ],
          '... the same for an operator; granularity defaults to hour');
is_deeply(rows("group_by=ad_unit&$DAY&audience=external"), [ @{ by_id(ad_unit_id => $u1_10, $u3_10) }, $u1_11 ],
          'audience=external: the internal_only unit is hidden, the external_only one shown');
is_deeply(rows("group_by=ad_unit&$DAY&ad_unit_id=$u2"), [ $u2_10 ], 'ad_unit_id filters');
is_deeply(rows("group_by=ad_unit&$DAY&ad_unit_id=$u3"), [], '... and an external_only unit stays hidden internally');
my ($served11) = @{ rows('group_by=ad_unit&from=2024-03-10T11:00:00Z&to=2024-03-10T11:00:01Z') };
is("$served11->{fill_rate}/$served11->{ctr}", '0/0', 'requests without ads: fill_rate 0, ctr 0 without impressions');

my %u1_day = map { my $k = $_; $k => ($h10{"u:$u1"}{$k} // 0) + ($h11{"u:$u1"}{$k} // 0) } qw(req ads imp clk conv spend convval);
is_deeply(rows('group_by=ad_unit&granularity=day&from=2024-03-09T00:00:00Z&to=2024-03-11T00:00:00Z'),
          [ row(ad_unit => $u1, 'Unit u1', '2024-03-09T00:00:00Z', %{ $h23{"u:$u1"} }),
            @{ by_id(ad_unit_id => row(ad_unit => $u1, 'Unit u1', '2024-03-10T00:00:00Z', %u1_day),
                     row(ad_unit => $u2, 'Unit u2', '2024-03-10T00:00:00Z', %{ $h10{"u:$u2"} })) } ],
          'per day: the sum of its hours, time the day\'s start');

# the window: every hour overlapping [from, to)
is_deeply(rows('group_by=ad_unit&from=2024-03-10T10:30:00Z&to=2024-03-10T11:00:00Z'), by_id(ad_unit_id => $u1_10, $u2_10),
          'from inside an hour counts that hour; to is exclusive');
is_deeply(rows('group_by=ad_unit&from=2024-03-10T11:00:00Z&to=2024-03-10T11:00:01Z'), [ $u1_11 ],
          'a one-second window holds its hour');
is_deeply(rows('group_by=ad_unit&from=2024-03-09T23:00:00Z&to=2024-03-10T10:00:00Z'),
          [ row(ad_unit => $u1, 'Unit u1', $T23, %{ $h23{"u:$u1"} }) ], 'yesterday\'s hour alone, the next day\'s 10:00 excluded');
is_deeply(rows('group_by=ad_unit&from=2024-03-10T12:00:00%2B02:00&to=2024-03-10T11:00:00Z'), by_id(ad_unit_id => $u1_10, $u2_10),
          'offsets are honoured (12:00+02:00 is 10:00Z)');
is_deeply(rows('group_by=ad_unit&granularity=day&from=2024-03-10T11:00:00Z&to=2024-03-10T12:00:00Z'),
          [ row(ad_unit => $u1, 'Unit u1', '2024-03-10T00:00:00Z', %{ $h11{"u:$u1"} }) ],
          'a day row sums only the hours inside the window');
is_deeply(rows('group_by=ad_unit&from=2024-03-11T00:00:00Z&to=2024-03-12T00:00:00Z'), [], 'a window without counters: no rows');

# ---- line items, creatives, advertisers ---------------------------------------------------------------------
my %li_rows = (
    a1 => row(line_item => $a1, 'Acme one', $T10, %{ $h10{"li:$a1"} }),
    a2 => row(line_item => $a2, 'Acme two', $T10, %{ $h10{"li:$a2"} }),
    g => row(line_item => $g, 'Globex line', $T10, %{ $h10{"li:$g"} }),
    gone => row(line_item => $gone, undef, $T10, %{ $h10{"li:$gone"} }),
    a1_11 => row(line_item => $a1, 'Acme one', $T11, %{ $h11{"li:$a1"} }),
);
my ($served_a1) = @{ rows("group_by=line_item&from=2024-03-10T10:00:00Z&to=2024-03-10T11:00:00Z&line_item_id=$a1") };
ok(exists $served_a1->{requests} && !defined $served_a1->{requests}, 'line item rows: requests null');
ok(exists $served_a1->{fill_rate} && !defined $served_a1->{fill_rate}, '... fill_rate null');
is_deeply(rows("group_by=line_item&$DAY"), [ @{ by_id(line_item_id => @li_rows{qw(a1 a2 g gone)}) }, $li_rows{a1_11} ],
          'line items per hour: opp and zero-only ids make no row; a deleted line item keeps its row, name null');
is_deeply(rows("group_by=line_item&$DAY&line_item_id=$a1"), [ @li_rows{qw(a1 a1_11)} ], 'line_item_id filters');
is_deeply(rows("group_by=line_item&$DAY&advertiser_id=$adv{globex}{id}"), [ $li_rows{g} ], 'advertiser_id filters line items');
is_deeply(rows("group_by=line_item&$DAY&order_id=$order{acme}{id}"), [ @{ by_id(line_item_id => @li_rows{qw(a1 a2)}) }, $li_rows{a1_11} ],
          'order_id filters line items: its own (an order\'s delivery)');
is_deeply(rows("group_by=line_item&$DAY&order_id=$order{globex}{id}&line_item_id=$a1"), [], '... and combines with line_item_id');
is_deeply(rows("group_by=creative&$DAY"), by_id(creative_id => row(creative => $ca, 'Acme banner', $T10, %{ $h10{"cr:$ca"} }),
                                                 row(creative => $cg, 'Globex banner', $T10, %{ $h10{"cr:$cg"} })),
          'creatives per hour');
my %acme10 = map { my $k = $_; $k => ($h10{"li:$a1"}{$k} // 0) + ($h10{"li:$a2"}{$k} // 0) } qw(ads imp clk conv spend convval);
my $acme_rows = [ @{ by_id(advertiser_id => row(advertiser => $adv{acme}{id}, 'Acme, Inc.', $T10, %acme10),
                           row(advertiser => $adv{globex}{id}, 'Globex "Intl"', $T10, %{ $h10{"li:$g"} })) },
                  row(advertiser => $adv{acme}{id}, 'Acme, Inc.', $T11, %{ $h11{"li:$a1"} }) ];
is_deeply(rows("group_by=advertiser&$DAY"), $acme_rows,
          'advertisers: the sums of their line items (a deleted line item counts for none)');
is_deeply(rows("group_by=advertiser&$DAY&advertiser_id=$adv{globex}{id}"), [ grep { $_->{advertiser_id} eq $adv{globex}{id} } @$acme_rows ],
          'advertiser_id filters advertisers');
is_deeply(rows("group_by=line_item&granularity=day&from=2024-03-09T00:00:00Z&to=2024-03-11T00:00:00Z&line_item_id=$a1"),
          [ row(line_item => $a1, 'Acme one', '2024-03-09T00:00:00Z', %{ $h23{"li:$a1"} }),
            row(line_item => $a1, 'Acme one', '2024-03-10T00:00:00Z',
                map { my $k = $_; $k => ($h10{"li:$a1"}{$k} // 0) + ($h11{"li:$a1"}{$k} // 0) } qw(ads imp clk conv spend convval)) ],
          'a line item per day');

# ---- advertisers' own rows ------------------------------------------------------------------------------------
is_deeply(rows("group_by=line_item&$DAY", @acme), [ @{ by_id(line_item_id => @li_rows{qw(a1 a2)}) }, $li_rows{a1_11} ],
          'an advertiser sees its own line items only');
is_deeply(rows("group_by=line_item&$DAY", @globex), [ $li_rows{g} ], '... the other advertiser its own');
is_deeply(rows("group_by=creative&$DAY", @acme), [ row(creative => $ca, 'Acme banner', $T10, %{ $h10{"cr:$ca"} }) ],
          '... its own creatives');
is_deeply(rows("group_by=advertiser&$DAY", @acme), [ grep { $_->{advertiser_id} eq $adv{acme}{id} } @$acme_rows ],
          '... itself among advertisers');
is_deeply(rows("group_by=line_item&$DAY&line_item_id=$g", @acme), [], 'another advertiser\'s line item: no rows');
is_deeply(rows("group_by=line_item&$DAY&advertiser_id=$adv{globex}{id}", @acme), [], '... another advertiser: no rows');
is_deeply(rows("group_by=line_item&$DAY&order_id=$order{globex}{id}", @acme), [], '... another advertiser\'s order: no rows');
is_deeply(rows("group_by=line_item&$DAY&order_id=$order{acme}{id}", @acme), [ @{ by_id(line_item_id => @li_rows{qw(a1 a2)}) }, $li_rows{a1_11} ],
          '... its own order: its line items');
is_deeply(rows("group_by=advertiser&$DAY&advertiser_id=$adv{globex}{id}", @acme), [], '... nor as an advertiser row');
is_deeply(rows("group_by=line_item&$DAY&audience=external", @acme), [ @{ by_id(line_item_id => @li_rows{qw(a1 a2)}) }, $li_rows{a1_11} ],
          'audience=external is an advertiser\'s own audience');
$t->refused(get("group_by=ad_unit&$DAY", @acme), 403, qr/ad_unit/, 'group_by=ad_unit as an advertiser');
$t->refused(get("group_by=line_item&$DAY&audience=internal", @acme), 403, qr/audience/, 'audience=internal as an advertiser');

# ---- CSV ----------------------------------------------------------------------------------------------------------
my $res = $t->api('GET', "/api/metrics?group_by=advertiser&$DAY", headers => { Accept => 'text/csv' });
is($res->{status}, 200, 'CSV: 200');
is($res->{headers}{'content-type'}, 'text/csv; charset=utf-8', 'CSV: its content type');
my ($acme_id, $globex_id) = ($adv{acme}{id}, $adv{globex}{id});
my %csv_line = (
    acme10 => "$T10,$acme_id,\"Acme, Inc.\",,70,55,3,1,0.054545,0.0825,5,,0,0,0,0,,",
    globex10 => "$T10,$globex_id,\"Globex \"\"Intl\"\"\",,40,35,1,0,0.028571,0.0525,0,,30,21,2,0.7,405:1 900:1,",
    acme11 => "$T11,$acme_id,\"Acme, Inc.\",,0,5,1,0,0.2,0.0075,0,,0,0,0,0,,",
);
is($res->{content}, join('', map { "$_\r\n" }
       'time,advertiser_id,name,requests,ads,impressions,clicks,conversions,ctr,spend,conversion_value,fill_rate,'
       . 'video_starts,video_completes,video_errors,video_completion_rate,video_error_codes,passbacks',
       ($acme_id lt $globex_id ? @csv_line{qw(acme10 globex10)} : @csv_line{qw(globex10 acme10)}), $csv_line{acme11}),
   'CSV: a header, then the same rows; names with a comma or quotes are quoted, quotes doubled, nulls empty');
$res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY&ad_unit_id=$u1&format=csv");
is($res->{headers}{'content-type'}, 'text/csv; charset=utf-8', '?format=csv asks for CSV too');
my $HEAD = 'time,ad_unit_id,name,requests,ads,impressions,clicks,conversions,ctr,spend,conversion_value,fill_rate,'
         . "video_starts,video_completes,video_errors,video_completion_rate,video_error_codes,passbacks\r\n";
is($res->{content}, $HEAD . "$T10,$u1,Unit u1,100,80,60,3,1,0.05,0.09,5,0.8,0,0,0,0,,0\r\n$T11,$u1,Unit u1,10,0,0,0,0,0,0,0,0,0,0,0,0,,0\r\n",
   '... ad units with requests and fill_rate; plain fields unquoted');
$res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY&ad_unit_id=$u3&format=csv");
is($res->{content}, $HEAD,
   'no rows: the header alone');
for my $accept ('application/json, text/csv;q=0.5', 'text/csv;q=0, application/json', '*/*', 'text/csv;q=0.5, application/json;q=0.5') {
    $res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY", headers => { Accept => $accept });
    like($res->{headers}{'content-type'}, qr{^application/json}, "Accept: $accept -> JSON");
}
$res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY", headers => { Accept => 'application/json;q=0.4, text/csv' });
like($res->{headers}{'content-type'}, qr{^text/csv}, 'CSV preferred by quality -> CSV');
$res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY&format=json", headers => { Accept => 'text/csv' });
like($res->{headers}{'content-type'}, qr{^application/json}, '?format=json wins over Accept');
$res = $t->api('GET', "/api/metrics?group_by=ad_unit&$DAY", @acme, headers => { Accept => 'text/csv' });
is($res->{status}, 403, 'CSV: errors stay JSON {detail}');
like($res->{headers}{'content-type'}, qr{^application/json}, '... as JSON');

# ---- refusals --------------------------------------------------------------------------------------------------------
for my $case (
    [ '', qr/^group_by: is required/, 'no group_by' ],
    [ 'group_by=placement', qr/^group_by: must be one of ad_unit, line_item, creative, advertiser/, 'an unknown group' ],
    [ 'group_by=ad_unit&granularity=week', qr/^granularity: must be one of hour, day/, 'an unknown granularity' ],
    [ 'group_by=ad_unit&from=yesterday', qr/^from: must be an RFC 3339 date-time/, 'a from that is no date-time' ],
    [ 'group_by=ad_unit&to=2024-02-30T00:00:00Z', qr/^to: must be an RFC 3339/, 'February 30' ],
    [ 'group_by=ad_unit&from=2024-03-10T00:00:00Z&to=2024-03-10T00:00:00Z', qr/^to: must be after from/, 'an empty window' ],
    [ 'group_by=ad_unit&from=2024-03-10T00:00:00Z&to=2024-03-09T00:00:00Z', qr/^to: must be after from/, 'a window backwards' ],
    [ 'group_by=ad_unit&from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:01Z', qr/^to: .*more than 31 days at hour/, '31 days and a second, hourly' ],
    [ 'group_by=ad_unit&granularity=day&from=2024-01-01T00:00:00Z&to=2025-02-05T00:00:00Z', qr/^to: .*more than 400 days at day/, '401 days, daily' ],
    [ 'group_by=line_item&ad_unit_id=' . $u1, qr/^ad_unit_id: not a filter of group_by=line_item/, 'ad_unit_id on line items' ],
    [ 'group_by=ad_unit&advertiser_id=' . $acme_id, qr/^advertiser_id: not a filter of group_by=ad_unit/, 'advertiser_id on ad units' ],
    [ 'group_by=creative&line_item_id=' . $a1, qr/^line_item_id: not a filter of group_by=creative/, 'line_item_id on creatives' ],
    [ 'group_by=advertiser&order_id=' . $order{acme}{id}, qr/^order_id: not a filter of group_by=advertiser/, 'order_id on advertisers' ],
    [ 'group_by=line_item&line_item_id=42', qr/^line_item_id: must be a UUID/, 'an id that is no UUID' ],
    [ 'group_by=ad_unit&audience=everyone', qr/^audience: must be one of internal, external/, 'an unknown audience' ],
    [ 'group_by=ad_unit&format=xml', qr/^format: must be one of json, csv/, 'an unknown format' ],
    [ 'group_by=ad_unit&limit=5', qr/^limit: unknown property/, 'an unknown parameter' ],
    [ 'group_by=ad_unit&group_by=line_item', qr/^group_by: duplicate property/, 'a repeated parameter' ],
) {
    $t->refused(get($case->[0]), 422, $case->[1], $case->[2]);
}
is(get('group_by=ad_unit&from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z')->{status}, 200, '31 days exactly, hourly: 200');
is(get('group_by=ad_unit&granularity=day&from=2024-01-01T00:00:00Z&to=2025-02-04T00:00:00Z')->{status}, 200, '400 days, daily: 200');
$res = $t->request('GET', '/api/metrics?group_by=ad_unit');
is($res->{status}, 401, 'no token: 401');
is($res->{headers}{'www-authenticate'}, 'Bearer', '... with WWW-Authenticate');
is($t->api('GET', '/api/metrics?group_by=ad_unit', token => 'not-a-token')->{status}, 401, 'a bad token: 401');

# ---- defaults: today, on the real clock ---------------------------------------------------------------------------------
sub hour_key { my @g = gmtime $_[0]; sprintf '%04d%02d%02d%02d', $g[5] + 1900, $g[4] + 1, @g[3, 2] }
sub iso { my @g = gmtime $_[0]; sprintf '%04d-%02d-%02dT%02d:%02d:%02dZ', $g[5] + 1900, $g[4] + 1, @g[3, 2, 1, 0] }
# far enough from the end of the hour (and of the day) that "now" stays in
# this hour for the whole check
sleep 1 while time % 3600 > 3600 - 20 || time % 3600 < 3;    # "now" is exclusive: not at :00:00
my $now = time;
my $hour = $now - $now % 3600;
my $today = $now - $now % 86400;
$t->redis('HINCRBY', 'adserve:stats:' . hour_key($hour), "u:$u1:req", 4);
$t->redis('HINCRBY', 'adserve:stats:' . hour_key($today - 3600), "u:$u1:req", 9);      # yesterday 23:00
$t->redis('HINCRBY', 'adserve:stats:' . hour_key($hour + 3600), "u:$u1:req", 5) if $hour + 3600 < $today + 86400;  # later today
is_deeply(rows("group_by=ad_unit&ad_unit_id=$u1"), [ row(ad_unit => $u1, 'Unit u1', iso($hour), req => 4) ],
          'by default: from 00:00 UTC today to now (yesterday\'s and later hours are out)');
is_deeply(rows("group_by=ad_unit&ad_unit_id=$u1&granularity=day"), [ row(ad_unit => $u1, 'Unit u1', iso($today), req => 4) ],
          '... per day');
is_deeply(rows("group_by=ad_unit&ad_unit_id=$u1&from=" . iso($today - 3600)),
          [ row(ad_unit => $u1, 'Unit u1', iso($today - 3600), req => 9), row(ad_unit => $u1, 'Unit u1', iso($hour), req => 4) ],
          '... from alone: to is now');

# ---- end to end: serve, impression, click -----------------------------------------------------------------------------
my $c = $t->chain(line_item => { name => 'End to end', cost_type => 'CPM', rate => 2 });
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'a servable chain');
$res = $t->ad($c->{unit});
is($res->{status}, 200, 'an ad through nginx') or diag $res->{content};
my $ad = $res->{json}{ad};
my $before = time;
is($t->request('GET', $ad->{impression_url} =~ s{^https?://[^/]+}{}r)->{status}, 204, 'its impression');
is($t->request('GET', $ad->{click_url} =~ s{^https?://[^/]+}{}r, redirect => 0)->{status}, 302, 'its click');
my $after = time;
my $got;
ok($t->wait_until(10, sub {
    $got = get("group_by=line_item&line_item_id=$c->{line_item}")->{json}{rows};
    $got && @$got && (grep { $_->{impressions} } @$got) && (grep { $_->{clicks} } @$got);
}), 'the flush lands in the report') or diag explain $got;
my %sum;
for my $r (@$got) { $sum{$_} += $r->{$_} for qw(ads impressions clicks) }
is_deeply(\%sum, { ads => 1, impressions => 1, clicks => 1 }, 'exactly one ad, one impression and one click');
if (hour_key($before) eq hour_key($after)) {
    is(scalar @$got, 1, '... in one row');
    is($got->[0]{time}, iso($before - $before % 3600), '... of the current hour');
    is($got->[0]{spend}, 0.002, '... spending the CPM rate / 1000');
    is($got->[0]{ctr}, 1, '... ctr 1');
}

# ---- the OpenAPI document -----------------------------------------------------------------------------------------------
my $doc = $t->request('GET', '/api/openapi.json')->{json};
my $op = $doc->{paths}{'/api/metrics'}{get};
ok($op, 'GET /api/metrics is documented');
my %p = map { $_->{name} => $_ } @{ $op->{parameters} };
is_deeply($p{group_by}{schema}{enum}, [qw(ad_unit line_item creative advertiser ad_source)], '... group_by (ad_source: t/157)');
ok($p{group_by}{required}, '... required');
is_deeply([ sort keys %p ], [ sort qw(group_by granularity from to ad_unit_id line_item_id creative_id advertiser_id order_id ad_source_id audience format) ],
          '... every parameter');
is($op->{responses}{200}{content}{'application/json'}{schema}{'$ref'}, '#/components/schemas/MetricsReport', '... the JSON report');
is($op->{responses}{200}{content}{'text/csv'}{schema}{type}, 'string', '... and its CSV form');
my $tmp = tempdir(CLEANUP => 1);
my $n = 0;
sub json_file { my $f = "$tmp/" . $n++ . '.json'; open my $fh, '>', $f or die $!; print $fh $_[0]; close $fh; $f }
my @pairs = map { (MetricsReport => json_file(get("$_&$DAY")->{content})) } map { "group_by=$_" } qw(ad_unit line_item creative advertiser);
my $out = qx{node "$Adserve::Test::ROOT/t/js/validate-openapi.mjs" @{[ map { quotemeta } json_file($t->request('GET', '/api/openapi.json')->{content}), @pairs ]} 2>&1};
is($?, 0, 'real reports of each group validate against the MetricsReport component') or diag $out;

done_testing;
