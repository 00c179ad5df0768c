# The spec's default request rate of serving: nginx's limit_req, per client
# address, ADSERVE_RATE requests per second (a burst of 100 answered at
# once), then 429 with the API's {detail} shape.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new(rate => 1);
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded')
    or BAIL_OUT('no snapshot');

# CORS preflights are answered before limit_req: they use none of the burst
my %pre;
$pre{ $t->request('OPTIONS', "/app/v0/ad/$c->{unit}")->{status} }++ for 1 .. 150;
is_deeply(\%pre, { 204 => 150 }, 'preflights are not rate limited');

my %seen;
my $limited;
my $t0 = Time::HiRes::time();
for (1 .. 150) {
    my $res = $t->ad($c->{unit});
    $seen{ $res->{status} }++;
    $limited //= $res if $res->{status} == 429;
}
cmp_ok($seen{200} // 0, '>=', 100, 'the burst is served');
# 1 request/s refills the burst while the loop runs (well under a second
# here, seconds on a loaded machine)
my $refilled = 1 + int(Time::HiRes::time() - $t0);
cmp_ok($seen{200} // 0, '<=', 100 + $refilled, "... and not more than the loop's $refilled s of 1 request/s");
cmp_ok($seen{429} // 0, '>=', 50 - $refilled, 'the rest is refused with 429');
is_deeply($limited->{json}, { detail => 'request rate over the limit' }, '... as {detail}');
is($limited->{headers}{'retry-after'}, '1', '... with Retry-After');
is($limited->{headers}{'access-control-allow-origin'}, '*', '... and CORS, so a page can read it');
my $m = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is($m->{'adserve_http_requests_total{handler="ad",status="429"}'}, $seen{429},
   "/metrics counts limit_req's 429s as the ad location's ($seen{429})");
is($m->{'adserve_http_requests_total{handler="ad",status="204"}'}, 150, '... and the preflights (150)');

sleep 2.2;
is($t->ad($c->{unit})->{status}, 200, 'a second later, requests are served again');
is($t->request('GET', '/healthz')->{status}, 200, 'the limit is on serving only');

# a new rate through make run: a reload nginx can apply is a reload; one it refuses (limit_req
# off changes its key, which a reload cannot do) is a restart, not a silent no-op
my $master = $t->nginx_pid;
$t->{env}{ADSERVE_RATE} = 2;
my $out = $t->script('run', 'nginx');
unlike($out, qr/restarting/, 'rate 1 -> 2: reloaded');
is($t->nginx_pid, $master, '... by the same master');
$t->{env}{ADSERVE_RATE} = 0;
$out = $t->script('run', 'nginx');
like($out, qr/nginx refused the reload .*restarting nginx/s, 'rate 2 -> 0: the reload is refused, said, and nginx restarted');
isnt($t->nginx_pid, $master, '... a new master');
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), '... serving the snapshot');
my %after;
$after{ $t->ad($c->{unit})->{status} }++ for 1 .. 150;
is_deeply(\%after, { 200 => 150 }, '... with no limit: the change applied');

done_testing;
