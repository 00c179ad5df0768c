# The sidecar behind nginx: {detail} errors for every failure, size limits,
# login and token checks, a 502 in the API's shape when it is down, and a
# clean exit on SIGTERM.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(encode_base64url);
use Digest::SHA qw(hmac_sha256);
use JSON::PP;
use IO::Socket::INET;
use Adserve::Test;

my $t = Adserve::Test->new;
my ($email, $password) = $t->admin;

sub detail_ok {
    my ($res, $status, $name) = @_;
    is($res->{status}, $status, "$name: $status");
    ok(defined $res->{json} && !ref($res->{json}{detail}) && length($res->{json}{detail} // ''),
       "$name: a {detail} JSON body") or diag $res->{content};
}

# ---- health and the error shape ------------------------------------------
my $res = $t->request('GET', '/api/health');
is($res->{status}, 200, 'health through nginx');
is_deeply($res->{json}, { status => 'ok', redis => 'ok' }, 'health says Redis is ok');

detail_ok($t->request('GET', '/api/no-such-thing'), 404, 'unknown path');
$res = $t->request('DELETE', '/api/health');
detail_ok($res, 405, 'wrong method');
like($res->{headers}{allow} // '', qr/GET/, '405 names the allowed methods');
detail_ok($t->request('POST', '/api/auth/login', body => '{"email":', headers => { 'content-type' => 'application/json' }),
          400, 'malformed JSON');
detail_ok($t->request('POST', '/api/auth/login', body => '[1]', headers => { 'content-type' => 'application/json' }),
          400, 'a JSON body that is not an object');
detail_ok($t->request('POST', '/api/auth/login', body => 'email=a', headers => { 'content-type' => 'application/x-www-form-urlencoded' }),
          415, 'a body that is not JSON');
detail_ok($t->request('POST', '/api/auth/login', json => { email => 'x' x 10, pad => 'y' x (1024 * 1024) }),
          413, 'a body over 1 MiB');

# ---- login -----------------------------------------------------------------
$res = $t->request('POST', '/api/auth/login', json => { email => $email, password => $password });
is($res->{status}, 200, 'the first admin logs in');
my $login = $res->{json};
is($login->{token_type}, 'bearer', 'token_type bearer');
ok($login->{access_token} && $login->{refresh_token}, 'an access and a refresh token');
cmp_ok($login->{expires_in}, '>', 0, 'expires_in');
$res = $t->request('POST', '/api/auth/login', json => { email => uc($email), password => $password });
is($res->{status}, 200, 'e-mail addresses are case-insensitive');

detail_ok($t->request('POST', '/api/auth/login', json => { email => $email, password => 'wrong' }),
          401, 'a wrong password');
my $wrong = $t->request('POST', '/api/auth/login', json => { email => $email, password => 'wrong' });
my $unknown = $t->request('POST', '/api/auth/login', json => { email => 'nobody@example.com', password => 'wrong' });
is($unknown->{json}{detail}, $wrong->{json}{detail}, 'an unknown account reads like a wrong password');
detail_ok($t->request('POST', '/api/auth/login', json => { password => 'x' }), 422, 'a missing email');
detail_ok($t->request('POST', '/api/auth/login', json => { email => $email, password => 42 }), 422,
          'a password that is not a string');

# ---- tokens ------------------------------------------------------------------
my $bearer = { Authorization => "Bearer $login->{access_token}" };
$res = $t->request('GET', '/api/auth/me', headers => $bearer);
is($res->{status}, 200, 'me with the access token');
is($res->{json}{email}, $email, 'me is the admin');
is($res->{json}{role}, 'admin', 'with the admin role');
ok(!grep({ /password/ } keys %{ $res->{json} }), 'no password field ever leaves');

my ($h, $p) = split /\./, $login->{access_token};
my $claims = decode_json(MIME::Base64::decode_base64url($p));
is($claims->{role}, 'admin', 'the token carries the role');
ok($claims->{sub} && $claims->{jti} && $claims->{exp} > $claims->{iat}, 'sub, jti, iat < exp');

sub token {
    my ($header, $payload, $key) = @_;
    my $hp = encode_base64url(encode_json($header)) . '.' . encode_base64url(encode_json($payload));
    return "$hp." . (defined $key ? encode_base64url(hmac_sha256($hp, $key)) : '');
}
my %forged = (
    'no token'            => undef,
    'not a JWT'           => 'garbage',
    'alg none'            => token({ alg => 'none', typ => 'JWT' }, $claims),
    'wrong key'           => token({ alg => 'HS256', typ => 'JWT' }, $claims, 'not-the-key'),
    'HS512 header'        => token({ alg => 'HS512', typ => 'JWT' }, $claims, 'not-the-key'),
    'a changed payload'   => "$h." . encode_base64url(encode_json({ %$claims, role => 'admin', sub => 'x' }))
                             . '.' . (split /\./, $login->{access_token})[2],
    'the refresh token'   => $login->{refresh_token},
);
for my $name (sort keys %forged) {
    my %hd = defined $forged{$name} ? (Authorization => "Bearer $forged{$name}") : ();
    $res = $t->request('GET', '/api/auth/me', headers => \%hd);
    detail_ok($res, 401, $name);
    like($res->{headers}{'www-authenticate'} // '', qr/^Bearer/, "$name: WWW-Authenticate: Bearer");
}

# ---- sidecar down: nginx answers in the API's shape --------------------------
$t->stop('sidecar');
detail_ok($t->request('GET', '/api/health'), 502, 'sidecar stopped');
is($t->request('GET', '/api/health')->{json}{detail}, 'management API unavailable',
   '... saying the management API is unavailable');
like($t->log_text('sidecar.log'), qr/stop/i, 'the sidecar logged its stop on SIGTERM');
$t->start('sidecar');
is($t->request('GET', '/api/health')->{status}, 200, 'sidecar started again');
is($t->request('GET', '/api/auth/me', headers => $bearer)->{status}, 200,
   'tokens survive a sidecar restart (the key is kept in the runtime folder)');

# ---- a sidecar that cannot start says why, without waiting out the deadline ----
$t->stop('sidecar');
my $taken = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                  LocalPort => $t->env->{ADSERVE_SIDECAR_PORT}, ReuseAddr => 1)
    or die "cannot hold the sidecar's port: $!";
eval { $t->start('sidecar') };
my $why = $@;
like($why, qr/the sidecar on port \d+ exited while starting/,
     'its port taken: make run reports the sidecar exited, not a timeout');
like($why, qr/cannot listen on 127\.0\.0\.1:\d+/, '... and shows the log line that says why');
close $taken;
$t->start('sidecar');
is($t->request('GET', '/api/health')->{status}, 200, 'the port free again: it starts');

# ---- Redis down ----------------------------------------------------------------
$t->stop('redis');
detail_ok($t->request('GET', '/api/health'), 503, 'Redis stopped: health');
$t->start('redis');
ok($t->wait_until(10, sub { $t->request('GET', '/api/health')->{status} == 200 }),
   'Redis back: health recovers');

done_testing;
