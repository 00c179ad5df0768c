# The developer/monitoring group (README "Management API"): GET
# /api/developer/monitoring shows the data flow through Redis. An API
# write moves the revision, the change log and the audit; an impression,
# flushed by a worker, the events stream; a reset mail with no SMTP server,
# the outbox. Each stream's newest entry has its time. Admins only.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new;
sub monitoring {
    my $r = $t->api('GET', '/api/developer/monitoring');
    die "GET /api/developer/monitoring: $r->{status} $r->{content}" unless $r->{status} == 200;
    return $r->{json};
}
sub age_ok {
    my ($at, $name) = @_;
    my ($y, $mo, $d, $h, $mi, $s) = ($at // '') =~ /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z$/
        or return fail("$name: no time ($at)");
    require Time::Local;
    my $age = time - Time::Local::timegm($s, $mi, $h, $d, $mo - 1, $y);
    ok($age > -2 && $age < 60, "$name: its newest entry is $at, now");
}

my $m0 = monitoring();
is($m0->{revision}, $t->revision, "the revision is adserve:rev ($m0->{revision})");
is($m0->{streams}{events}{length}, 0, 'no events yet');
is($m0->{streams}{events}{last_at}, undef, '... so no time');

my $adv = $t->created('/api/advertisers', { name => 'Monitored' });
my $m1 = monitoring();
is($m1->{revision}, $t->revision, 'a write through the API: the revision follows');
is($m1->{streams}{audit}{length}, $m0->{streams}{audit}{length} + 1, '... one more audit record');
age_ok($m1->{streams}{audit}{last_at}, 'the audit');

my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'a unit that serves');
my $ad = $t->ad($c->{unit});
is($t->event('impression', $ad->{json}{ext}{ad_log})->{status}, 204, 'an impression');
my $m2;
ok($t->wait_until(5, sub { $m2 = monitoring(); $m2->{streams}{events}{length} == 1 }), '... in the events stream, flushed by its worker');
age_ok($m2->{streams}{events}{last_at}, 'the events');

$t->request('POST', '/api/auth/forgot-password', json => { email => ($t->admin)[0] });
my $m3;
ok($t->wait_until(5, sub { $m3 = monitoring(); $m3->{streams}{outbox}{length} == $m2->{streams}{outbox}{length} + 1 }),
   'a reset mail, with no SMTP server: one more in the outbox');
age_ok($m3->{streams}{outbox}{last_at}, 'the outbox');
is($m3->{streams}{changes}{length}, $t->redis('XLEN', 'adserve:changes'), "the change log's length is XLEN's");

$t->api('POST', '/api/users', json => { email => 'op@example.com', password => 'a-good-password', role => 'operator' });
is($t->api('GET', '/api/developer/monitoring', as => [ 'op@example.com', 'a-good-password' ])->{status}, 403, 'operators may not (admins only)');
is($t->api('GET', '/api/developer/monitoring', token => undef)->{status}, 401, 'nor anyone without a token');

done_testing;
