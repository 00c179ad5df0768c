# Redis going away costs no serving: workers keep their snapshot, reconnect
# with backoff, and say so once per worker, not once per request or retry.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new;
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded');
my @workers = $t->workers;
is(scalar @workers, 2, 'two workers');

$t->stop('redis');

my @codes = map { $t->ad($c->{unit})->{status} } 1 .. 50;
is(scalar(grep { $_ == 200 } @codes), 50, 'Redis stopped: 50 of 50 requests still served');
is($t->ad(Adserve::Test::uuid())->{status}, 404, '... and unknown ad units still 404');

sleep 3;    # several reconnect attempts, with backoff
@codes = map { $t->ad($c->{unit})->{status} } 1 .. 50;
is(scalar(grep { $_ == 200 } @codes), 50, 'after 3 s of outage: still serving');
my $all = $t->worker_status;
is(scalar(grep { $_->{redis} eq 'down' } values %$all), 2, 'every worker reports Redis down');

my $log = $t->log_text('nginx-error.log');
my $down = () = $log =~ /adserve: redis 127\.0\.0\.1:\d+ unavailable/g;
is($down, scalar @workers, 'the outage is logged once per worker, not per retry');
# each worker's second connection, the events', says so once too
$down = () = $log =~ /adserve: events: redis 127\.0\.0\.1:\d+ unavailable \([^)]*\): events kept in worker memory/g;
is($down, scalar @workers, "... and once per worker for the events' connection");
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');
my $m = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is($m->{'adserve_redis_connected_workers{connection="snapshot"}'} + $m->{'adserve_redis_connected_workers{connection="events"}'},
   0, "/metrics: no worker's snapshot or events connection is up");

$t->start('redis');
ok($t->wait_until(10, sub { $t->workers_connected && $t->workers_at($c->{rev}) }),
   'Redis back: every worker reconnects');
$log = $t->log_text('nginx-error.log');
my $up = () = $log =~ /adserve: redis 127\.0\.0\.1:\d+ connected again/g;
is($up, scalar @workers, 'the recovery is logged once per worker');
$m = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is($m->{'adserve_redis_connected_workers{connection="snapshot"}'}, scalar @workers, '/metrics: every snapshot connection up again');
cmp_ok($m->{'adserve_redis_reconnects_total{connection="snapshot"}'}, '>=', scalar @workers, '... each a reconnect');

# the data survived (AOF), and changes flow again
my $rev = $t->chain(unit => { id => my $new = Adserve::Test::uuid() })->{rev};
sleep 1.0;
ok($t->workers_at($rev), 'a change after the outage reaches every worker within 1 s');
is($t->ad($new)->{status}, 200, '... and serves');

# Redis up but refusing every command (here: a password the module does not
# send): still one line per worker, and serving goes on
my $before = length $t->log_text('nginx-error.log');
$t->redis('CONFIG', 'SET', 'requirepass', 'sekret');
$t->redis('-a', 'sekret', '--no-auth-warning', 'CLIENT', 'KILL', 'TYPE', 'normal');
sleep 3;
is(scalar(grep { $t->ad($c->{unit})->{status} == 200 } 1 .. 20), 20,
   'Redis refusing commands: still serving');
$log = substr $t->log_text('nginx-error.log'), $before;
my $refused = () = $log =~ /adserve: redis 127\.0\.0\.1:\d+ unavailable/g;
is($refused, scalar @workers,
   'an outage of NOAUTH replies is logged once per worker, not once per attempt');
unlike($log, qr/connected again/, 'a connection that is refused every command is not "again connected"');
$t->redis('-a', 'sekret', '--no-auth-warning', 'CONFIG', 'SET', 'requirepass', '');
ok($t->wait_until(10, sub { $t->workers_connected }), 'the password gone: workers recover');
ok($t->wait_until(5, sub {
       my $up = () = $t->log_text('nginx-error.log') =~ /adserve: redis \S+ connected again/g;
       $up == 2 * @workers }), '... and say so once each');

# Redis unavailable when nginx starts: nginx starts all the same
$t->stop('nginx', 'redis');
$t->start('nginx');
is($t->ad($c->{unit})->{status}, 404, 'nginx started without Redis: 404, at once');
$t->start('redis');
ok($t->wait_until(10, sub { $t->ad($c->{unit})->{status} == 200 }),
   'Redis started later: the worker connects and serves');

done_testing;
