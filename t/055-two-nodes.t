# Two nodes over a Redis primary and its replica (README "Many nodes"), on
# loopback: node A (nginx, the sidecar) reads and writes the primary; node B
# (nginx alone, its own folder and port, the same secrets) reads its
# snapshot from a replica and writes events, caps and histories to the
# primary. A write through the API serves on both; B reads the replica (cut
# off, it stays on what it had); a frequency cap holds for one user's
# requests spread over both at once; counts add up.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);
use Adserve::Test;

my $a = Adserve::Test->new;
my $primary = $a->env->{ADSERVE_REDIS_PORT};
my $rport = $a->redis_server('replica', args => [ '--replicaof', '127.0.0.1', $primary ]);
sub replica { my @cmd = @_; my $out = qx{redis-cli -p $rport @cmd}; chomp $out; $out }
ok($a->wait_until(10, sub { replica('INFO', 'replication') =~ /master_link_status:up/ }), 'a replica of the primary, in sync');

my $b = Adserve::Test->new(node_of => $a, redis_read_port => $rport, components => ['nginx']);
ok($b->wait_until(10, sub { $b->workers_connected }), 'node B: nginx alone, reading the replica');
my $conf = do { open my $fh, '<', $b->var . '/nginx/nginx.conf' or die; local $/; <$fh> };
like($conf, qr/^\s*adserve_redis 127\.0\.0\.1:$rport;/m, "... its adserve_redis is the replica's port");
like($conf, qr/^\s*adserve_redis_write 127\.0\.0\.1:$primary;/m, '... its adserve_redis_write the primary');

# ---- a write through the API serves on both nodes ----------------------------------------------------
my $c = $a->chain(line_item => { status => 'PAUSED' });
ok($a->wait_until(5, sub { $a->workers_at($c->{rev}) && $b->workers_at($c->{rev}) }), 'a chain with its line item PAUSED, on both');
is($_->ad($c->{unit})->{status}, 204, 'no ad on node ' . ($_ == $a ? 'A' : 'B')) for $a, $b;
sub serves_on { my ($node, $unit) = @_; $node->ad($unit)->{status} == 200 }
my $t0 = time;
is($a->api('PATCH', "/api/line-items/$c->{line_item}", json => { status => 'ACTIVE' })->{status}, 200,
   'the line item set ACTIVE through the API (node A\'s sidecar)');
my %took;
for my $node ([ A => $a ], [ B => $b ]) {
    $node->[1]->wait_until(5, sub { serves_on($node->[1], $c->{unit}) });
    $took{ $node->[0] } = time - $t0;
}
ok($took{A} < 2 && $took{B} < 2, sprintf 'it serves on both within 2 s of the write (A %.0f ms, B %.0f ms)',
   1000 * $took{A}, 1000 * $took{B});

# ---- B reads the replica: cut off, it keeps what it had --------------------------------------------------
is(replica('REPLICAOF', 'NO', 'ONE'), 'OK', 'the replica cut off from the primary');
is($a->api('PATCH', "/api/line-items/$c->{line_item}", json => { status => 'PAUSED' })->{status}, 200,
   'the line item PAUSED through the API');
ok($a->wait_until(3, sub { !serves_on($a, $c->{unit}) }), 'node A, on the primary, stops serving it');
sleep 1;
ok(serves_on($b, $c->{unit}), '... node B, on the cut-off replica, still serves it');
is(replica('REPLICAOF', '127.0.0.1', $primary), 'OK', 'the replica follows the primary again');
ok($b->wait_until(10, sub { !serves_on($b, $c->{unit}) }), '... and node B stops serving it too');

# ---- a frequency cap holds across nodes -----------------------------------------------------------------
my $capped = $a->chain(line_item => { frequency_caps => [ { max => 2, seconds => 86400 } ] });
ok($a->wait_until(5, sub { $a->workers_at($capped->{rev}) && $b->workers_at($capped->{rev}) }),
   'a line item capped at 2 a day, on both');
my @bodies = map { { version => '0.1.0', user => { id => "cap-$_" }, device => { ua => 'Mozilla/5.0' } } } 1 .. 3;
my %ads;
for my $user (0 .. 2) {
    # 6 requests of one user at once on each node, 12 in all
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        close $r;
        print {$w} scalar(grep { $_->{status} == 200 } $b->ads_concurrent($capped->{unit}, [ ($bodies[$user]) x 6 ])), "\n";
        close $w;
        POSIX::_exit(0);            # no END block, nor the stacks' shutdown, in the child
    }
    close $w;
    my $on_a = grep { $_->{status} == 200 } $a->ads_concurrent($capped->{unit}, [ ($bodies[$user]) x 6 ]);
    chomp(my $on_b = <$r> // 0);
    waitpid $pid, 0;
    $ads{"cap-" . ($user + 1)} = $on_a + $on_b;
}
is_deeply(\%ads, { 'cap-1' => 2, 'cap-2' => 2, 'cap-3' => 2 },
          '3 users, each 12 requests at once over both nodes: exactly 2 ads each');

# ---- counts add up across nodes ---------------------------------------------------------------------
my $counted = $a->chain;
ok($a->wait_until(5, sub { $a->workers_at($counted->{rev}) && $b->workers_at($counted->{rev}) }), 'one more unit, on both');
my $body = { version => '0.1.0', device => { ua => 'Mozilla/5.0' } };
my $answered = grep { $_->{status} == 200 } $a->ads_pipelined($counted->{unit}, [ ($body) x 300 ]),
                                              $b->ads_pipelined($counted->{unit}, [ ($body) x 200 ]);
is($answered, 500, '300 ads from node A, 200 from node B');
sub requests {
    my $n = 0;
    for my $key (split /\n/, $a->redis('KEYS', 'adserve:stats:*')) {
        $n += $a->redis('HGET', $key, "u:$counted->{unit}:req") || 0;
    }
    return $n;
}
ok($a->wait_until(5, sub { requests() == 500 }), 'the primary counts all 500 (' . requests() . ')');

done_testing;
