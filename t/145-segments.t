# Custom targeting segments (README "Segments"): CRUD with roles and bad
# input; members uploaded as text, one user id a line, streamed through
# nginx (malformed lines reported with their numbers and skipped, the good
# ones kept; the wrong type 415, over the limit 413); each membership ends
# membership_expiration_days after its upload; removal with the same body.
# Line items target segments (include, exclude): the sidecar checks the
# ids, serving reads each user's memberships per request with the caps,
# and when they cannot be read in time, targeted demand does not serve.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_SEGMENT_UPLOAD_MAX} = 200_000;
$t->start('sidecar', 'nginx');

sub upload {
    my ($id, $body, %o) = @_;
    return $t->api($o{method} // 'POST', "/api/custom-targeting/segments/$id/members", body => $body,
                   headers => { 'content-type' => $o{type} // 'text/plain; charset=utf-8' },
                   $o{as} ? (as => $o{as}) : ());
}

# ---- the records -----------------------------------------------------------
my $sports = $t->created('/api/custom-targeting/segments', { name => 'Sports fans' });
is($sports->{membership_expiration_days}, 30, 'a segment: memberships last 30 days by default');
is($sports->{description}, '', '... and no description');
my $churned = $t->created('/api/custom-targeting/segments', { name => 'Churned', membership_expiration_days => 7 });
for my $bad ([ { name => 'x', membership_expiration_days => 0 }, qr/^membership_expiration_days: / ],
             [ { name => 'x', membership_expiration_days => 541 }, qr/^membership_expiration_days: / ],
             [ { membership_expiration_days => 5 }, qr/^name: / ],
             [ { name => 'x', size => 3 }, qr/^size: / ]) {
    $t->refused($t->api('POST', '/api/custom-targeting/segments', json => $bad->[0]), 422, $bad->[1],
                'a segment with ' . join(', ', sort keys %{ $bad->[0] }));
}
$t->api('POST', '/api/users', json => { email => 'ops@example.com', password => 'a-good-password', role => 'operator' });
$t->api('POST', '/api/users', json => { email => 'buyer@example.com', password => 'a-good-password', role => 'advertiser',
                                        advertiser_id => $t->advertiser_id });
my @ops = (as => [ 'ops@example.com', 'a-good-password' ]);
my @buyer = (as => [ 'buyer@example.com', 'a-good-password' ]);
is($t->api('GET', '/api/custom-targeting/segments', @ops)->{json}{total}, 2, 'an operator lists them');
is($t->api('GET', '/api/custom-targeting/segments', @buyer)->{status}, 403, 'an advertiser may not');
is(upload($sports->{id}, "u1\n", @buyer)->{status}, 403, '... nor upload members');
is(upload($sports->{id}, "u1\n", as => undef)->{status}, 200, 'an admin uploads (the default caller)');

# ---- uploads -----------------------------------------------------------------
my $long = 'x' x 257;
my $body = "u1\nu2\r\n\n$long\nbad\tid\n\xff\xfe\n" . ('y' x 256) . "\nu3";
my $t0 = time;
my $res = upload($sports->{id}, $body);
is($res->{status}, 200, 'an upload with malformed lines: 200') or diag $res->{content};
my $r = $res->{json};
is($r->{lines}, 8, '... 8 lines read (the last without a newline)');
is($r->{members}, 4, '... 4 members written: u1, u2 (CRLF), a 256-byte id, u3');
is($r->{malformed}, 3, '... 3 malformed lines skipped');
is_deeply($r->{errors}, [ { line => 4, reason => 'longer than 256 bytes' },
                          { line => 5, reason => 'a control character' },
                          { line => 6, reason => 'not UTF-8' } ], '... each with its line and why');
my $until = $t->redis('HGET', 'adserve:us:u2', $sports->{id});
cmp_ok(abs($until - ($t0 + 30 * 86400)), '<', 5, 'u2 is a member until 30 days from now');
cmp_ok($t->redis('TTL', 'adserve:us:u2'), '>', 30 * 86400 - 10, '... and the key lives as long');
ok($t->redis('HEXISTS', 'adserve:us:' . ('y' x 256), $sports->{id}), 'a 256-byte id is one');
like($r->{expires_at}, qr/^\d{4}-\d\d-\d\dT/, '... the answer says when they end');

is(upload($churned->{id}, "u1\nu9\n")->{json}{members}, 2, 'u1 and u9 churned');
cmp_ok(abs($t->redis('HGET', 'adserve:us:u1', $churned->{id}) - ($t0 + 7 * 86400)), '<', 5,
       '... for 7 days, that segment\'s expiration');
cmp_ok($t->redis('TTL', 'adserve:us:u1'), '>', 29 * 86400, "u1's key lives as long as its longest membership");

$t->refused(upload($sports->{id}, '{"ids":["u1"]}', type => 'application/json'), 415, qr{text/plain}, 'a JSON body');
$t->refused(upload(Adserve::Test::uuid(), "u1\n"), 404, qr/segment not found/, 'an unknown segment');
is(upload('not-a-uuid', "u1\n")->{status}, 404, 'an id that is no UUID: 404');
$t->refused(upload($sports->{id}, "z\n" x 100_001), 413, qr/exceeds 200000 bytes/, 'a body over ADSERVE_SEGMENT_UPLOAD_MAX');
is($t->redis('EXISTS', 'adserve:us:z'), 0, '... refused before any of it is written');
is(upload($sports->{id}, '')->{json}{members}, 0, 'an empty body: nothing, and no error');

my $audit = $t->api('GET', '/api/audit-logs?resource=custom_targeting_segment&action=add_members')->{json};
ok($audit->{total} >= 3, 'uploads are in the audit log');
my ($logged) = grep { ($_->{after}{malformed} // 0) == 3 } @{ $audit->{items} };
is($logged && $logged->{after}{members}, 4, '... with what they did');

# ---- line items targeting them ------------------------------------------------------
$t->refused($t->api('PATCH', '/api/line-items/' . Adserve::Test::uuid(), json => {}), 404, qr/not found/, 'sanity: line items');
my $order = $t->created('/api/orders', { advertiser_id => $t->advertiser_id, name => 'Segments' });
my $unknown = Adserve::Test::uuid();
$t->refused($t->api('POST', '/api/line-items', json => { order_id => $order->{id}, name => 'x', type => 'STANDARD',
                                                           cost_type => 'CPM', rate => 1,
                                                           targeting => { segments => { include => [ $unknown ] } } }),
            422, qr/^targeting\.segments\.include\[0\]: segment "$unknown" does not exist/, 'an unknown segment');
$t->refused($t->api('POST', '/api/line-items', json => { order_id => $order->{id}, name => 'x', type => 'STANDARD',
                                                           cost_type => 'CPM', rate => 1,
                                                           targeting => { segments => { include => [ $sports->{id} ],
                                                                                        exclude => [ $sports->{id} ] } } }),
            422, qr/^targeting\.segments\.exclude\[0\]: segment .* is also included/, 'a segment both included and excluded');
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'Sports', type => 'STANDARD', cost_type => 'CPM',
                                          rate => 1, targeting => { segments => { include => [ $sports->{id} ] } } });
is_deeply($li->{targeting}{segments}, { include => [ $sports->{id} ], exclude => [] }, 'a line item targets a segment');
$t->refused($t->api('DELETE', "/api/custom-targeting/segments/$sports->{id}"), 409, qr/line items/, 'a targeted segment cannot go');

# ---- serving --------------------------------------------------------------------------
# a unit each, whose one line item targets segments
sub targeted {
    my ($segments, %li) = @_;
    my $unit = Adserve::Test::uuid();
    return $t->chain(unit => { id => $unit },
                     line_item => { targeting => { ad_units => { include => [ $unit ] }, segments => $segments }, %li });
}
my $in = targeted({ include => [ $sports->{id} ] });
my $out = targeted({ exclude => [ $churned->{id} ] });
my $both = targeted({ include => [ $sports->{id} ], exclude => [ $churned->{id} ] },
                    frequency_caps => [ { max => 100, seconds => 3600 } ]);
my $plain = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($plain->{rev}) }), 'fixtures loaded') or BAIL_OUT('no snapshot');

sub status_for {
    my ($unit, $user) = @_;
    return $t->ad($unit, { version => '0.1.0', (defined $user ? (user => { id => $user }) : ()),
                           device => { ua => 'Mozilla/5.0' } })->{status};
}
is(status_for($in->{unit}, 'u1'), 200, 'include: a member is served');
is(status_for($in->{unit}, 'u7'), 204, '... a user in no segment is not');
is(status_for($in->{unit}, undef), 204, '... nor a request without a user id');
is(status_for($out->{unit}, 'u1'), 204, 'exclude: a churned user is not served');
is(status_for($out->{unit}, 'u7'), 200, '... anyone else is');
is(status_for($out->{unit}, undef), 200, '... a request without a user id too (in no segment)');
is(status_for($both->{unit}, 'u2'), 200, 'both, with a cap: a sports fan who did not churn');
is(status_for($both->{unit}, 'u1'), 204, '... not one who did');
my $explained = $t->api('POST', "/api/explain/$in->{unit}", json => { version => '0.1.0', user => { id => 'u1' } })->{json};
is($explained->{segments}, 'known', 'the explainer says the memberships were read');

$t->redis('HSET', 'adserve:us:u3', $sports->{id}, time - 10);
is(status_for($in->{unit}, 'u3'), 204, 'an ended membership does not count');
is(upload($sports->{id}, "u2\nnobody\n", method => 'DELETE')->{json}{removed}, 2, 'members removed with the same body');
is(status_for($in->{unit}, 'u2'), 204, '... and u2 is no longer served');
is(status_for($in->{unit}, 'u1'), 200, '... u1 still is');

# Redis stalled: memberships unknown, targeted demand holds back, the rest serves at once
my $port = $t->env->{ADSERVE_REDIS_PORT};
system("redis-cli -p $port EVAL 'local s = redis.call(\"TIME\")[1] + 2; "
       . "while tonumber(redis.call(\"TIME\")[1]) < s do end return 1' 0 >/dev/null 2>&1 &");
ok($t->wait_until(1.5, sub { $t->redis_stalled }), 'Redis is stalled by a script');
my $before = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
my $t1 = time;
is(status_for($in->{unit}, 'u1'), 204, 'memberships unknown: an include line item does not serve');
is(status_for($out->{unit}, 'u7'), 204, '... nor an exclude one: the safe outcome');
is(status_for($plain->{unit}, 'u7'), 200, '... untargeted demand does');
cmp_ok(time - $t1, '<', 1, '... and no answer waits for Redis');
my $after = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is(Adserve::Test::prom_delta($before, $after, 'adserve_cap_timeouts_total'), 2,
   "/metrics counts the two reads past their deadline (adserve_cap_timeouts_total)");
ok($t->wait_until(10, sub { status_for($in->{unit}, 'u1') == 200 }), 'once Redis answers, members are served again');

# the segment goes once no line item targets it
$t->api('PATCH', "/api/line-items/$li->{id}", json => { targeting => { segments => { include => [] } } });
is($t->api('DELETE', "/api/custom-targeting/segments/$sports->{id}")->{status}, 204, 'untargeted, the segment can be deleted');

done_testing;
