# Authentication: login (schema-validated), refresh-token rotation and
# reuse detection, access and API tokens and what makes them 401, and the
# failed-login limits per account and per client.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(encode_base64url decode_base64url);
use Digest::SHA qw(hmac_sha256 hmac_sha512 sha256_hex);
use HTTP::Tiny;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my ($admin_email, $admin_password) = $t->admin;

sub detail_ok {
    my ($res, $status, $name) = @_;
    is($res->{status}, $status, "$name: $status") or diag $res->{content};
    ok(defined $res->{json} && defined $res->{json}{detail} && !ref $res->{json}{detail},
       "$name: a {detail} string");
}

sub login_res {
    my ($email, $password, %o) = @_;
    return $t->request('POST', '/api/auth/login', json => { email => $email, password => $password }, %o);
}

sub claims { decode_json(decode_base64url((split /\./, $_[0])[1])) }

sub me { $t->request('GET', '/api/auth/me', headers => { Authorization => "Bearer $_[0]" }) }

sub refresh { $t->request('POST', '/api/auth/refresh', json => { refresh_token => $_[0] }) }

# the sidecar directly, as nginx would call it (with the proxy secret of the
# runtime folder), with a chosen client address; or as any local process
# could, without the secret
my $direct = HTTP::Tiny->new(timeout => 20);
my $proxy_token = do { open my $fh, '<', $t->var . '/secrets/proxy_token' or die; local $/; <$fh> };
sub direct_login {
    my ($ip, $email, $password, %o) = @_;
    my %headers = ('content-type' => 'application/json', 'x-real-ip' => $ip);
    $headers{'x-adserve-proxy'} = $proxy_token unless $o{forged};
    my $res = $direct->request('POST',
        "http://127.0.0.1:@{[ $t->env->{ADSERVE_SIDECAR_PORT} ]}/api/auth/login",
        { headers => \%headers, content => encode_json({ email => $email, password => $password }) });
    $res->{json} = eval { decode_json($res->{content}) };
    return $res;
}

sub make_user {
    my ($email, $role, %extra) = @_;
    my $res = $t->api('POST', '/api/users', json => { email => $email, password => 'a-good-password',
                                                      role => $role, %extra });
    is($res->{status}, 201, "created $role $email") or diag $res->{content};
    return $res->{json};
}

# ---- login: the body is validated by its schema ------------------------------------
detail_ok($t->request('POST', '/api/auth/login', json => { password => 'x' }), 422, 'login without email');
like($t->request('POST', '/api/auth/login', json => { password => 'x' })->{json}{detail}, qr/email/,
     '... naming the field');
detail_ok(login_res($admin_email, undef), 422, 'password null');
detail_ok($t->request('POST', '/api/auth/login',
                      json => { email => $admin_email, password => $admin_password, otp => 1 }),
          422, 'an unknown field');
detail_ok(login_res([], 'x'), 422, 'email not a string');
detail_ok(login_res('no-such@example.com', 'whatever-password'), 401, 'an unknown account');
detail_ok(login_res('not an address', 'whatever-password'), 401, 'an impossible address is just unknown');

my $res = login_res($admin_email, $admin_password);
is($res->{status}, 200, 'admin logs in');
my $pair = $res->{json};
is_deeply([sort keys %$pair], [qw(access_token expires_in refresh_token token_type)], 'the token pair');
my $c = claims($pair->{access_token});
is($c->{typ}, 'access', 'typ access');
is($c->{role}, 'admin', 'role claim');
ok(!exists $c->{advertiser_id}, 'no advertiser_id for an admin');
ok($c->{sub} && $c->{jti} && $c->{iat} && $c->{exp} == $c->{iat} + $pair->{expires_in},
   'sub, jti, iat, exp = iat + expires_in');
my $admin_id = $c->{sub};

# ---- refresh: single use, rotation, reuse revokes the family -------------------------
like($pair->{refresh_token}, qr/^[0-9a-f]{64}$/, 'refresh token: 32 random bytes, hex');
my $stored = $t->redis('KEYS', 'adserve:refresh_token:*');
ok($stored !~ /\Q$pair->{refresh_token}\E/, 'the refresh token is not stored in clear');
like($stored, qr/\Q@{[sha256_hex($pair->{refresh_token})]}\E/, 'only its SHA-256');
my $ttl = $t->redis('TTL', 'adserve:refresh_token:' . sha256_hex($pair->{refresh_token}));
ok($ttl > 29 * 86400 && $ttl <= 30 * 86400, 'refresh tokens live 30 days');

$res = refresh($pair->{refresh_token});
is($res->{status}, 200, 'refresh');
my $pair2 = $res->{json};
is_deeply([sort keys %$pair2], [sort keys %$pair], 'the same shape as login');
isnt($pair2->{refresh_token}, $pair->{refresh_token}, 'a new refresh token');
is(me($pair2->{access_token})->{status}, 200, 'the new access token works');

my $other = login_res($admin_email, $admin_password)->{json};      # another login, another family
detail_ok(refresh($pair->{refresh_token}), 401, 'a used refresh token');
detail_ok(refresh($pair2->{refresh_token}), 401, 'reuse revoked its whole family: the rotated one too');
is(refresh($other->{refresh_token})->{status}, 200, 'another login is unaffected');
like($t->log_text('sidecar.log'), qr/refresh token reused for user \Q$admin_id\E/, 'reuse is logged');
unlike($t->log_text('sidecar.log'), qr/\Q$pair->{refresh_token}\E/, 'the token is not');

detail_ok(refresh('f' x 64), 401, 'an unknown refresh token');
detail_ok(refresh($pair->{access_token}), 401, 'an access token as refresh token');
detail_ok($t->request('POST', '/api/auth/refresh', json => {}), 422, 'refresh without a token');
detail_ok($t->request('POST', '/api/auth/refresh', json => { refresh_token => 5 }), 422, 'a number');

# ---- me ----------------------------------------------------------------------------------
$res = me($other->{access_token});
is($res->{status}, 200, 'me');
is($res->{json}{id}, $admin_id, 'me is the admin');
ok(!grep(/password/, keys %{ $res->{json} }), 'no password field');

# ---- users with other roles ----------------------------------------------------------------
my $adv_id = $t->advertiser_id;
my $op = make_user('operator@example.com', 'operator');
my $adv = make_user('advertiser@example.com', 'advertiser', advertiser_id => $adv_id);
my $adv_login = login_res('advertiser@example.com', 'a-good-password')->{json};
$c = claims($adv_login->{access_token});
is($c->{role}, 'advertiser', 'advertiser token: role');
is($c->{advertiser_id}, $adv_id, 'advertiser token: advertiser_id');
is(me($adv_login->{access_token})->{json}{advertiser_id}, $adv_id, 'me shows the advertiser_id');

# ---- API tokens ---------------------------------------------------------------------------------
$res = $t->api('POST', '/api/settings/api-token');
is($res->{status}, 200, 'an API token');
is_deeply([sort keys %{ $res->{json} }], [qw(api_token expires_at token_type)], '{api_token, token_type, expires_at}');
my $api1 = $res->{json}{api_token};
$c = claims($api1);
is($c->{typ}, 'api', 'typ api');
ok($c->{ver} >= 1, 'a version claim');
ok($c->{exp} - $c->{iat} >= 364 * 86400, 'valid for a year');
is(me($api1)->{status}, 200, 'the API token authenticates like an access token');
is($t->api('GET', '/api/users', token => $api1)->{status}, 200, '... with the role of its user');
detail_ok(refresh($api1), 401, 'an API token is no refresh token');

$res = $t->api('POST', '/api/settings/api-token', token => $api1);
is($res->{status}, 200, 'regenerated (with the API token itself)');
my $api2 = $res->{json}{api_token};
$res = me($api1);
detail_ok($res, 401, 'the earlier API token');
is($res->{json}{detail}, 'token revoked', '... is revoked');
is(me($api2)->{status}, 200, 'the new one works');
is(me($other->{access_token})->{status}, 200, 'access tokens are not affected');

$res = $t->api('POST', '/api/settings/api-token', token => $adv_login->{access_token});
is($res->{status}, 200, 'an advertiser gets its own API token');
is(claims($res->{json}{api_token})->{sub}, $adv->{id}, 'for itself');
is(me($api2)->{status}, 200, "another user's regeneration leaves mine alone");
detail_ok($t->request('POST', '/api/settings/api-token'), 401, 'no token, no API token');

# ---- forged and stale JWTs --------------------------------------------------------------------------
my $key = do { local (@ARGV, $/) = ($t->var . '/secrets/jwt.key'); my $k = <>; $k =~ s/\s+\z//; $k };
sub jwt {
    my ($header, $payload, $sign) = @_;
    my $hp = encode_base64url(encode_json($header)) . '.' . encode_base64url(encode_json($payload));
    return "$hp." . encode_base64url($sign ? $sign->($hp) : hmac_sha256($hp, $key));
}
my $now = time;
my %base = (sub => $admin_id, role => 'admin', iat => $now, exp => $now + 600,
            jti => 'x' x 32, typ => 'access', sgen => 0);
my $hs = { alg => 'HS256', typ => 'JWT' };
is(me(jwt($hs, \%base))->{status}, 200, 'a token made with the real key is accepted (the forgeries below differ only in one thing)');
my %bad = (
    'alg none'          => encode_base64url(encode_json({ alg => 'none', typ => 'JWT' })) . '.'
                           . encode_base64url(encode_json(\%base)) . '.',
    'HS512 with the real key' => jwt({ alg => 'HS512', typ => 'JWT' }, \%base, sub { hmac_sha512($_[0], $key) }),
    'a bad signature'   => jwt($hs, \%base, sub { hmac_sha256($_[0], 'not-the-key') }),
    'expired'           => jwt($hs, { %base, iat => $now - 1000, exp => $now - 10 }),
    'no typ'            => jwt($hs, { map { $_ => $base{$_} } grep { $_ ne 'typ' } keys %base }),
    'typ refresh'       => jwt($hs, { %base, typ => 'refresh' }),
    'no sgen'           => jwt($hs, { map { $_ => $base{$_} } grep { $_ ne 'sgen' } keys %base }),
    'an old sgen'       => jwt($hs, { %base, sgen => 7 }),
    'api version 0'     => jwt($hs, { %base, typ => 'api', ver => 0 }),
    'an unknown user'   => jwt($hs, { %base, sub => Adserve::Test::uuid() }),
    'no exp'            => jwt($hs, { map { $_ => $base{$_} } grep { $_ ne 'exp' } keys %base }),
);
for my $name (sort keys %bad) {
    $res = me($bad{$name});
    detail_ok($res, 401, $name);
    like($res->{headers}{'www-authenticate'} // '', qr/^Bearer/, "$name: WWW-Authenticate");
}
is(me(jwt($hs, { %base, iat => $now - 1000, exp => $now - 10 }))->{json}{detail}, 'token expired',
   'an expired token says so');

# ---- a deleted user's tokens ----------------------------------------------------------------------------
my $gone = make_user('gone@example.com', 'operator');
my $gone_login = login_res('gone@example.com', 'a-good-password')->{json};
my $gone_api = $t->api('POST', '/api/settings/api-token', token => $gone_login->{access_token})->{json}{api_token};
is($t->api('DELETE', "/api/users/$gone->{id}")->{status}, 204, 'user deleted');
detail_ok(me($gone_login->{access_token}), 401, "a deleted user's access token");
detail_ok(me($gone_api), 401, "a deleted user's API token");
detail_ok(refresh($gone_login->{refresh_token}), 401, "a deleted user's refresh token");

# ---- failed logins: per account and client ------------------------------------------------------------
# from one client address of its own, far from its limit (18 failures here)
sub acct_login { direct_login('198.51.100.1', @_) }
my $victim = make_user('victim@example.com', 'operator');
for my $i (1 .. 5) {
    detail_ok(acct_login('victim@example.com', "wrong-$i"), 401, "failure $i of 5");
}
$res = acct_login('victim@example.com', 'a-good-password');
detail_ok($res, 429, 'the 6th attempt from that client, even with the right password');
my $retry = $res->{headers}{'retry-after'} // 0;
ok($retry > 0 && $retry <= 900, "Retry-After within 15 minutes ($retry)");
detail_ok(acct_login('VICTIM@example.com', 'a-good-password'), 429, 'the account is the address, whatever its case');
my $pair_key = 'adserve:ratelimit:login_pair:' . sha256_hex("victim\@example.com\n198.51.100.1");
is($t->redis('GET', $pair_key), 5, 'a Redis counter per account and client, keyed by their hash');
ok($t->redis('TTL', $pair_key) > 0, '... with a TTL');
is(direct_login('198.51.100.2', 'victim@example.com', 'a-good-password')->{status}, 200,
   'the owner, from another client, signs in: failures shut out where they come from, not the account');
is(acct_login('operator@example.com', 'a-good-password')->{status}, 200, 'other accounts are not affected');
detail_ok(acct_login('nobody@example.com', 'x'), 401, 'unknown accounts are counted alike ...') for 1 .. 5;
detail_ok(acct_login('nobody@example.com', 'x'), 429, '... and locked alike (no enumeration)');
$t->redis('DEL', $pair_key);
is(acct_login('victim@example.com', 'a-good-password')->{status}, 200, 'after the window, the password works');

# a success clears the pair's failures
detail_ok(acct_login('victim@example.com', 'wrong'), 401, 'failure') for 1 .. 4;
is(acct_login('victim@example.com', 'a-good-password')->{status}, 200, 'success after 4 failures');
detail_ok(acct_login('victim@example.com', 'wrong'), 401, 'failure after the reset of the counter') for 1 .. 4;
is(acct_login('victim@example.com', 'a-good-password')->{status}, 200, 'still not locked: the success cleared the count');

# two real source addresses on loopback, through nginx: 127.0.0.2 guesses, 127.0.0.3 is the owner
sub from {
    my ($source, $email, $password) = @_;
    my $http = HTTP::Tiny->new(timeout => 20, local_address => $source);
    return $t->request('POST', '/api/auth/login', via => $http, json => { email => $email, password => $password });
}
my $owner = make_user('owner@example.com', 'operator');
detail_ok(from('127.0.0.2', 'owner@example.com', "guess-$_"), 401, "127.0.0.2: wrong password $_") for 1 .. 5;
detail_ok(from('127.0.0.2', 'owner@example.com', 'a-good-password'), 429, '127.0.0.2 is shut out of the account');
is(from('127.0.0.3', 'owner@example.com', 'a-good-password')->{status}, 200, '127.0.0.3 signs in with the password');
is(from('127.0.0.2', 'operator@example.com', 'a-good-password')->{status}, 200,
   '127.0.0.2 may still sign in to another account (4 of its 20 failures left)');

# an account under attack from many places (50 failures in the window): a client that failed on it even
# once waits, one that never did (its owner) still signs in
my $target = make_user('target@example.com', 'operator');
for my $n (1 .. 10) {
    direct_login("198.51.100.$_", 'target@example.com', 'x') for map { 100 + $n } 1 .. 5;
}
is($t->redis('GET', 'adserve:ratelimit:login_account:' . sha256_hex('target@example.com')), 50,
   '50 failures on one account, 5 from each of 10 clients');
detail_ok(direct_login('198.51.100.120', 'target@example.com', 'x'), 401, 'under attack: a new client may try once');
detail_ok(direct_login('198.51.100.120', 'target@example.com', 'a-good-password'), 429,
          '... and then waits, even with the right password');
is(direct_login('198.51.100.121', 'target@example.com', 'a-good-password')->{status}, 200,
   '... while the owner, who never failed, signs in');

# an IPv6 client counts as its /64 (one subscriber's): 20 failures from 20 addresses of one /64 shut
# out the 21st address of it, and not another /64
for my $i (1 .. 20) {
    direct_login(sprintf('2001:db8:aa:bb::%x', $i), "v6-$i\@example.com", 'x');
}
detail_ok(direct_login('2001:db8:aa:bb:ffff::1', $admin_email, $admin_password), 429,
          'IPv6: the 21st address of a /64 after 20 failures from it');
is(direct_login('2001:db8:aa:cc::1', $admin_email, $admin_password)->{status}, 200, '... another /64 signs in');

# sign-ins per client, failed or not: 60 a minute
my $many = 0;
$many++ while $many < 61 && direct_login('198.51.100.200', 'victim@example.com', 'a-good-password')->{status} == 200;
is($many, 60, '60 sign-ins a minute from one client, even right ones');
$res = direct_login('198.51.100.200', 'victim@example.com', 'a-good-password');
detail_ok($res, 429, '... the 61st waits');
ok(($res->{headers}{'retry-after'} // 0) > 0 && $res->{headers}{'retry-after'} <= 60, '... at most a minute');

# sign-ins never take every HTTP thread: at most two hash a password at once, and a sign-in that
# finds both busy is turned away at once (503, Retry-After: 1) instead of holding a thread
my @kids;
for my $k (1 .. 16) {
    pipe(my $r, my $w) or die;
    my $pid = fork // die;
    if (!$pid) {
        close $r;
        my $res = direct_login("198.51.100.$k", 'victim@example.com', 'a-good-password');
        print {$w} "$res->{status} " . ($res->{headers}{'retry-after'} // '-') . "\n";
        exit 0;
    }
    close $w;
    push @kids, [ $pid, $r ];
}
my $health = $t->request('GET', '/api/health');
my @answers;
for (@kids) { my ($pid, $r) = @$_; chomp(my $line = <$r> // 'none'); waitpid $pid, 0; push @answers, $line }
is($health->{status}, 200, '16 sign-ins at once: /api/health answers meanwhile');
is_deeply([ grep { $_ ne '200 -' && $_ ne '503 1' } @answers ], [], '... each sign-in 200, or 503 with Retry-After: 1');
my $busy = grep { $_ eq '503 1' } @answers;
ok($busy > 0, "... some turned away ($busy of 16): never more than two hash at once");

# ---- failed logins: per client (X-Real-IP, set by nginx) -------------------------------------------------------
for my $i (1 .. 20) {
    $res = direct_login('203.0.113.9', "stranger$i\@example.com", 'x');
    is($res->{status}, 401, "client failure $i of 20");
}
$res = direct_login('203.0.113.9', $admin_email, $admin_password);
is($res->{status}, 429, 'the client is locked out after 20 failures, even for a right password');
ok(($res->{headers}{'retry-after'} // 0) > 0, '... with Retry-After');
is(direct_login('203.0.113.10', $admin_email, $admin_password)->{status}, 200, 'another client is not');
is(login_res($admin_email, $admin_password)->{status}, 200, 'nor is nginx\'s 127.0.0.1');
$res = direct_login('not-an-address', 'x@example.com', 'x');
is($res->{status}, 401, 'a malformed X-Real-IP falls back to the peer address');

# a local process calling the sidecar's port itself cannot pick its address:
# without nginx's secret, X-Real-IP is ignored and the peer address counts
$t->redis('DEL', 'adserve:ratelimit:login_client:' . sha256_hex('127.0.0.1'));
for my $i (1 .. 20) {
    $res = direct_login("192.0.2.$i", "sprayed$i\@example.com", 'x', forged => 1);
    is($res->{status}, 401, "forged X-Real-IP 192.0.2.$i: failure $i of 20");
}
is(direct_login('192.0.2.99', 'sprayed99@example.com', 'x', forged => 1)->{status}, 429,
   'a new X-Real-IP per attempt does not escape the client limit without the proxy secret');
is($t->redis('GET', 'adserve:ratelimit:login_client:' . sha256_hex('127.0.0.1')), 20,
   '... every attempt counted against the peer address');
is(direct_login('203.0.113.77', $admin_email, $admin_password)->{status}, 200,
   'while nginx, which shows the secret, still reports its clients');

done_testing;
