# The node holds a user's new recommendation history entries for
# adserve_history_delay, then writes them in one APPEND (README
# "Recommendation", "The node's copy of histories"), on the real stack: the
# answers of one user within the delay go to Redis together and in order;
# the copy filters with them meanwhile, and so does a read of Redis that
# comes before they are written; nothing held is lost when every worker is
# killed, nor when nginx stops. The delay is 5 s here, so that "within the
# delay" holds on a slow machine too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use Adserve::Test;

my $t = Adserve::Test->new(template => Adserve::Test::with_directive(adserve_history_delay => '5s'));

sub body { my ($user, $item) = @_; { version => '0.1.0', user => { id => $user }, ext => { item_id => $item } } }
sub ids { my ($res) = @_; [ map { $_->{id} } @{ $res->{json}{ad}{recommendation}{items} // [] } ] }
sub strlen { $t->history_len($_[0]) }
sub held { $t->status->{history_zone}{held} }
sub appends { ($t->redis('INFO', 'commandstats') =~ /cmdstat_append:calls=(\d+)/)[0] // 0 }
# the item hashes of a user's history in Redis, oldest first
sub hashes { [ map { $_->[0] } $t->history($_[0]) ] }
sub fnv { Adserve::Test::history_hash(@_) }

for my $id (map { "h:$_" } 0 .. 40) {
    $t->created('/api/catalog-items', { item_id => $id, title => "Story $id", url => "https://news.example/$id" });
}
$t->created('/api/associated-items-pools', { source_item_id => 'h:0',
    items => [ map { { item_id => "h:$_", score => 100 - $_ } } 1 .. 40 ] });
my $unit = $t->created('/api/ad-units', { code => "held-$$", name => 'Held', status => 'ACTIVE',
    recommendation => { topn => 4, candidate_filtering => { method => 'ViewOut' } },
    ext => { recommendation => { enabled => 1 } } })->{id};
ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the unit');

my $zone = $t->status->{history_zone};
is($zone->{delay_ms}, 5000, 'the status shows the delay (adserve_history_delay 5s)');

# ---- a user's answers within the delay: one write -------------------------------------------------------
my $before = appends();
my @seen;
for (1 .. 3) {
    my $res = $t->ad($unit, body('hd-1', 'h:0'));
    is($res->{status}, 200, "answer $_: 200");
    push @seen, @{ ids($res) };
}
is_deeply(\@seen, [ map { "h:$_" } 1 .. 12 ], 'three answers, each filtered by the ones before (the copy has them)');
my $held = held();
is(strlen('hd-1'), 0, 'within the delay, Redis has none of them yet');
ok($held >= 1, "... the node holds them (status: $held users held)");
ok($t->wait_until(10, sub { strlen('hd-1') == 15 }), '... after it, Redis has all 15 entries (12 shown, 3 viewed)');
is(appends() - $before, 1, '... written in one APPEND');
is_deeply(hashes('hd-1'), [ map { fnv($_) } map { ("h:" . (4 * $_ - 3), "h:" . (4 * $_ - 2), "h:" . (4 * $_ - 1),
                                                    "h:" . (4 * $_), 'h:0') } 1 .. 3 ],
          '... in the order of the answers');
ok($t->wait_until(5, sub { held() == 0 }), '... and the node holds nothing more');
my $prom = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content});
is($prom->{adserve_history_held}, 0, '/metrics: adserve_history_held 0');

# ---- a read of Redis before the write: the held entries still count ----------------------------------------
# (the exact merge of the user's held record is t/118's, under its test clock: here the node's
# entries of the delay and a second more are merged too)
is_deeply(ids($t->ad($unit, body('hd-2', 'h:0'))), [ map { "h:$_" } 1 .. 4 ], 'a new user: the top 4');
sleep 2.5;    # past adserve_history_refresh (2 s), within the delay
is(strlen('hd-2'), 0, 'past the refresh, the answer is still held');
my $reads = Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content})->{'adserve_history_copy_total{result="read"}'};
is_deeply(ids($t->ad($unit, body('hd-2', 'h:0'))), [ map { "h:$_" } 5 .. 8 ],
          '... the next request reads Redis (which has none), and the held entries filter with it');
is(Adserve::Test::prom_samples($t->request('GET', '/metrics')->{content})->{'adserve_history_copy_total{result="read"}'},
   $reads + 1, '... a read of Redis indeed');

# ---- every worker killed: the zone keeps what they held ----------------------------------------------------
my @users = map { "hk-$_" } 1 .. 5;
$t->ad($unit, body($_, 'h:0')) for @users;
ok(held() >= 1, 'five users answered and held');
my @old = $t->workers;
kill 'KILL', @old;
ok($t->wait_until(10, sub { my %o = map { $_ => 1 } @old; my @w = $t->workers; @w == 2 && !grep { $o{$_} } @w }),
   'every worker killed (SIGKILL), and started again by the master');
ok($t->wait_until(15, sub { !grep { strlen($_) != 5 } @users }),
   '... the new workers write what the dead ones held: every user\'s 5 entries in Redis');

# ---- nginx stopped: the exit writes what is held ---------------------------------------------------------------
@users = map { "hs-$_" } 1 .. 5;
$t->ad($unit, body($_, 'h:0')) for @users;
my $start = time;
is($t->nginx('-s', 'quit'), 0, 'nginx -s quit, within the delay');
ok($t->wait_until(15, sub { !$t->nginx_pid || !kill(0, $t->nginx_pid) }), '... nginx stopped');
is_deeply([ map { strlen($_) } @users ], [ (5) x 5 ], '... with every user\'s entries in Redis');
like($t->log_text('nginx-error.log'), qr/history: the held entries of \d+ users written at exit/,
     '... which the exit logs');
unlike($t->log_text('nginx-error.log'), qr/entries lost/, 'nothing lost');
is_deeply([ grep { /\[(?:alert|crit|emerg)\]/ && !/exited on signal 9|was locked by/ } split /\n/, $t->log_text('nginx-error.log') ], [],
          'no alert, crit or emerg in the error log but the kills\'');

done_testing;
