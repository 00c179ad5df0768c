# A full load with a pool of two threads (ADSERVE_THREADS=2): chunks of the
# five hashes parsed and stored at once, each hash's copy behind its own
# lock; then full loads of the running node, each of which hands the
# builder's previous records to the pool to be freed while the build runs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(workers => 2, threads => 2, components => [qw(redis nginx)]);
open my $conf, '<', $t->var . '/nginx/nginx.conf' or die "nginx.conf: $!";
ok((grep { /^thread_pool default threads=2 / } <$conf>), '(the pool has two threads)');
my $c = $t->chain;
ok($t->wait_until(10, sub { $t->workers_at($c->{rev}) }), 'a chain loads');
my $b0 = $t->builder;

my ($chains, @cmds) = $t->unlogged_chains(3000);
my $rev = $t->transaction(@cmds);
ok($t->wait_until(60, sub { $t->workers_at($rev) }),
   '3,000 chains written without log entries load (three chunks of each hash)');
my $b1 = $t->builder;
cmp_ok($b1->{full_loads}, '>', $b0->{full_loads}, '... by a full load');
is($b1->{active_ad_units} - $b0->{active_ad_units}, 3000, '... every unit of them active');
is($b1->{candidates} - $b0->{candidates}, 3000, '... each with its line item');
is($t->own_creative_misses($chains, 100), 0, '... 100 of them, drawn at random, serve their own creative');

# a revision with no log entry, twice: each time the records just loaded
# become the previous ones, freed in the pool
for my $n (1, 2) {
    my $before = $t->builder;
    $rev = $t->transaction();
    ok($t->wait_until(60, sub { $t->workers_at($rev) }), "full load $n of the running node");
    my $after = $t->builder;
    cmp_ok($after->{full_loads}, '>', $before->{full_loads}, '... a full load');
    is($after->{active_ad_units}, $b1->{active_ad_units}, '... the same units active');
    is($after->{candidates}, $b1->{candidates}, '... the same candidates');
    is($t->own_creative_misses($chains, 100), 0, '... 100 units drawn at random serve their own creative');
    is($t->ad($c->{unit})->{status}, 200, '... and the first chain serves');
    is($after->{load_failures}, $b0->{load_failures}, '... and no load failed');
}

my @freed = $t->log_text('nginx-error.log')
    =~ /the previous records of the full load \((\d+)\) freed in [0-9.]+ ms, off the event loop/g;
cmp_ok(scalar(grep { $_ >= 5 * 3000 } @freed), '>=', 2,
       "each full load of the running node freed the previous records, all of them, in the pool (@freed)");
unlike($t->log_text('nginx-error.log'), qr/\[(?:alert|crit|emerg)\]|out of memory/,
       'no alert or lack of memory in the log');

done_testing;
