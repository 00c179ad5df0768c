# Events survive what Redis and nginx go through, counted exactly once:
# - Redis stopped: events still answer 204/302 and wait in the workers;
#   Redis back, every count lands, none lost, none doubled;
# - Redis stalled past the flush deadline (a long script): the batch is
#   sent again on a new connection, and applied once;
# - a graceful reload right after events: the old workers flush at exit;
# - a tiny buffer (adserve_event_buffer 16) while Redis is down: what does
#   not fit is dropped, counted (dropped:events, the status) and logged
#   once when it starts and once, with the count, when it ends.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use Adserve::Test;

sub flushed {
    my ($t, $name, %want) = @_;
    my $ok = $t->wait_until(15, sub { $t->stats_are(%want) });
    ok($ok, $name) or diag explain { map { $_ => $t->stat_sum($_) } sort keys %want };
}

sub tokens {
    my ($t, $unit, $n) = @_;
    my @tokens;
    for (1 .. $n) {
        my $res = $t->ad($unit);
        push @tokens, $res->{json}{ext}{ad_log} if $res->{status} == 200;
    }
    is(scalar @tokens, $n, "$n ads served");
    return @tokens;
}

# the sum of an events status field over every worker
sub worker_sum {
    my ($t, $field) = @_;
    my $all = $t->worker_status or return -1;
    my $sum = 0;
    $sum += $_->{events}{$field} for values %$all;
    return $sum;
}

# nothing queued, sealed or in flight in any worker
sub idle {
    my ($t) = @_;
    my $all = $t->worker_status or return 0;
    return !grep { $_->{events}{queued} || $_->{events}{unacknowledged} || $_->{events}{pending_counters} }
           values %$all;
}

my $t = Adserve::Test->new;
my $c = $t->chain(line_item => { cost_type => 'CPC', rate => 0.4 });
my ($unit, $li, $cr) = @$c{qw(unit line_item creative)};
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) && $t->workers_connected }), 'fixtures loaded');

my @tok = tokens($t, $unit, 10);
flushed($t, 'the ads counted', "u:$unit:req" => 10, "u:$unit:ads" => 10);

# ---- Redis stopped, then started again ---------------------------------------------------------------
$t->stop('redis');
is($t->event(impression => $_)->{status}, 204, 'Redis down: impression 204') for @tok[0 .. 5];
is($t->event(impression => $tok[0])->{status}, 204, '... a repeated one too');
is($t->event(click => $_)->{status}, 302, 'Redis down: click 302') for @tok[0 .. 2];
is($t->event(conversion => $tok[0], value => 3)->{status}, 204, 'Redis down: conversion 204');
my @more = tokens($t, $unit, 5);
ok($t->wait_until(5, sub { my $all = $t->worker_status;
                           $all && !grep { $_->{events}{redis} ne 'down' } values %$all }),
   "every worker's events connection is down");
cmp_ok(worker_sum($t, 'queued'), '==', 11, 'the 11 events wait in the workers');
sleep 1.5;      # flush attempts while down: they must not lose anything
$t->start('redis');

# CPC at 0.4: 400,000 micros a click, nothing for impressions
flushed($t, 'Redis back: every count exact, none lost, none doubled',
        "u:$unit:req" => 15, "u:$unit:ads" => 15, "li:$li:ads" => 15,
        "u:$unit:imp" => 6, 'dup:imp' => 1, "u:$unit:clk" => 3, "u:$unit:conv" => 1,
        "li:$li:spend" => 3 * 400_000, "li:$li:convval" => 3_000_000);
is($t->redis('XLEN', 'adserve:events'), 10, 'the stream: the 10 counted events');
is($t->delivery("$li:clk"), 3, 'delivery: 3 clicks');
ok($t->wait_until(10, sub { idle($t) }), 'nothing left pending in the workers');
is($t->stat_sum("u:$unit:imp"), 6, '... and still 6 impressions: nothing applied twice');
is($t->stat_sum("u:$unit:req"), 15, '... and 15 requests');

# ---- Redis stalled past the flush deadline -------------------------------------------------------
# A script that holds Redis for 3.5 s: a batch sent meanwhile misses its
# 1 s deadline, its connection is dropped, and it is sent again on the
# next one. The first copy is still in Redis's socket buffer and runs when
# Redis is free again: one of the two copies applies, the other is a
# duplicate.
my $stall = q{local s = redis.call('TIME') local t = tonumber(s[1]) + tonumber(s[2]) / 1e6
              while true do local n = redis.call('TIME')
                if tonumber(n[1]) + tonumber(n[2]) / 1e6 - t > 3.5 then break end end return 1};
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>', '/dev/null';
    exec 'redis-cli', '-p', $t->env->{ADSERVE_REDIS_PORT}, 'EVAL', $stall, '0';
    exit 1;
}
ok($t->wait_until(1.5, sub { $t->redis_stalled }),
   'Redis is stalled by the script');
my $t0 = time;
is($t->event(impression => $_)->{status}, 204, 'Redis stalled: impression 204') for @more;
cmp_ok(time - $t0, '<', 1, '... answered at once');
waitpid $pid, 0;
flushed($t, 'Redis free again: the 5 impressions counted once',
        "u:$unit:imp" => 11, "u:$unit:req" => 15, 'dup:imp' => 1);
ok($t->wait_until(10, sub { idle($t) }), 'nothing left pending');
is($t->stat_sum("u:$unit:imp"), 11, '... still 11');
my $failures = worker_sum($t, 'flush_failures');
my $dups = worker_sum($t, 'duplicate_batches');
cmp_ok($failures, '>=', 1, "the stalled batch failed ($failures failures)");
cmp_ok($dups, '>=', 1, "... and its first copy, run once Redis was free, made the resent one a duplicate ($dups)");

# ---- a graceful reload right after events --------------------------------------------------------
my @r = tokens($t, $unit, 8);
my @before = $t->workers;
is($t->event(impression => $_)->{status}, 204, 'impression just before a reload') for @r;
is($t->event(click => $r[0])->{status}, 302, 'a click too');
# on a slow machine the timer may flush them all before the reload: then
# the exit has nothing to say
my $pending = grep { $_->{events}{queued} || $_->{events}{pending_counters} }
              values %{ $t->worker_status // {} };
is($t->nginx('-s', 'reload'), 0, 'reload');
ok($t->wait_until(10, sub { !grep { kill 0, $_ } @before }), 'the old workers exit');
flushed($t, 'every event of the old workers landed',
        "u:$unit:imp" => 19, "u:$unit:clk" => 4, "u:$unit:req" => 23, "u:$unit:ads" => 23);
my $log = $t->log_text('nginx-error.log');
# whether the timer or the exit flushed them depends on the machine's pace;
# what matters is above: every count landed
note $log =~ /adserve: events: flushed at exit: \d+ batches/
     ? 'an old worker flushed at exit' : "the timer flushed first ($pending workers had events pending)";
unlike($log, qr/could not flush at exit/, 'nothing lost at exit');
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert, crit or emerg in the error log');
$Adserve::Test::SANITIZER_REPORTS += $t->shutdown;     # the second stack is alone

# ---- overflow: a buffer of 16 events per worker while Redis is down --------------------------------
my $s = Adserve::Test->new(event_buffer => 16);
my $c2 = $s->chain;
ok($s->wait_until(5, sub { $s->workers_at($c2->{rev}) && $s->workers_connected }), 'a stack with 16-event buffers');
my @o = tokens($s, $c2->{unit}, 60);
$s->stop('redis');
is(scalar(grep { $s->event(impression => $_)->{status} == 204 } @o), 60,
   'Redis down: 60 impressions, all 204');
my $all = $s->worker_status;
my ($queued, $dropped) = (0, 0);
for (values %$all) { $queued += $_->{events}{queued}; $dropped += $_->{events}{dropped} }
cmp_ok($queued, '<=', 32, "at most 16 kept per worker ($queued)");
is($queued + $dropped, 60, "the rest dropped and counted in the status ($dropped)");
my $overflowed = grep { $_->{events}{dropped} > 0 } values %$all;
my $m = Adserve::Test::prom_samples($s->request('GET', '/metrics')->{content});
is($m->{adserve_events_dropped_total}, $dropped, "/metrics counts them over both workers ($dropped)");
my $full = () = $s->log_text('nginx-error.log') =~ /adserve: events: buffer full \(16 events\)/g;
is($full, $overflowed, 'the overflow logged once per worker that overflowed');

$s->start('redis');
flushed($s, 'Redis back: what was kept counted, what was dropped counted as dropped:events',
        "u:$c2->{unit}:imp" => $queued, 'dropped:events' => $dropped);
$log = $s->log_text('nginx-error.log');
$full = () = $log =~ /adserve: events: buffer full/g;
is($full, $overflowed, '... still one line per overflow');
my $ended = 0;
$ended += $1 while $log =~ /adserve: events: buffer no longer full: (\d+) events were dropped/g;
is($ended, $dropped, 'its end logged with the count');

done_testing;
