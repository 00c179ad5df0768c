# Ops deploy by reloading nginx: under load, a reload fails no request, and
# the old workers exit promptly.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use Adserve::Test;
use Adserve::Load;

my $t = Adserve::Test->new;
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'fixtures loaded');

my $load = Adserve::Load->start(port => $t->port, path => "/app/v0/ad/$c->{unit}",
                                body => '{"version":"0.1.0","user":{"id":"u1"}}',
                                procs => 4, seconds => 5);
my @old = $t->workers;
my %gone;
for my $round (1 .. 3) {
    sleep 1;
    my @before = $t->workers;
    is($t->nginx('-s', 'reload'), 0, "reload $round under load");
    my $t0 = time;
    my $exited = $t->wait_until(5, sub { !grep { kill 0, $_ } @before });
    ok($exited, "reload $round: the old workers exit");
    diag(sprintf "reload %d: old workers gone after %.0f ms", $round, 1000 * (time - $t0));
}
my $r = $load->finish;

cmp_ok($r->{requests}, '>', 500, "the load ran ($r->{requests} requests)");
is($r->{failed}, 0, 'no request failed across three reloads')
    or diag explain $r->{errors};
is($r->{ok}, $r->{requests}, 'every request was answered 200')
    or diag explain $r->{statuses};
diag("keep-alive races retried like a browser would: $r->{retried}");

my @new = $t->workers;
is(scalar @new, 2, 'two new workers');
ok(!grep({ my $n = $_; grep { $_ == $n } @old } @new), 'none of them an old one');

my $log = $t->log_text('nginx-error.log');
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');

done_testing;
