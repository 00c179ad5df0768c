# The change log's watch: the builder waits on adserve:changes with a blocking
# XREAD and polls as soon as a write lands, not at its next tick. adserve_refresh
# is 30 s here: a write that waited for the tick would serve after 15 s on
# average, and five in a row within 5 s each would be luck (1 in 7,776).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new(template => Adserve::Test::with_directive(adserve_refresh => '30s'),
                           workers => 2);
my $c = $t->chain;
ok($t->wait_until(15, sub { $t->ad($c->{unit})->{status} == 200 }), 'fixtures serve');

sub toggles {
    my ($what) = @_;
    my @late;
    for my $want (204, 200, 204, 200, 204) {
        $c->{records}{line_items}{status} = $want == 204 ? 'PAUSED' : 'ACTIVE';
        my $t0 = time;
        $t->put(line_items => $c->{records}{line_items});
        push @late, sprintf('%.1f s', time - $t0)
            unless $t->wait_until(5, sub { $t->ad($c->{unit})->{status} == $want });
    }
    is(scalar @late, 0, "$what: five writes, each served within 5 s, long before a tick")
        or diag "late: @late";
}

toggles('the watch');

# Redis restarted: the watch's connection comes back with the loader's
$t->stop('redis');
sleep 1;
$t->start('redis');
ok($t->wait_until(15, sub {
       my $s = $t->worker_status or return 0;
       !grep { $_->{redis} ne 'up' } values %$s }), 'Redis back, every worker connected');
toggles('after a restart of Redis');

my $log = $t->log_text('nginx-error.log');
unlike($log, qr/the change log's watch: /, 'no error reply to the watch');
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg');

done_testing;
