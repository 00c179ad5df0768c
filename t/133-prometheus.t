# The node's metrics for Prometheus (README "Monitoring"): GET /metrics
# from the module, every worker's counts summed through a shared zone.
# Known requests go to each worker on connections of its own, and the
# counters must show exactly them: requests by handler and status (the
# handler's, limit_req's and an error page's answers), the latency
# histogram, ads by format, no-bids, events by type, invalid tokens. A
# killed worker's counts stay, and so does everything across a reload.
# Then Debian's own Prometheus scrapes the node and the sidecar on
# loopback, and its HTTP API must report the request counter equal to
# what the test sent; promtool checks both documents.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Adserve::Test;

my $t = Adserve::Test->new;
my $c = $t->chain;
my $none = $t->chain(line_item => { status => 'PAUSED' });
ok($t->wait_until(5, sub { $t->workers_at($none->{rev}) }), 'a unit that serves and one that does not');

sub metrics {
    my ($via) = @_;
    my $res = $t->request('GET', '/metrics', $via ? (via => $via) : ());
    die "GET /metrics: $res->{status}" unless $res->{status} == 200;
    return $res;
}

sub samples { Adserve::Test::prom_samples(@_) }
sub delta { Adserve::Test::prom_delta(@_) }

my $first = metrics();
like($first->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4}, "Prometheus's text format");
like($first->{content}, qr/^# HELP adserve_http_requests_total .+\n# TYPE adserve_http_requests_total counter$/m,
     'each family has its HELP and TYPE lines');
my $before = samples($first->{content});
my @workers = $t->workers;
is($before->{adserve_workers}, scalar @workers, "adserve_workers: the node's workers");

# ---- known traffic, on every worker ---------------------------------------------------------------
my @conns = @{ $t->worker_connections };
is(scalar @conns, 2, 'a connection to each of the two workers');
my (%sent, @tokens);
for my $i (0 .. $#conns) {
    my $via = $conns[$i];
    for (1 .. 10 + $i) {
        my $res = $t->ad($c->{unit}, undef, via => $via);
        $sent{ad200}++ if $res->{status} == 200;
        push @tokens, $res->{json}{ext}{ad_log} if $res->{status} == 200;
    }
    for (1 .. 3) { $sent{ad204}++ if $t->ad($none->{unit}, undef, via => $via)->{status} == 204 }
    for (1 .. 2) { $sent{ad404}++ if $t->ad('no-such-unit', undef, via => $via)->{status} == 404 }
    $sent{ad405}++ if $t->request('GET', "/app/v0/ad/$c->{unit}", via => $via)->{status} == 405;
}
is($sent{ad200}, 21, '21 ads served (10 on one worker, 11 on the other)');
is("$sent{ad204} $sent{ad404} $sent{ad405}", '6 4 2', '... 6 no-bids, 4 unknown units, 2 GETs (405, an error page)');
$sent{imp}++ for grep { $t->event('impression', $_)->{status} == 204 } @tokens[0 .. 4];
$sent{bad}++ for grep { $t->event('impression', $_)->{status} == 400 } ('x' x 40, 'nope');
is("$sent{imp} $sent{bad}", '5 2', '5 impressions, 2 invalid tokens');

my $after = samples(metrics()->{content});
my %want = (
    'adserve_http_requests_total{handler="ad",status="200"}' => 21,
    'adserve_http_requests_total{handler="ad",status="204"}' => 6,
    'adserve_http_requests_total{handler="ad",status="404"}' => 4,
    'adserve_http_requests_total{handler="ad",status="405"}' => 2,
    'adserve_http_requests_total{handler="event",status="204"}' => 5,
    'adserve_http_requests_total{handler="event",status="400"}' => 2,
    'adserve_http_request_duration_seconds_count{handler="ad"}' => 33,
    'adserve_http_request_duration_seconds_bucket{handler="ad",le="+Inf"}' => 33,
    'adserve_ads_total{format="display"}' => 21,
    'adserve_nobids_total{handler="ad"}' => 6,
    'adserve_events_total{type="imp"}' => 5,
    'adserve_invalid_tokens_total' => 2,
);
is_deeply({ map { $_ => delta($before, $after, $_) } keys %want }, \%want,
          'every counter moved by exactly what was sent, summed over both workers');
my @le = map { $after->{"adserve_http_request_duration_seconds_bucket{handler=\"ad\",le=\"$_\"}"} }
         qw(0.001 0.002 0.005 0.010 0.025 0.050 0.100 0.250 0.500 1.000 2.500 +Inf);
ok(!grep({ !defined } @le) && !grep({ $le[$_] < $le[$_ - 1] } 1 .. $#le),
   "the histogram's buckets are cumulative: @le");
is($after->{'adserve_redis_connected_workers{connection="snapshot"}'}, 2, "both workers' snapshot connections are up");
is($after->{adserve_snapshot_revision}, $t->revision, 'adserve_snapshot_revision is Redis\'s');

# ---- a killed worker's counts stay; a reload keeps them all ------------------------------------------
my $victim = (sort $t->workers)[0];
kill 'KILL', $victim;
ok($t->wait_until(10, sub { my @w = $t->workers; @w == 2 && !grep { $_ == $victim } @w }), 'a worker killed with kill -9, and replaced');
ok($t->wait_until(10, sub { $t->workers_at($none->{rev}) }), '... the new one serves');
my $killed = samples(metrics()->{content});
is(delta($after, $killed, 'adserve_http_requests_total{handler="ad",status="200"}'), 0,
   "the killed worker's counts are still there: no counter went down");
is($killed->{adserve_workers}, 2, '... and adserve_workers counts the live ones');
$t->nginx('-s', 'reload');
ok($t->wait_until(10, sub { my @w = $t->workers; @w == 2 && !grep { $_ == $victim } @w }), 'nginx reloaded');
my $reloaded = samples(metrics()->{content});
is(delta($after, $reloaded, 'adserve_http_requests_total{handler="ad",status="200"}'), 0,
   '... and the counts went on across the reload');

# ---- the sidecar's, at its own port (t/132 has the rest) ---------------------------------------------
my $sidecar = "127.0.0.1:$t->{env}{ADSERVE_SIDECAR_PORT}";
sub api_metrics { samples(HTTP::Tiny->new->get("http://$sidecar/metrics")->{content}) }
my $a0 = api_metrics();
is($t->request('POST', '/api/auth/forgot-password', json => { email => ($t->admin)[0] })->{status}, 200,
   'forgot-password for the admin: a mail');
ok($t->wait_until(5, sub { delta($a0, api_metrics(), 'adserve_api_mails_total{outcome="outbox"}') == 1 }),
   '... counted as gone to the outbox: this stack has no SMTP server');
unlike($t->request('GET', '/api/../metrics')->{content} // '', qr/adserve_api_requests_total/,
       "nginx does not proxy the sidecar's /metrics");

# ---- promtool, and a real Prometheus scraping both --------------------------------------------------
my $var = $t->var;
open my $fh, '>', "$var/node.prom" or die;
print $fh metrics()->{content};
close $fh;
my $out = qx{promtool check metrics < $var/node.prom 2>&1};
is($?, 0, 'promtool check metrics passes on the node\'s /metrics') or diag $out;
my $api = HTTP::Tiny->new->get("http://$sidecar/metrics");
is($api->{status}, 200, "the sidecar's /metrics, at its own loopback port");
open $fh, '>', "$var/api.prom" or die;
print $fh $api->{content};
close $fh;
$out = qx{promtool check metrics < $var/api.prom 2>&1};
is($?, 0, "promtool check metrics passes on the sidecar's") or diag $out;

my $pport = Adserve::Test::free_port();
open $fh, '>', "$var/prometheus.yml" or die;
print $fh <<"YML";
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: adserve
    static_configs:
      - targets: ['127.0.0.1:${\ $t->port }']
  - job_name: adserve-api
    static_configs:
      - targets: ['$sidecar']
YML
close $fh;
my $prom = fork // die;
if (!$prom) {
    open STDOUT, '>', "$var/log/prometheus.log" or die;
    open STDERR, '>&', \*STDOUT or die;
    exec 'prometheus', "--config.file=$var/prometheus.yml", "--storage.tsdb.path=$var/prometheus",
         "--web.listen-address=127.0.0.1:$pport";
    die "prometheus: $!";
}
END { if ($prom) { kill 'TERM', $prom; waitpid $prom, 0 } }

my $http = HTTP::Tiny->new(timeout => 5);
sub query {
    my ($q) = @_;
    my $res = $http->get("http://127.0.0.1:$pport/api/v1/query?query=" . join '', map { sprintf '%%%02X', ord } split //, $q);
    return undef unless $res->{status} == 200;
    my $r = eval { decode_json($res->{content}) } or return undef;
    return $r->{data}{result};
}
my $total = $reloaded->{'adserve_http_requests_total{handler="ad",status="200"}'};
ok($t->wait_until(30, sub { my $r = query('up'); $r && 2 == grep { $_->{value}[1] eq '1' } @$r }),
   'Prometheus scrapes both targets (up == 1)') or diag do { local $/; open my $l, '<', "$var/log/prometheus.log"; <$l> // '' };
for (1 .. 7) { $t->ad($c->{unit}) }
$total += 7;
ok($t->wait_until(15, sub {
       my $r = query('sum(adserve_http_requests_total{job="adserve",handler="ad",status="200"})');
       $r && @$r && $r->[0]{value}[1] == $total }),
   "Prometheus's HTTP API reports the ads the test asked for: $total");
my $r = query('sum(adserve_api_requests_total{job="adserve-api"})');
ok($r && @$r && $r->[0]{value}[1] > 0, "... and the sidecar's requests (" . ($r && @$r ? $r->[0]{value}[1] : 'none') . ')');

done_testing;
