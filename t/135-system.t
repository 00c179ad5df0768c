# The System group (README "Management API"): GET /api/system tells the
# API's version (the OpenAPI document's), when the sidecar started, its
# libraries' versions, and Redis as its INFO does: version, role, memory,
# clients. Admins and operators; advertisers get 403, nobody else a thing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $res = $t->api('GET', '/api/system');
is($res->{status}, 200, 'GET /api/system');
my $s = $res->{json};
is($s->{api_version}, $t->request('GET', '/api/openapi.json')->{json}{info}{version}, "the API's version is the OpenAPI document's");
my ($version) = $t->redis('INFO', 'server') =~ /^redis_version:(\S+)/m;
is($s->{redis}{version}, $version, "Redis's version, as INFO says ($version)");
is($s->{redis}{role}, 'master', '... its role');
my ($used) = $t->redis('INFO', 'memory') =~ /^used_memory:(\d+)/m;
ok($s->{redis}{used_memory_bytes} > 100_000 && abs($s->{redis}{used_memory_bytes} - $used) < $used / 2,
   "... its memory in use ($s->{redis}{used_memory_bytes} bytes; INFO now says $used)");
is($s->{redis}{maxmemory_bytes}, 0 + ($t->redis('CONFIG', 'GET', 'maxmemory') =~ /(\d+)\s*$/)[0], '... its limit (0: none)');
ok($s->{redis}{connected_clients} >= 1, "... its clients ($s->{redis}{connected_clients})");
like($s->{sidecar}{started_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, "the sidecar's start, RFC 3339");
ok($s->{sidecar}{uptime_seconds} >= 0 && $s->{sidecar}{uptime_seconds} < 600, "... its uptime ($s->{sidecar}{uptime_seconds} s)");
is_deeply([ sort keys %{ $s->{sidecar}{libraries} } ], [qw(cjson hiredis libcurl libmicrohttpd libsodium)], '... its libraries');
my ($mhd) = qx{dpkg-query -W -f='\${Version}' libmicrohttpd12 2>/dev/null} =~ /^([\d.]+)/;
is($s->{sidecar}{libraries}{libmicrohttpd}, $mhd, "... libmicrohttpd's version is the installed one ($mhd)") if $mhd;

$t->api('POST', '/api/users', json => { email => 'op@example.com', password => 'a-good-password', role => 'operator' });
$t->api('POST', '/api/users', json => { email => 'adv@example.com', password => 'a-good-password', role => 'advertiser',
                                        advertiser_id => $t->advertiser_id });
is($t->api('GET', '/api/system', as => [ 'op@example.com', 'a-good-password' ])->{status}, 200, 'an operator may read it');
is($t->api('GET', '/api/system', as => [ 'adv@example.com', 'a-good-password' ])->{status}, 403, 'an advertiser may not');
is($t->api('GET', '/api/system', token => undef)->{status}, 401, 'nor anyone without a token');
is($t->api('POST', '/api/system')->{status}, 405, 'GET only (405)');

done_testing;
