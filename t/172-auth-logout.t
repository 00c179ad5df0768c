# Sign-out: POST /api/auth/logout {refresh_token} ends that login
# server-side. The token, and every token rotated from the same login,
# stop refreshing; other logins of the same user go on; an unknown or
# used-up token answers the same 204 (RFC 7009's habit); the body is
# validated by the refresh request's schema; the OpenAPI document lists it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use Adserve::Test;

my $t = Adserve::Test->new;
my ($email, $password) = $t->admin;

sub login   { $t->request('POST', '/api/auth/login', json => { email => $email, password => $password })->{json} }
sub refresh { $t->request('POST', '/api/auth/refresh', json => { refresh_token => $_[0] }) }
sub logout  { $t->request('POST', '/api/auth/logout', json => { refresh_token => $_[0] }) }
sub me      { $t->request('GET', '/api/auth/me', headers => { Authorization => "Bearer $_[0]" })->{status} }

my $first = login();
my $other = login();                                 # a second login: its own family
my $rotated = refresh($first->{refresh_token})->{json};
ok($rotated && $rotated->{refresh_token}, 'a login, its refresh token rotated once');

my $res = logout($rotated->{refresh_token});
is($res->{status}, 204, 'logout with the current refresh token: 204') or diag $res->{content};
is($res->{content} // '', '', '... with no body');
is(refresh($rotated->{refresh_token})->{status}, 401, 'the signed-out refresh token no longer refreshes');
is($t->redis('EXISTS', 'adserve:refresh_token:' . sha256_hex($rotated->{refresh_token})), 0,
   '... its record is gone from Redis');
is(refresh($other->{refresh_token})->{status}, 200, 'another login of the same user is unaffected');
is(me($rotated->{access_token}), 200,
   'the access token of the ended login works until it expires (a signed claim; the client forgets it)');
like($t->log_text('sidecar.log'), qr/signed out: that login's refresh tokens are revoked/, 'the sign-out is logged');
unlike($t->log_text('sidecar.log'), qr/\Q$rotated->{refresh_token}\E/, '... the token is not');

# a used (rotated-away) token of a login signs that whole login out too
my $second = login();
my $next = refresh($second->{refresh_token})->{json};
is(logout($second->{refresh_token})->{status}, 204, 'logout with an already-rotated token of a login: 204');
is(refresh($next->{refresh_token})->{status}, 401, '... and the login\'s current token is revoked with it');

is(logout($rotated->{refresh_token})->{status}, 204, 'signing out twice: 204 again');
is(logout('f' x 64)->{status}, 204, 'an unknown token: 204, telling nothing');
is(logout('short')->{status}, 204, 'a token of the wrong length: 204');

$res = $t->request('POST', '/api/auth/logout', json => {});
is($res->{status}, 422, 'no refresh_token: 422');
like($res->{json}{detail}, qr/refresh_token/, '... naming the field');
is($t->request('POST', '/api/auth/logout', json => { refresh_token => 5 })->{status}, 422, 'a number: 422');
is($t->request('POST', '/api/auth/logout', json => { refresh_token => 'x', all => 1 })->{status}, 422,
   'an unknown member: 422');
is($t->request('POST', '/api/auth/logout', body => '{', headers => { 'content-type' => 'application/json' })->{status},
   400, 'malformed JSON: 400');

my $doc = $t->request('GET', '/api/openapi.json')->{json};
my $op = $doc->{paths}{'/api/auth/logout'}{post};
ok($op, 'the OpenAPI document has POST /api/auth/logout');
ok($op && $op->{responses}{204}, '... answering 204');
ok($op && $op->{requestBody}, '... with a request body');
is_deeply($op && $op->{security}, [], '... needing no bearer token (the refresh token is the credential)');

done_testing;
