# A zone too small for the snapshot: the build fails and says what to do,
# the node keeps serving the snapshot it has, and the builder builds its
# records again later and later, without reading Redis again every refresh;
# a smaller inventory then loads and serves.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $ROOT = "$FindBin::Bin/..";
my $template = Adserve::Test::conf_edited(sub {
    $_[0] =~ s/^(\s*adserve_redis \S+;)/$1\n    adserve_snapshot_zone 8m;/m
        or die 'nginx.conf.in has no adserve_redis line';
});

my $t = Adserve::Test->new(template => $template, workers => 2,
                           components => [qw(redis nginx)]);
my $port = $t->env->{ADSERVE_REDIS_PORT};

sub inventory {
    my (@size) = @_;
    system("$ROOT/scripts/gen-inventory @size 2>/dev/null | redis-cli -p $port --pipe >/dev/null") == 0
        or die "gen-inventory @size: $?";
}

my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'a small inventory loads into an 8m zone');
is($t->ad($c->{unit})->{status}, 200, '... and serves');

# 20,000 line items: a snapshot of about 28 MB
inventory(qw(--units 200 --line-items 20000 --creatives 40000));
ok($t->wait_until(60, sub { my $b = $t->builder; $b && $b->{load_failures} >= 1 }),
   'a snapshot larger than the zone: the build fails');
like($t->log_text('nginx-error.log'),
     qr/snapshot build failed: .*is adserve_snapshot_zone large enough for two snapshots/,
     '... and the log says what to do');
is($t->ad($c->{unit})->{status}, 200, 'the node serves the snapshot it has');

my $b0 = $t->builder;
sleep 4;
my $b1 = $t->builder;
ok($b0 && $b1 && $b0->{pid} == $b1->{pid}, '(the same builder)');
is($b1->{full_loads}, $b0->{full_loads},
   'no full load again: the builder builds the records it has');
my $failed = $b1->{load_failures} - $b0->{load_failures};
ok($failed >= 1 && $failed <= 8, "and tries again: $failed builds in 4 s");

inventory(qw(--units 20 --line-items 50 --creatives 100));
my $rev = $t->revision;
ok($t->wait_until(60, sub { $t->workers_at($rev) }), 'a smaller inventory then loads');
my ($unit) = grep { $t->redis('HGET', 'adserve:ad_units', $_) =~ /"status":"ACTIVE"/ }
             split /\n/, $t->redis('HKEYS', 'adserve:ad_units');
ok($unit && $t->ad($unit)->{status} =~ /^20[04]$/, 'and serves');
is($t->ad($c->{unit})->{status}, 404, 'the first inventory is gone with it');

done_testing;
