# A failover under Redis Sentinel (README "Many nodes"): a primary, its
# replica and a sentinel (redis-server --sentinel, quorum 1) on loopback;
# nginx reads its snapshot from the replica, and the sidecar finds the
# primary through the sentinel (ADSERVE_REDIS_SENTINELS). While ads are
# requested and the API is written back to back, the primary is killed
# with kill -9. Serving never fails; the sentinel promotes the replica; the
# sidecar finds it and writes resume within a bounded time; and not one
# write the API acknowledged is missing from the new primary.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);
use Adserve::Test;

my $t = Adserve::Test->new(components => ['redis']);
my $primary = $t->env->{ADSERVE_REDIS_PORT};
my ($parent, $writer) = ($$);
sub pid_of { my ($file) = @_; open my $fh, '<', $file or return; chomp(my $pid = <$fh>); $pid }
# whatever ends the test, the writer goes too (the stack kills the replica and the sentinel)
END { kill 'TERM', $writer if $$ == $parent && $writer }
sub cli { my ($port, @cmd) = @_; my $out = qx{timeout 5 redis-cli -p $port @cmd}; chomp $out; $out }

my $rport = $t->redis_server('replica', args => [ '--replicaof', '127.0.0.1', $primary, '--appendonly', 'yes' ]);
# a sentinel rewrites its configuration file: it gets one of its own
my $sport = $t->redis_server('sentinel', sentinel => 1, conf => <<"CONF");
sentinel monitor adserve 127.0.0.1 $primary 1
sentinel down-after-milliseconds adserve 1000
sentinel failover-timeout adserve 10000
CONF
ok($t->wait_until(10, sub { pid_of($t->var . '/replica/redis.pid') && pid_of($t->var . '/sentinel/redis.pid') }),
   'a replica and a sentinel started');
ok($t->wait_until(15, sub { cli($sport, 'SENTINEL', 'replicas', 'adserve') =~ /127\.0\.0\.1/ }),
   '... the sentinel monitors the primary and knows its replica');

$t->env->{ADSERVE_REDIS_SENTINELS} = "127.0.0.1:$sport";
$t->env->{ADSERVE_REDIS_MASTER} = 'adserve';
$t->env->{ADSERVE_REDIS_READ_PORT} = $rport;
$t->start('sidecar', 'nginx');
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'a servable unit, read by nginx from the replica');
is($t->ad($c->{unit})->{status}, 200, '... it serves');
my $adv = $t->created('/api/advertisers', { name => 'Before the failover' });

# serving, counted in a child for the whole run
pipe(my $r, my $w) or die;
my $kid = fork // die;
if (!$kid) {
    close $r;
    my ($n, $bad, $end) = (0, 0, time + 14);
    while (time < $end) { $n++; $bad++ if $t->ad($c->{unit})->{status} != 200 }
    print {$w} "$n $bad\n";
    close $w;                       # _exit flushes nothing
    POSIX::_exit(0);
}
close $w;
my ($acked, $stop) = ($t->var . '/acked', $t->var . '/stop');
$writer = fork // die;
if (!$writer) {
    local %ENV = (%ENV, %{ $t->env });
    open STDOUT, '>', $t->var . '/writer.out' or die;
    exec "$Adserve::Test::ROOT/scripts/chaos-writer", $t->base, $acked, $stop;
}
sleep 2;
sub acked_count { open my $fh, '<', $acked or return 0; my @l = <$fh>; scalar @l }
my $before = acked_count();
ok($before > 0, "API writes acknowledged before the fault ($before)");
my $killed = time;
kill 'KILL', pid_of($t->var . '/run/redis.pid');
delete $t->{running}{redis};
ok($t->wait_until(20, sub { cli($sport, 'SENTINEL', 'get-master-addr-by-name', 'adserve') =~ /\b$rport\b/ }),
   'the primary killed: the sentinel promotes the replica');
note sprintf 'promoted %.1f s after the kill', time - $killed;
ok($t->wait_until(20, sub { acked_count() > $before + 10 }), 'API writes resume on the new primary');
my $resumed = time - $killed;
sleep 2;
open my $s, '>', $stop or die;
close $s;
waitpid $writer, 0;
chomp(my $line = <$r> // '0 0');
waitpid $kid, 0;
my ($n, $bad) = split ' ', $line;
ok($n > 100, "ads requested throughout ($n)");
is($bad, 0, '... not one failed: nginx serves its snapshot, whatever happens to Redis');
my ($ok, $failed, $gap) = (do { open my $fh, '<', $t->var . '/writer.out' or die; local $/; <$fh> } =~ /^writes (\d+) (\d+) (\d+)/m);
ok(defined $gap && $gap / 1000 < 10,
   sprintf 'the API was out for %.1f s (the longest gap between acknowledged writes; %d failed)',
   ($gap // 0) / 1000, $failed // 0);
note sprintf 'writes resumed %.1f s after the kill', $resumed;
my @ids = do { open my $fh, '<', $acked or die; map { chomp; $_ } <$fh> };
my $missing = grep { cli($rport, 'HEXISTS', 'adserve:advertisers', $_) ne '1' } @ids, $adv->{id};
is($missing, 0, scalar(@ids) . ' acknowledged writes: every one on the new primary');

done_testing;
