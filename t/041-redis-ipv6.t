# Redis on IPv6: with ADSERVE_REDIS_HOST=::1 the sidecar connects to [::1]
# and nginx is configured with "adserve_redis [::1]:port" (ngx_parse_url's
# form); the whole stack then loads, serves and counts over IPv6.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(redis_host => '::1');
my $port = $t->env->{ADSERVE_REDIS_PORT};

open my $fh, '<', $t->var . '/nginx/nginx.conf' or die $!;
my $conf = do { local $/; <$fh> };
like($conf, qr/^\s*adserve_redis \[::1\]:$port;$/m, 'nginx.conf names Redis as [::1]:port');

# the sidecar reads and writes over ::1: a login reads the user, a POST
# writes an ad unit with its change log entry
ok($t->token, 'the API logs in (the sidecar reads Redis over ::1)');
my $unit = $t->created('/api/ad-units', { code => 'v6-top', name => 'IPv6 top',
                                          status => 'ACTIVE', display => { w => 300, h => 250 } });
ok($unit->{id}, 'an ad unit written through the API');

# the module loads over ::1 (the loader's connection), serves, and counts
# (the events connection, adserve_redis_write defaulting to adserve_redis)
my $chain = $t->chain(unit => { id => $unit->{id}, code => 'v6-top', name => 'IPv6 top',
                                status => 'ACTIVE', display => { w => 300, h => 250 } });
ok($t->wait_until(5, sub { $t->workers_at($chain->{rev}) }), 'every worker loaded it');
ok($t->workers_connected, 'every worker reports its Redis connection up');
my $res = $t->ad($unit->{id});
is($res->{status}, 200, 'the ad unit serves');
is($res->{json}{ad}{id}, $chain->{creative}, '... its creative');
is($t->event('impression', $res->{json}{ext}{ad_log})->{status}, 204, 'the impression is taken');
ok($t->wait_until(5, sub { $t->delivery("$chain->{line_item}:imp") == 1 }),
   'and counted in Redis (the flush went over ::1)');

# every client but redis-cli's own came from ::1
my @addrs = $t->redis('CLIENT', 'LIST') =~ /\baddr=(\S+):\d+ /g;
my @v6 = grep { $_ eq '[::1]' || $_ eq '::1' } @addrs;
cmp_ok(scalar @v6, '>=', 3, scalar(@v6) . ' Redis clients on ::1 (sidecar, loaders, events)')
    or diag "clients: @addrs";
is(scalar(grep { $_ eq '127.0.0.1' } @addrs), 1, '... and only redis-cli on 127.0.0.1')
    or diag "clients: @addrs";

done_testing();
