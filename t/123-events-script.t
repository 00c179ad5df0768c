# The flush script as Redis means scripts to be used: loaded once per
# connection (SCRIPT LOAD) and called by its SHA-1 (EVALSHA), never sent
# whole with every batch; every key it touches declared in KEYS (valid on
# Redis Cluster's rules); and a Redis that lost its scripts (SCRIPT FLUSH,
# a restart) costs no event: the worker loads it again and sends the batch.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $c = $t->chain;
my ($unit, $li) = @$c{qw(unit line_item)};
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded');

my $token;
my @cmd = $t->monitored(qr/"evalsha"/i, sub {
    my $res = $t->ad($unit);
    $token = $res->{json}{ext}{ad_log};
    is($t->event('impression', $token)->{status}, 204, 'an impression');
});
ok(@cmd, 'the workers flush with EVALSHA') or BAIL_OUT('no EVALSHA seen');
my ($name, $sha, $nkeys, @rest) = @cmd;
like($sha, qr/^[0-9a-f]{40}$/, 'by the SHA-1 of the script');
is($t->redis('SCRIPT', 'EXISTS', $sha), 1, 'which Redis has loaded');
my @keys = @rest[0 .. $nkeys - 1];
like($keys[0], qr/^adserve:flush:[0-9a-f]{16}-\d+$/, 'KEYS[1]: the worker\'s batch sequence');
is($keys[1], 'adserve:delivery', 'KEYS[2]: adserve:delivery');
is($keys[2], 'adserve:events', 'KEYS[3]: the events stream');
my @hours = grep { /^adserve:stats:\d{10}$/ } @keys;
ok(@hours >= 1, 'the hour hashes are declared: ' . join(' ', @hours));
is(scalar(grep { !/^adserve:(flush|delivery|events|stats|seen):?/ } @keys), 0,
   'nothing else is');
my %once = map { $_ => 1 } @keys;
is(scalar(keys %once), scalar(@keys), 'each key once');

# the impression went into the declared keys: its dedup set is the one
# set of its issue hour
ok($t->wait_until(5, sub { $t->delivery("$li:imp") == 1 }), 'the impression is counted');
my @seen = grep { length } split /\n/, $t->redis('--scan', '--pattern', 'adserve:seen:*');
is(scalar @seen, 1, 'one dedup set: ' . join(' ', @seen));

# ---- a Redis that lost the script ----------------------------------------
my $loads = sub { my $s = $t->worker_status or return 0;
                  my $n = 0; $n += $_->{events}{script_loads} for values %$s; $n };
my $before = $loads->();
cmp_ok($before, '>=', 2, "each worker loaded the script when it connected ($before loads)");
is($t->redis('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH: Redis forgets it');
is($t->redis('SCRIPT', 'EXISTS', $sha), 0, '... gone');

my $conns = $t->worker_connections;
my $n = 0;
for my $conn (@$conns) {
    for (1 .. 3) {
        my $res = $t->ad($unit, undef, via => $conn);
        $n++ if $res->{status} == 200
             && $t->event('impression', $res->{json}{ext}{ad_log})->{status} == 204;
    }
}
is($n, 3 * @$conns, 'impressions on every worker after the flush');
ok($t->wait_until(10, sub { $t->delivery("$li:imp") == 1 + $n }),
   'every one counted: NOSCRIPT made the workers load it again')
    or diag 'delivered: ' . $t->delivery("$li:imp");
is($t->redis('SCRIPT', 'EXISTS', $sha), 1, 'the script is back');
cmp_ok($loads->(), '>', $before, 'loaded again (' . $loads->() . ' loads)');
my $s = $t->worker_status;
is(scalar(grep { $_->{events}{dropped} != 0 } values %$s), 0, 'no event dropped');
unlike($t->log_text('nginx-error.log'), qr/batch \d+ refused \d+ times/,
       'no batch given up');

done_testing();
