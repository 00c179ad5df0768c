# Events end to end: ad requests and ads counted by serving, impressions,
# clicks and conversions through their endpoints, all flushed by the
# workers to Redis (adserve:stats:{hour}, adserve:delivery, the stream
# adserve:events). A repeated event answers as the first did and counts
# once. Forged, truncated, foreign-key and expired tokens answer 400 and
# count as invalid, never as events. Counts are checked exact, summed over
# every hour hash (a run may straddle an hour); waits poll until the flush
# lands, with a deadline.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(decode_base64url);
use Adserve::Test;

my $t = Adserve::Test->new(clock => 1);
my $landing = 'https://advertiser.example/landing?utm=adserve';
my $c = $t->chain(line_item => { cost_type => 'CPM', rate => 2.5 },
                  creative => { landing_url => $landing });
my ($unit, $li, $cr) = @$c{qw(unit line_item creative)};
# an ACTIVE unit nothing targets: requests, no ads
my $empty = Adserve::Test::uuid();
my $rev = $t->put(ad_units => { id => $empty, status => 'ACTIVE', display => { w => 300, h => 250 } });
ok($t->wait_until(5, sub { $t->workers_at($rev) }), 'fixtures loaded');

# rate 2.5 per mille: 2,500,000 micros per thousand, 2,500 per impression
my $PRICE = 2_500_000;
my $SPEND = $PRICE / 1000;

sub flushed {
    my ($name, %want) = @_;
    my $ok = $t->wait_until(10, sub { $t->stats_are(%want) });
    ok($ok, $name) or diag explain { map { $_ => $t->stat_sum($_) } sort keys %want };
}

# the request id of a token: its nonce, after the key id
sub rid { unpack 'H*', substr(decode_base64url($_[0]), 1, 12) }

# ---- ad requests and ads, from both workers ------------------------------------------------------
my @tokens;
my $conns = $t->worker_connections;
for my $i (1 .. 30) {
    my $res = $t->ad($unit, undef, via => $conns->[ $i % @$conns ]);
    push @tokens, $res->{json}{ext}{ad_log} if $res->{status} == 200;
}
is(scalar @tokens, 30, '30 ads served');
is($t->ad($empty)->{status}, 204, 'no ad on the untargeted unit') for 1 .. 4;
is($t->ad($unit, '{"version":')->{status}, 500, 'a malformed request: 500, not an ad request');

flushed('30 ad requests and 30 ads, per unit, line item and creative',
        "u:$unit:req" => 30, "u:$unit:ads" => 30, "li:$li:ads" => 30, "cr:$cr:ads" => 30,
        "u:$empty:req" => 4, "u:$empty:ads" => 0);
is($t->delivery("$li:ads"), 30, 'adserve:delivery: the line item\'s ads');
my $all = $t->worker_status;
is(scalar(grep { $_->{events}{flushed_batches} > 0 } values %$all), 2,
   'both workers counted and flushed');
is(scalar(grep { $_->{events}{redis} eq 'up' } values %$all), 2, "the status shows each worker's events");

# ---- impressions -----------------------------------------------------------------------------------
my ($t1, $t2, $t3) = @tokens;
my $res = $t->event(impression => $t1);
is($res->{status}, 204, 'impression: 204');
is($res->{content} // '', '', '... no body');
is($t->event(impression => $t1)->{status}, 204, 'the same impression again: 204 all the same');
is($t->event(impression => $t2, method => 'HEAD')->{status}, 204, 'HEAD records an impression too');
flushed('two impressions counted, the repeat as a duplicate',
        "u:$unit:imp" => 2, "li:$li:imp" => 2, "cr:$cr:imp" => 2, 'dup:imp' => 1,
        "u:$unit:spend" => 2 * $SPEND, "li:$li:spend" => 2 * $SPEND, "cr:$cr:spend" => 2 * $SPEND);
is($t->delivery("$li:imp"), 2, 'delivery: 2 impressions');
is($t->delivery("$li:spend"), 2 * $SPEND, 'delivery: spend in micros, CPM per impression');

# ---- clicks -----------------------------------------------------------------------------------------
$res = $t->event(click => $t1);
is($res->{status}, 302, 'click: 302');
is($res->{headers}{location}, $landing, '... to the creative\'s landing page');
is($res->{headers}{'cache-control'}, 'no-store', '... not cached');
is($t->event(click => $t1)->{status}, 302, 'the same click again: 302');
$res = $t->event(click => "$t3&url=https://evil.example/");
is($res->{headers}{location}, $landing, 'a url parameter changes nothing: no open redirect');
flushed('two clicks counted, the repeat as a duplicate, no spend on CPM',
        "u:$unit:clk" => 2, "li:$li:clk" => 2, "cr:$cr:clk" => 2, 'dup:clk' => 1,
        "u:$unit:spend" => 2 * $SPEND);
is($t->delivery("$li:clk"), 2, 'delivery: 2 clicks');

# ---- conversions ---------------------------------------------------------------------------------------
$res = $t->event(conversion => $t1, value => 12.5);
is($res->{status}, 204, 'conversion: 204') or diag $res->{content};
is($t->event(conversion => $t1, value => 12.5)->{status}, 204, 'the same conversion again: 204');
is($t->event(conversion => $t2)->{status}, 204, 'a conversion without a value');
flushed('two conversions, one value',
        "u:$unit:conv" => 2, "li:$li:conv" => 2, "cr:$cr:conv" => 2, 'dup:conv' => 1,
        "u:$unit:convval" => 12_500_000, "li:$li:convval" => 12_500_000, "cr:$cr:convval" => 12_500_000);
is($t->delivery("$li:conv"), 2, 'delivery: 2 conversions');
is($t->delivery("$li:convval"), 12_500_000, 'delivery: the value in micros');

# ---- the raw events ----------------------------------------------------------------------------------------
my @stream = map { my %f = @{ $_->[1] }; \%f } @{ stream() };
is(scalar @stream, 6, 'adserve:events: one entry per counted event (2 each)');
my %by_type;
push @{ $by_type{$_->{type}} }, $_ for @stream;
is(scalar @{ $by_type{$_} // [] }, 2, "... 2 of type $_") for qw(imp clk conv);
my ($conv) = grep { $_->{value} } @stream;
is_deeply({ map { $_ => $conv->{$_} } qw(type rid unit li cr user cost price value) },
          { type => 'conv', rid => rid($t1), unit => $unit, li => $li, cr => $cr, user => 'u1',
            cost => 'CPM', price => $PRICE, value => 12_500_000 },
          'an entry holds the request id, the ids, the user, cost, price and value');
like($conv->{ts}, qr/^\d{10}$/, '... its time');
like($conv->{issued}, qr/^\d{10}$/, '... and the token\'s issue time');

sub stream {
    my @lines = split /\n/, $t->redis('XRANGE', 'adserve:events', '-', '+');
    my @entries;
    while (@lines) {
        my $id = shift @lines;
        my @f;
        push @f, shift @lines, shift @lines while @lines && $lines[0] !~ /^\d+-\d+$/;
        push @entries, [ $id, \@f ];
    }
    return \@entries;
}

# the dedup sets expire at the end of the issue hour plus the ttl (that
# hour may have ended in the seconds since the token was issued: CI once
# read exactly 86400 at 03:00:00)
my ($seen) = grep { length } split /\n/, $t->redis('--scan', '--pattern', 'adserve:seen:imp:*');
my $ttl = $t->redis('TTL', $seen);
ok($ttl > 86400 - 60 && $ttl <= 86400 + 3600,
   "adserve:seen:imp:{hour} expires a day after the end of the issue hour ($ttl s)");
is($t->redis('SISMEMBER', $seen, rid($t1)), 1, '... and holds the request id in hex');

# ---- invalid tokens ---------------------------------------------------------------------------------------
my $flipped = $t3;
my $i = int(length($flipped) / 2);
substr($flipped, $i, 1) = substr($flipped, $i, 1) eq 'A' ? 'B' : 'A';
$t->refused($t->event(impression => $flipped), 400, qr/^invalid ad_log$/, 'one character flipped');
$t->refused($t->event(impression => substr($t3, 0, -4)), 400, qr/^invalid ad_log$/, 'truncated');
$t->refused($t->event(impression => "$t3%3D"), 400, qr/^invalid ad_log$/, 'a character outside base64url');
$t->refused($t->event(impression => 'x' x 2000), 400, qr/^invalid ad_log$/, 'far too long');
$t->refused($t->event(click => $flipped), 400, qr/^invalid ad_log$/, 'a forged click');
$t->refused($t->event(conversion => $flipped), 400, qr/^invalid ad_log$/, 'a forged conversion');
$t->refused($t->request('GET', '/app/v0/event/impression'), 400, qr/^missing ad_log$/, 'no ad_log');

# bad conversion bodies
my @bad = (
    [ 'not JSON',           'ad_log=x' ],
    [ 'an array',           '[]' ],
    [ 'no type',            qq({"ad_log":"$t3"}) ],
    [ 'another type',       qq({"ad_log":"$t3","type":"click"}) ],
    [ 'no ad_log',          '{"type":"conversion"}' ],
    [ 'ad_log not a string', '{"type":"conversion","ad_log":5}' ],
    [ 'a negative value',   qq({"ad_log":"$t3","type":"conversion","value":-1}) ],
    [ 'a string value',     qq({"ad_log":"$t3","type":"conversion","value":"3"}) ],
    [ 'an infinite value',  qq({"ad_log":"$t3","type":"conversion","value":1e999}) ],
    [ 'a value over 1e9',   qq({"ad_log":"$t3","type":"conversion","value":1000000001}) ],
    [ 'an empty body',      '' ],
);
for my $b (@bad) {
    my $r = $t->request('POST', '/app/v0/event', body => $b->[1],
                        headers => { 'content-type' => 'application/json' });
    $t->refused($r, 400, qr/./, "conversion with $b->[0]");
}
is($t->request('POST', '/app/v0/event', body => '{"pad":"' . ('x' x 5000) . '"}')->{status}, 413,
   'a body over 4 KiB: 413');

# methods and paths
$res = $t->request('PUT', '/app/v0/event/impression');
$t->refused($res, 405, qr/GET/, 'PUT on impression');
is($res->{headers}{allow}, 'GET, HEAD', '... Allow: GET, HEAD');
$res = $t->request('GET', '/app/v0/event');
$t->refused($res, 405, qr/POST/, 'GET on the conversion endpoint');
is($res->{headers}{allow}, 'POST', '... Allow: POST');
$t->refused($t->request('GET', '/app/v0/event/view?ad_log=x'), 404, qr/no such event endpoint/, 'another path');
$t->refused($t->request('GET', '/app/v0/eventual'), 404, qr/no such event endpoint/, 'a longer prefix');
is($t->request('OPTIONS', '/app/v0/event')->{status}, 204, 'OPTIONS: the CORS preflight');

# a token sealed with another key under the same key id: after a key
# change, tokens of the old key are refused
my $old = $tokens[10];
my $keys = $t->var . '/secrets/ad_log.keys';
open my $fh, '>', $keys or die "$keys: $!";
print $fh '1 ', join('', map { sprintf '%02x', int rand 256 } 1 .. 32), "\n";
close $fh;
my @before = $t->workers;
is($t->nginx('-s', 'reload'), 0, 'a new key (same key id), reloaded');
ok($t->wait_until(10, sub { !grep { kill 0, $_ } @before }), '... the old workers exit');
ok($t->wait_until(10, sub { $t->workers_connected && $t->workers_at($rev) }), '... the new ones are ready');
$t->refused($t->event(impression => $old), 400, qr/^invalid ad_log$/, 'a token from another key');
my $fresh = $t->ad($unit)->{json}{ext}{ad_log};
is($t->event(impression => $fresh)->{status}, 204, 'a token of the new key: 204');

# expiry, with the test clock: a second past the ttl, or issued ahead of now
my $issued = time;
my $fresh2 = $t->ad($unit)->{json}{ext}{ad_log};
$t->refused($t->event(impression => $fresh2, headers => { 'X-Adserve-Clock' => $issued - 120 }),
            400, qr/^expired ad_log$/, 'issued two minutes ahead of the clock');
$t->refused($t->event(impression => $fresh2, headers => { 'X-Adserve-Clock' => $issued + 86400 + 5 }),
            400, qr/^expired ad_log$/, 'an impression over a day after its ad');
$t->refused($t->event(click => $fresh2, headers => { 'X-Adserve-Clock' => $issued + 86400 + 5 }),
            400, qr/^expired ad_log$/, 'a click over a day after its ad');
is($t->event(conversion => $fresh2, headers => { 'X-Adserve-Clock' => $issued + 86400 + 5 })->{status},
   204, 'a conversion a day later: within its 30 days');
$t->refused($t->event(conversion => $fresh2, headers => { 'X-Adserve-Clock' => $issued + 31 * 86400 }),
            400, qr/^expired ad_log$/, 'a conversion after 31 days');

# invalid: 5 impressions (flipped, truncated, character, too long, other
# key) + 2 expired; 1 click + 1 expired; 1 conversion + 1 expired
flushed('invalid tokens counted per type, never as events',
        'invalid:imp' => 7, 'invalid:clk' => 2, 'invalid:conv' => 2,
        "u:$unit:imp" => 3, "u:$unit:clk" => 2, "u:$unit:conv" => 3);
is(scalar @{ stream() }, 8, 'the stream holds the 8 counted events, no invalid one');

# a click whose creative is gone from the inventory: 404, not counted
my $gone = $t->del(creatives => $cr);
ok($t->wait_until(5, sub { $t->workers_at($gone) }), 'the creative deleted');
$t->refused($t->event(click => $fresh, headers => { 'X-Adserve-Clock' => $issued }), 404,
            qr/^unknown creative$/, 'a click on a creative that is gone');

# a landing page that would split the header is never sent
my $bad = $t->chain(creative => { landing_url => "https://x.example/\r\nSet-Cookie: a=b" });
ok($t->wait_until(5, sub { $t->workers_at($bad->{rev}) }), 'a creative with CR LF in its landing_url');
# (at the clock of the click: a worker's clock is the latest it has seen)
my $btok = $t->request('POST', "/app/v0/ad/$bad->{unit}", json => { version => '0.1.0' },
                       headers => { 'X-Adserve-Clock' => $issued })->{json}{ext}{ad_log};
$res = $t->event(click => $btok, headers => { 'X-Adserve-Clock' => $issued });
is($res->{status}, 500, '... its click: 500');
ok(!exists $res->{headers}{'set-cookie'} && !$res->{headers}{location}, '... no header injected');
# neither was queued: with nothing queued or in flight anywhere, nothing more can land
ok($t->wait_until(5, sub {
       my $all = $t->worker_status or return 0;
       !grep { $_->{events}{queued} || $_->{events}{unacknowledged} } values %$all }), 'nothing pending');
is($t->stat_sum("u:$unit:clk") + $t->stat_sum("u:$bad->{unit}:clk"), 2, 'neither click counted');

unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');

done_testing;
