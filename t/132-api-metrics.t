# The sidecar's metrics for Prometheus (README "Monitoring", sidecar/prom.c):
# GET /metrics on the sidecar's own loopback port, never through nginx.
# Known API calls must move the exact series by exactly what was sent:
# requests by route pattern (never the raw path), method and status, the
# latency histogram (its count equal to the requests, its buckets
# cumulative, on the contract's bounds), auth failures by reason (wrong
# password, throttled sign-in, missing, bad and refresh tokens, a role),
# and a reset mail that the SMTP sink received, while forgot-password's
# decoy for an unknown address counts as nothing. Scrapes count as no
# request; any method but GET and HEAD is a 405.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Adserve::Test;
use Adserve::Smtp;

my $t0 = time;
my $smtp = Adserve::Smtp->new;
my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_SMTP_URL} = $smtp->url;
$t->start('sidecar', 'nginx');

# the contract's Content-Type and bounds (src/adserve_contract.h), not spelled again here
my ($type, @bounds_ms) = do {
    open my $fh, '<', "$FindBin::Bin/../src/adserve_contract.h" or die "contract: $!";
    local $/;
    my $h = <$fh>;
    my ($ty) = $h =~ /#define ADSERVE_PROMETHEUS_TYPE\s+"([^"]+)"/ or die 'no ADSERVE_PROMETHEUS_TYPE';
    my ($b) = $h =~ /#define ADSERVE_LATENCY_BUCKETS_MS\s+\{([^}]+)\}/ or die 'no ADSERVE_LATENCY_BUCKETS_MS';
    my ($n) = $h =~ /#define ADSERVE_LATENCY_NBUCKETS\s+(\d+)/ or die 'no ADSERVE_LATENCY_NBUCKETS';
    my @b = $b =~ /(\d+)/g;
    die "ADSERVE_LATENCY_NBUCKETS $n, but " . @b . ' bounds' unless @b == $n;
    ($ty, @b);
};

my $sidecar = "http://127.0.0.1:$t->{env}{ADSERVE_SIDECAR_PORT}";
my $http = HTTP::Tiny->new(timeout => 10, keep_alive => 0);

sub scrape {
    my $res = $http->get("$sidecar/metrics");
    die "GET /metrics: $res->{status} $res->{content}" unless $res->{status} == 200;
    return $res;
}

sub samples { Adserve::Test::prom_samples(@_) }
sub delta { Adserve::Test::prom_delta(@_) }

# the deltas of every series of the families named, but the histogram's
# buckets and sum (checked on their own), that moved
sub moved {
    my ($before, $after, @families) = @_;
    my $re = join '|', map { quotemeta } @families;
    my %d;
    for my $s (keys %$after) {
        next unless $s =~ /^(?:$re)(?:\{|$)/;
        my $d = delta($before, $after, $s);
        $d{$s} = $d if $d != 0;
    }
    return \%d;
}

# ---- the document, before the count starts ----------------------------------------------------
my $first = scrape();
is($first->{headers}{'content-type'}, $type, "Content-Type: the contract's ADSERVE_PROMETHEUS_TYPE ($type)");
is($first->{headers}{'cache-control'}, 'no-store', 'Cache-Control: no-store, like every answer of the sidecar');
my %families = (
    adserve_api_requests_total           => 'counter',
    adserve_api_request_duration_seconds => 'histogram',
    adserve_api_auth_failures_total      => 'counter',
    adserve_api_mails_total              => 'counter',
    adserve_api_start_time_seconds       => 'gauge',
);
for my $f (sort keys %families) {
    like($first->{content}, qr/^# HELP $f \S.*\n# TYPE $f $families{$f}$/m, "$f: HELP and TYPE $families{$f}");
}
like($first->{content}, qr/^# HELP adserve_api_auth_failures_total .*credentials.*throttled.*token.*role/m,
     "the auth failures' HELP names every reason");
my $s0 = samples($first->{content});
my @reasons = qw(credentials throttled token role);
my @outcomes = qw(sent outbox lost);
ok(!grep({ !defined $s0->{"adserve_api_auth_failures_total{reason=\"$_\"}"} } @reasons),
   'every auth failure reason is printed, 0 included');
ok(!grep({ !defined $s0->{"adserve_api_mails_total{outcome=\"$_\"}"} } @outcomes),
   'every mail outcome is printed, 0 included');
is($s0->{'adserve_api_mails_total{outcome="sent"}'}, 0, '... and no mail went out yet');
my $started = $s0->{adserve_api_start_time_seconds};
ok(defined $started && $started >= $t0 - 1 && $started <= time, "adserve_api_start_time_seconds: when the sidecar started ($started)");
my @zero = grep { /^adserve_api_(?:requests_total|request_duration_seconds_count)\{/ && $s0->{$_} == 0 } keys %$s0;
is_deeply(\@zero, [], 'requests: only series that counted something are printed');

my $again = samples(scrape()->{content});
is_deeply(moved($s0, $again, keys %families), {}, 'a scrape is not an API request: nothing moved');

# the callers, signed in before the count starts
$t->token;
my $op = $t->api('POST', '/api/users', json => { email => 'op@example.com', password => 'a-good-password',
                                                 role => 'operator' });
is($op->{status}, 201, 'an operator to be refused with') or diag $op->{content};
my $op_token = $t->token('op@example.com', 'a-good-password');
my $proxy_token = do { open my $fh, '<', $t->var . '/secrets/proxy_token' or die; local $/; <$fh> };

# ---- known API calls ---------------------------------------------------------------------------
my $before = samples(scrape()->{content});
is($t->api('GET', '/api/advertisers')->{status}, 200, 'GET /api/advertisers') for 1 .. 3;
is($t->api('GET', '/api/advertisers', token => undef)->{status}, 401, '... without a token: 401');
is($t->api('GET', '/api/advertisers', token => 'not.a.token')->{status}, 401, '... with a bad token: 401');
my $missing = $t->uuid;
is($t->api('GET', "/api/advertisers/$missing")->{status}, 404, 'GET /api/advertisers/{id} of no advertiser: 404');
is($t->api('GET', '/api/users', token => $op_token)->{status}, 403, 'GET /api/users as an operator: 403');
is($t->request('POST', '/api/auth/refresh', json => { refresh_token => 'not-a-refresh-token' })->{status}, 401,
   'a bad refresh token: 401');
is($t->request('POST', '/api/auth/login', json => { email => ($t->admin)[0], password => 'not the password' })->{status},
   401, 'a sign-in with a wrong password: 401');
is($t->request('GET', '/api/no-such-route')->{status}, 404, 'a path no route has: 404');
is($t->request('DELETE', '/api/health')->{status}, 405, 'a method the path does not take: 405');

# a client of its own (as nginx names it, with the proxy secret) fails 5
# times on one account, and its 6th sign-in is throttled
sub direct_login {
    my ($password) = @_;
    return $http->request('POST', "$sidecar/api/auth/login", {
        headers => { 'content-type' => 'application/json', 'x-real-ip' => '198.51.100.32',
                     'x-adserve-proxy' => $proxy_token },
        content => encode_json({ email => 'op@example.com', password => $password }) })->{status};
}
is(direct_login("wrong-$_"), 401, "a wrong password from one client: 401 ($_ of 5)") for 1 .. 5;
is(direct_login('a-good-password'), 429, '... and its 6th sign-in, with the right one: 429');

# a decoy first (an unknown address sends nothing), then a real mail
is($t->request('POST', '/api/auth/forgot-password', json => { email => 'nobody@example.com' })->{status}, 200,
   'forgot-password for an unknown address: 200, and a decoy');
is($t->request('POST', '/api/auth/forgot-password', json => { email => 'op@example.com' })->{status}, 200,
   'forgot-password for the operator: 200, and a mail');
ok($smtp->wait_for(sub { $_->{to} eq 'op@example.com' }), 'the SMTP sink received the mail') or diag $smtp->log;
my $after;
ok($t->wait_until(5, sub { $after = samples(scrape()->{content});
                           delta($before, $after, 'adserve_api_mails_total{outcome="sent"}') }),
   'the mail thread counted it');
is(scalar(grep { $_->{to} eq 'nobody@example.com' } $smtp->mails), 0, 'the decoy never reached the sink');

my $adv = 'route="/api/advertisers",method="GET"';
my $adv_id = 'route="/api/advertisers/{id}",method="GET"';
my $login = 'route="/api/auth/login",method="POST"';
my $forgot = 'route="/api/auth/forgot-password",method="POST"';
my $users = 'route="/api/users",method="GET"';
my $refresh = 'route="/api/auth/refresh",method="POST"';
my $unmatched = 'route="unmatched",method=""';
my %want = (
    "adserve_api_requests_total{$adv,status=\"200\"}"        => 3,
    "adserve_api_requests_total{$adv,status=\"401\"}"        => 2,
    "adserve_api_requests_total{$adv_id,status=\"404\"}"     => 1,
    "adserve_api_requests_total{$users,status=\"403\"}"      => 1,
    "adserve_api_requests_total{$refresh,status=\"401\"}"    => 1,
    "adserve_api_requests_total{$login,status=\"401\"}"      => 6,
    "adserve_api_requests_total{$login,status=\"429\"}"      => 1,
    "adserve_api_requests_total{$forgot,status=\"200\"}"     => 2,
    "adserve_api_requests_total{$unmatched,status=\"404\"}"  => 1,
    "adserve_api_requests_total{$unmatched,status=\"405\"}"  => 1,
    "adserve_api_request_duration_seconds_count{$adv}"       => 5,
    "adserve_api_request_duration_seconds_count{$adv_id}"    => 1,
    "adserve_api_request_duration_seconds_count{$users}"     => 1,
    "adserve_api_request_duration_seconds_count{$refresh}"   => 1,
    "adserve_api_request_duration_seconds_count{$login}"     => 7,
    "adserve_api_request_duration_seconds_count{$forgot}"    => 2,
    "adserve_api_request_duration_seconds_count{$unmatched}" => 2,
    'adserve_api_auth_failures_total{reason="credentials"}'  => 6,
    'adserve_api_auth_failures_total{reason="throttled"}'    => 1,
    'adserve_api_auth_failures_total{reason="token"}'        => 3,
    'adserve_api_auth_failures_total{reason="role"}'         => 1,
    'adserve_api_mails_total{outcome="sent"}'                => 1,
);
is_deeply(moved($before, $after, qw(adserve_api_requests_total adserve_api_request_duration_seconds_count
                                    adserve_api_auth_failures_total adserve_api_mails_total)),
          \%want, 'exactly these series moved, by exactly the calls made: the decoy is no mail, the outbox got none')
    or diag explain moved($before, $after, qw(adserve_api_requests_total adserve_api_request_duration_seconds_count
                                              adserve_api_auth_failures_total adserve_api_mails_total));
unlike(scrape()->{content}, qr/\Q$missing\E|no-such-route/, 'no raw path in any label: route is the pattern');

# ---- the histogram ---------------------------------------------------------------------------
my @les = ((map { $_ / 1000 } @bounds_ms), '+Inf');
sub buckets {
    my ($s, $labels) = @_;
    my %b;
    for (keys %$s) {
        next unless /^adserve_api_request_duration_seconds_bucket\{\Q$labels\E,le="([^"]+)"\}$/;
        $b{$1 eq '+Inf' ? '+Inf' : 0 + $1} = $s->{$_};
    }
    return \%b;
}
for my $labels ($adv, $login, $unmatched) {
    my $b = buckets($after, $labels);
    is_deeply([sort keys %$b], [sort map { "$_" } @les], "{$labels}: a bucket per bound of the contract, and +Inf");
    my @n = map { $b->{$_} // -1 } @les;
    ok(!grep({ $n[$_] < $n[$_ - 1] } 1 .. $#n), "... cumulative: @n");
    is($b->{'+Inf'}, $after->{"adserve_api_request_duration_seconds_count{$labels}"}, '... +Inf is the count');
    my $requests = 0;
    $requests += $after->{$_} for grep { /^adserve_api_requests_total\{\Q$labels\E,status=/ } keys %$after;
    is($after->{"adserve_api_request_duration_seconds_count{$labels}"}, $requests,
       '... and the count is the requests of every status');
    my $sum = $after->{"adserve_api_request_duration_seconds_sum{$labels}"};
    my $count = $b->{'+Inf'};
    ok(defined $sum && $sum > 0 && $sum < $count * 10, "... the sum: $sum s over $count requests");
}
my $db = buckets($after, $adv);
my $bb = buckets($before, $adv);
is($db->{'+Inf'} - ($bb->{'+Inf'} // 0), 5, "GET /api/advertisers's +Inf bucket moved by its 5 requests");

# ---- only GET and HEAD; nginx never shows it ---------------------------------------------------
my $post = $http->post("$sidecar/metrics");
is($post->{status}, 405, 'POST /metrics: 405');
is($post->{headers}{allow}, 'GET, HEAD', '... Allow: GET, HEAD');
is($http->request('DELETE', "$sidecar/metrics")->{status}, 405, 'DELETE /metrics: 405');
my $head = $http->head("$sidecar/metrics");
is($head->{status}, 200, 'HEAD /metrics: 200');
is($head->{content} // '', '', '... without a body');
is($head->{headers}{'content-type'}, $type, '... and the same Content-Type');
is($http->get("$sidecar/metrics/")->{status}, 404, 'exactly /metrics: /metrics/ is no route');
is($http->get("$sidecar/api/metrics/../../metrics")->{status}, 404, '... nor is a path with dots to it');
for my $path ('/metrics', '/api/../metrics', '/api/%2e%2e/metrics', '/api/x/..%2fmetrics', '/api//metrics') {
    my $res = $t->request('GET', $path);
    unlike($res->{content} // '', qr/adserve_api_/, "nginx's $path ($res->{status}) is not the sidecar's /metrics");
}
my $last = samples(scrape()->{content});
is(delta($after, $last, "adserve_api_requests_total{$unmatched,status=\"405\"}"), 0,
   "/metrics's own 405s are not the API's");

done_testing;
