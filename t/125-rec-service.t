# A recommendation unit's target service on the real stack (README
# "Recommendation"): the module calls an external recommender (the
# reference one, scripts/rec-service) through an nginx location with a
# deadline (adserve_rec_timeout), without blocking the worker; its items
# replace the algorithm's; and the fallbacks' activations (always,
# except_timeout, timeout_only) follow whether it answered in time, timed
# out, or is down.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempfile);
use Time::HiRes ();
use Adserve::Test;

my ($fast_port, $slow_port, $down_port) = Adserve::Test::free_ports(3);
my $locations = join '', map { <<"NGINX" } [ fast => $fast_port ], [ slow => $slow_port ], [ down => $down_port ];
        location /_adserve/rec/$_->[0] {
            internal;
            proxy_pass http://127.0.0.1:$_->[1]/recommend;
            proxy_pass_request_headers off;
            proxy_pass_request_body off;
            subrequest_output_buffer_size 16k;
        }
NGINX
my $t = Adserve::Test->new(template => Adserve::Test::with_locations($locations));

# the reference service: a fast one, and one that answers after 3 s (the deadline is 100 ms;
# the margins below are wide, for a busy machine)
my ($fh, $map) = tempfile('rec-map-XXXXXX', TMPDIR => 1, UNLINK => 1);
print $fh '{"s:a": ["s:b", "s:c", "s:ghost", "s:a", "s:d"], "s:e": []}';
close $fh;
my @services;
for ([ $fast_port, 0 ], [ $slow_port, 3000 ]) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open STDERR, '>>', $t->var . '/log/rec-service.log';
        exec "$FindBin::Bin/../scripts/rec-service", '--port', $_->[0], '--map', $map, '--delay-ms', $_->[1];
        die "exec: $!";
    }
    push @services, $pid;
}
END { kill 'TERM', @services if @services }
ok($t->wait_until(10, sub { !grep { !IO::Socket::INET->new("127.0.0.1:$_") } $fast_port, $slow_port }),
   'the reference services listen');

sub current { ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the change') }
sub body { my (%ext) = @_; { version => '0.1.0', user => { id => 'svc-reader' }, ext => { %ext } } }
sub sources { my ($res) = @_; [ map { "$_->{id}/$_->{source}" } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }
for my $id (map { "s:$_" } qw(a b c d e f g)) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Svc $id", url => "https://svc.example/$id" });
}
$t->created('/api/associated-items-pools', { source_item_id => 's:a', items => [ { item_id => 's:g', score => 1 } ] });
my %chain = (fallback => [
    { type => 'preset', activation => 'always', items => [ { id => 's:e' } ] },
    { type => 'preset', activation => 'except_timeout', items => [ { id => 's:f' } ] },
    { type => 'preset', activation => 'timeout_only', items => [ { id => 's:g' } ] } ]);
my %unit;
for my $svc (qw(fast slow down)) {
    $unit{$svc} = $t->created('/api/ad-units', { code => "svc-$svc-$$", name => "Service $svc", status => 'ACTIVE',
        recommendation => { topn => 6, %chain },
        ext => { target_service => $svc, recommendation => { enabled => 1 } } })->{id};
}
$t->refused($t->api('POST', '/api/ad-units', json => { code => "svc-bad-$$", name => 'Bad',
    ext => { target_service => '../admin', recommendation => { enabled => 1 } } }), 422,
    qr/^ext\.target_service: 1 to 64 letters, digits, _ or -/, 'a target service that is no location name');
current();

my $t0 = Time::HiRes::time();
is_deeply(sources($t->ad($unit{fast}, body(item_id => 's:a'))),
          [ 's:b/algorithm', 's:c/algorithm', 's:d/algorithm', 's:e/preset', 's:f/preset' ],
          'the service answers: its items first (unknown and viewed ones dropped; they replace the pool), '
          . 'then always and except_timeout fallbacks, not timeout_only');
like(join("\n", grep { /recommend/ } split /\n/, $t->log_text('rec-service.log')),
     qr{GET /recommend\?item_id=s:a&user_id=svc-reader&context=&topn=6 }, '... asked for the item, the user, topn');
is_deeply(sources($t->ad($unit{fast}, body(item_id => 's:e'))), [ 's:f/preset' ],
          'the service answers no items: the fallbacks fill (s:e itself is the viewed item)');

$t0 = Time::HiRes::time();
my $res = $t->ad($unit{slow}, body(item_id => 's:a'));
my $took = Time::HiRes::time() - $t0;
is_deeply(sources($res), [ 's:e/preset', 's:g/preset' ],
          'the service is late: answered at the deadline with the always and timeout_only fallbacks');
cmp_ok($took, '<', 2.5, sprintf('... without waiting for the service (%.0f ms)', 1000 * $took));
is_deeply(sources($t->ad($unit{down}, body(item_id => 's:a'))), [ 's:e/preset', 's:g/preset' ],
          'the service is down (nothing listens): as on a timeout');

# the worker is not blocked: while slow calls wait, other requests are answered
my @pids;
for (1 .. 4) {
    my $pid = fork // die;
    if (!$pid) { $t->ad($unit{slow}, body(item_id => 's:a')); exit 0 }
    push @pids, $pid;
}
my $fast = Time::HiRes::time();
is($t->ad($unit{fast}, body(item_id => 's:a'))->{status}, 200, 'with slow calls in flight, a fast one answers');
waitpid $_, 0 for @pids;
ok(Time::HiRes::time() - $fast < 2.5, '... before the slow service would have');

sleep 3.5;   # the late replies come in, for requests long answered
like($t->log_text('nginx-error.log'), qr/target service not answered in time/, 'the deadline is logged');
like($t->log_text('nginx-error.log'), qr/target service "\/_adserve\/rec\/down" answered 502, no object/, 'so is a service down');
unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]|segfault|signal/, 'no alert, crit or emerg, no crash');
is($t->ad($unit{fast}, body(item_id => 's:a'))->{status}, 200, 'and serving goes on');

done_testing;
