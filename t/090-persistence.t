# Data written through the API survives a stop and a start of the whole
# stack (scripts/stop, scripts/run: what make stop / make run do), since
# Redis runs with AOF on; and the module serves it again after the start.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new;

my $unit = $t->api('POST', '/api/ad-units', json => { code => 'persist-root', name => 'Persisted',
                                                      status => 'ACTIVE' });
is($unit->{status}, 201, 'an ad unit created through the API') or diag $unit->{content};
my $user = $t->api('POST', '/api/users', json => { email => 'keep@example.com',
                                                   password => 'a-long-password', role => 'operator' });
is($user->{status}, 201, 'a user created through the API') or diag $user->{content};
my $id = $unit->{json}{id};
ok($t->wait_until(3, sub { $t->ad($id)->{status} == 204 }), 'the ACTIVE ad unit serves (no demand: 204)');

# everything down, as make stop does; the AOF is written every second and
# on shutdown
my @pids = ($t->nginx_pid, $t->workers,
            map { open my $fh, '<', $t->var . "/run/$_.pid" or die; scalar <$fh> } qw(sidecar redis));
chomp @pids;
is(scalar(grep { /^\d+$/ } @pids), 5, 'the stack runs: nginx master and two workers, sidecar, Redis');
$t->stop('nginx', 'sidecar', 'redis');
is_deeply([ grep { kill 0, $_ } @pids ], [], 'stopping (what make stop does) leaves no process behind');
ok(-s $t->var . '/redis/appendonlydir' || glob($t->var . '/redis/appendonlydir/*.aof'),
   'Redis left its append-only file');
$t->start('redis', 'sidecar', 'nginx');

my $back = $t->api('GET', "/api/ad-units/$id");
is($back->{status}, 200, 'the ad unit is back after the restart');
is_deeply($back->{json}, $unit->{json}, '... exactly as it was');
my $login = $t->request('POST', '/api/auth/login',
                        json => { email => 'keep@example.com', password => 'a-long-password' });
is($login->{status}, 200, 'the user logs in after the restart');
ok($t->wait_until(3, sub { $t->ad($id)->{status} == 204 }), 'and the module serves the ad unit again');
cmp_ok($t->redis('GET', 'adserve:rev'), '>=', 1, 'the revision survived too');

done_testing;
