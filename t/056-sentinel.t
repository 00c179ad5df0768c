# A failover under Redis Sentinel (README "Many nodes"): a primary, its
# replica and a sentinel (redis-server --sentinel, quorum 1) on loopback;
# nginx reads its snapshot from the replica, and both the sidecar and
# nginx's workers find the primary through the sentinel
# (ADSERVE_REDIS_SENTINELS; adserve_redis_sentinel; the first sentinel
# named is down, so they ask the second). While ads are
# requested and the API is written back to back, the primary is killed
# with kill -9. Serving never fails; the sentinel promotes the replica; the
# sidecar finds it and writes resume within a bounded time; not one write
# the API acknowledged is missing from the new primary; every ad request
# is counted there; and frequency caps hold on it.
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

# the first sentinel named is down for good: both programs ask the next
my $gone = Adserve::Test::free_port();
$t->env->{ADSERVE_REDIS_SENTINELS} = "127.0.0.1:$gone,127.0.0.1:$sport";
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

# ---- nginx's workers follow the failover ------------------------------------------------------------
$t->env->{ADSERVE_REDIS_PORT} = $rport;            # the test's own Redis commands too
like($t->log_text('nginx-error.log'), qr/events: the sentinels name 127\.0\.0\.1 port $rport the primary of "adserve"/,
     "nginx's events connection asked the sentinel, and found the new primary");
my $field = "u:$c->{unit}:req";
ok($t->wait_until(10, sub { $t->stat_sum($field) == $n + 1 }),
   sprintf 'every ad request of the run is counted on the new primary (%d of %d; those of the outage waited in the workers)',
   $t->stat_sum($field), $n + 1);
my $capped = $t->chain(line_item => { frequency_caps => [ { max => 2, seconds => 86400 } ] });
ok($t->wait_until(5, sub { $t->workers_at($capped->{rev}) }), 'a line item capped at 2 a day, written to the new primary');
my $user = { version => '0.1.0', user => { id => 'after-failover' }, device => { ua => 'Mozilla/5.0' } };
my @got = map { $t->ad($capped->{unit}, $user)->{status} } 1 .. 4;
is("@got", '200 200 204 204', "... serves one user exactly 2 ads: nginx's caps connection reserves on the new primary");

# ---- a planned failover: the primary demoted, alive ---------------------------------------------------
my $r2port = $t->redis_server('replica2', args => [ '--replicaof', '127.0.0.1', $rport ]);
ok($t->wait_until(30, sub { cli($sport, 'SENTINEL', 'replicas', 'adserve') =~ /\b$r2port\b/
                            && cli($r2port, 'INFO', 'replication') =~ /master_link_status:up/ }),
   'a second replica, in sync, known to the sentinel');
my $counted = $t->stat_sum($field);
ok($t->wait_until(30, sub { cli($sport, 'SENTINEL', 'FAILOVER', 'adserve') eq 'OK' }), 'SENTINEL FAILOVER: the primary steps down');
ok($t->wait_until(20, sub { cli($rport, 'ROLE') =~ /^slave/ && cli($r2port, 'ROLE') =~ /^master/ }),
   '... to a replica of the second, which is the primary now');
ok($t->wait_until(30, sub { cli($rport, 'INFO', 'replication') =~ /master_link_status:up/ }),
   "... whose replica the node reads again (the demoted one, resynced)");
$t->env->{ADSERVE_REDIS_PORT} = $r2port;
my $more = grep { $t->ad($c->{unit})->{status} == 200 } 1 .. 50;
is($more, 50, '50 more ads served');
ok($t->wait_until(10, sub { $t->stat_sum($field) == $counted + 50 }),
   sprintf "... counted on the newest primary: nginx's events connection left the demoted one (%d of %d)",
   $t->stat_sum($field), $counted + 50);
$capped = $t->chain(line_item => { frequency_caps => [ { max => 1, seconds => 86400 } ] });
ok($t->wait_until(15, sub { $t->workers_at($capped->{rev}) }), 'a line item capped at 1 a day');
@got = map { $t->ad($capped->{unit}, $user)->{status} } 1 .. 3;
is("@got", '200 204 204', '... serves exactly 1 ad: its reservation went to the newest primary');

# ---- what the node holds of users' histories, written at exit through the sentinels ----------------------
# (the history's exit connection has no address of its own with adserve_redis_sentinel: it asks)
$t->created('/api/catalog-items', { item_id => "s:$_", title => "Story $_", url => "https://news.example/s$_" }) for 0 .. 5;
$t->created('/api/associated-items-pools', { source_item_id => 's:0',
                                             items => [ map { { item_id => "s:$_", score => 10 - $_ } } 1 .. 5 ] });
my $related = $t->created('/api/ad-units', { code => "sentinel-rec-$$", name => 'Related', status => 'ACTIVE',
    recommendation => { topn => 2, candidate_filtering => { method => 'ViewOut' } },
    ext => { recommendation => { enabled => 1 } } })->{id};
ok($t->wait_until(15, sub { $t->workers_at($t->revision) }), 'a recommendation unit');
my @readers = map { "sh-$_" } 1 .. 3;
is_deeply([ map { $t->ad($related, { version => '0.1.0', user => { id => $_ }, ext => { item_id => 's:0' } })->{status} }
            @readers ], [ (200) x 3 ], '... recommends to three readers');
is($t->nginx('-s', 'quit'), 0, 'nginx -s quit, within the history\'s delay');
ok($t->wait_until(15, sub { !$t->nginx_pid || !kill(0, $t->nginx_pid) }), '... nginx stopped');
is_deeply([ map { cli($r2port, 'STRLEN', Adserve::Test::history_key($_)) } @readers ], [ (3 * 8) x 3 ],
          '... the entries it held (2 shown, 1 viewed each) written at exit to the primary the sentinels name');
is_deeply([ grep { /exited on signal/ } split /\n/, $t->log_text('nginx-error.log') ], [], '... no worker crashed');
$t->start('nginx');
ok($t->wait_until(15, sub { $t->workers_at($t->revision) }), 'nginx started again');

# ---- a primary demoted behind the sentinel's back answers READONLY ----------------------------------------
is(cli($r2port, 'REPLICAOF', '127.0.0.1', $rport), 'OK', 'the newest primary turned into a replica by hand');
my $reader = { %$user, user => { id => 'readonly' } };
is($t->ad($capped->{unit}, $reader)->{status}, 204,
   "a capped ad for a new user: the reservation answered READONLY, and the ad does not serve");
ok($t->wait_until(5, sub { $t->log_text('nginx-error.log') =~ /caps: redis the primary of "adserve" \(Sentinel\) unavailable \(the server is a replica now \(READONLY\)\)/ }),
   "... nginx dropped that connection, to ask the sentinels again");

done_testing;
