# The internal group (README "internal"): service-to-service routes under
# the service credential, $ADSERVE_VAR/secrets/service.key, which the
# sidecar makes on first start (0600). Only that key opens them: no key, a
# wrong one, or any user's token (even an admin's access or API token) is
# 401; and the key opens nothing else. The revision is the one the nodes
# report once they serve every write; the recommendation jobs run for a
# scheduler. The key is never logged.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $file = $t->var . '/secrets/service.key';
ok(-f $file, 'the sidecar made the service key');
is((stat $file)[2] & 0777, 0600, '... readable by its owner only');
open my $fh, '<', $file or die "$file: $!";
chomp(my $key = <$fh>);
close $fh;
like($key, qr/^[0-9a-f]{64}$/, '... 32 random bytes, hex');
my @service = (token => $key);

my $res = $t->api('GET', '/api/internal/revision', @service);
is($res->{status}, 200, 'GET /api/internal/revision with the service key');
my $rev = $res->{json}{revision};
is($rev, $t->revision, '... the serving revision');
$t->created('/api/ad-units', { code => 'internal-1', name => 'One', display => { w => 300, h => 250 } });
is($t->api('GET', '/api/internal/revision', @service)->{json}{revision}, $rev + 1, '... which a write moves');
ok($t->wait_until(5, sub { $t->workers_at($rev + 1) }), '... and the nodes report once they serve it');

$res = $t->api('POST', '/api/internal/recommendation-jobs/run', @service);
is($res->{status}, 200, 'a scheduler runs the recommendation jobs');
ok(exists $res->{json}{contexts} && exists $res->{json}{pools_written}, '... and reads their report');

for my $case ([ 'no token', undef ], [ 'a wrong key', 'f' x 64 ], [ 'the key with a byte more', "${key}0" ],
              [ "the admin's access token", $t->token ],
              [ "the admin's API token", $t->api('POST', '/api/settings/api-token')->{json}{api_token} ]) {
    $res = $t->api('GET', '/api/internal/revision', token => $case->[1]);
    is($res->{status}, 401, "$case->[0]: 401");
    is($res->{json}{detail}, 'the internal routes take the service credential', '... saying what it takes');
}
is($t->api('POST', '/api/internal/recommendation-jobs/run', token => $t->token)->{status}, 401,
   'the jobs too: a user token is refused');
is($t->api('GET', '/api/auth/me', @service)->{status}, 401, 'the key opens no user route');
is($t->api('GET', '/api/ad-units', @service)->{status}, 401, '... not the inventory');
is($t->api('GET', '/api/internal/revisions', @service)->{status}, 404, 'an unknown internal path: 404');
is($t->api('DELETE', '/api/internal/revision', @service)->{status}, 405, 'a wrong method: 405');

my $doc = $t->request('GET', '/api/openapi.json')->{json};
is_deeply($doc->{paths}{'/api/internal/revision'}{get}{security}, [ { serviceKey => [] } ],
          'the OpenAPI document names the service key as the routes\' security');
is($doc->{components}{securitySchemes}{serviceKey}{scheme}, 'bearer', '... a bearer scheme of its own');

unlike($t->log_text('sidecar.log') . $t->log_text('nginx-access.log'), qr/\Q$key\E/, 'the key is in no log');

# the key survives a restart, and a new one is taken at the next start
$t->stop('sidecar');
$t->start('sidecar');
is($t->api('GET', '/api/internal/revision', @service)->{status}, 200, 'after a restart: the same key');
my $new = 'a' x 64;
open $fh, '>', $file or die "$file: $!";
print $fh "$new\n";
close $fh;
$t->stop('sidecar');
$t->start('sidecar');
is($t->api('GET', '/api/internal/revision', token => $new)->{status}, 200, 'a replaced key works after a restart');
is($t->api('GET', '/api/internal/revision', @service)->{status}, 401, '... and the old one does not');

done_testing;
