# Users (admin only): list with filters and paging, create, get, patch,
# delete; the shape rules (schema), the advertiser_id rule, unique e-mails,
# the last admin, token revocation, and an audit record per write with no
# secret in it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my ($admin_email, $admin_password) = $t->admin;
my $PW = 'ten-chars!';     # exactly the minimum

sub detail_ok {
    my ($res, $status, $name, $re) = @_;
    is($res->{status}, $status, "$name: $status") or diag $res->{content};
    ok(defined $res->{json} && defined $res->{json}{detail} && !ref $res->{json}{detail},
       "$name: a {detail} string");
    like($res->{json}{detail} // '', $re, "$name: names $re") if $re;
}

sub no_secret {
    my ($v, $name) = @_;
    my $text = encode_json($v);
    unlike($text, qr/password|argon2|session_gen|api_token_ver/, "$name: no password, hash or token counter");
}

sub create { $t->api('POST', '/api/users', json => { @_ }) }
sub login {
    my ($email, $password) = @_;
    return $t->request('POST', '/api/auth/login', json => { email => $email, password => $password });
}

my $me = $t->api('GET', '/api/auth/me')->{json};

# ---- the list, at first --------------------------------------------------------------
my $res = $t->api('GET', '/api/users');
is($res->{status}, 200, 'list');
is($res->{json}{total}, 1, 'one user: the first admin');
is($res->{json}{items}[0]{email}, $admin_email, '... it is');
no_secret($res->{json}, 'list');

# ---- create ----------------------------------------------------------------------------
my $adv_id = $t->advertiser_id;
$res = create(email => 'Op.One@Example.com', password => $PW, role => 'operator');
is($res->{status}, 201, 'an operator, with a 10-character password');
my $op = $res->{json};
is($op->{email}, 'op.one@example.com', 'email lower-cased');
is($op->{role}, 'operator', 'role');
is($op->{advertiser_id}, undef, 'advertiser_id null');
is($op->{created_by}, $me->{id}, 'created_by the admin');
like($op->{id}, qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUID v4 id');
ok($op->{created_at} && $op->{created_at} eq $op->{updated_at}, 'created_at = updated_at');
no_secret($op, 'create');
is(login('op.one@example.com', $PW)->{status}, 200, 'the new user logs in');

$res = create(email => 'adv@example.com', password => $PW, role => 'advertiser',
              advertiser_id => uc $adv_id);
is($res->{status}, 201, 'an advertiser');
my $adv = $res->{json};
is($adv->{advertiser_id}, $adv_id, 'its advertiser_id (lower-cased)');
$res = create(email => 'admin2@example.com', password => $PW, role => 'admin');
is($res->{status}, 201, 'a second admin');
my $admin2 = $res->{json};

detail_ok(create(password => $PW, role => 'operator'), 422, 'no email', qr/email/);
detail_ok(create(email => 'x@example.com', role => 'operator'), 422, 'no password', qr/password/);
detail_ok(create(email => 'x@example.com', password => $PW), 422, 'no role', qr/role/);
detail_ok(create(email => 'x@example.com', password => 'nine-char', role => 'operator'), 422,
          'a 9-character password', qr/password/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'root'), 422, 'an unknown role', qr/role/);
detail_ok(create(email => 'not-an-address', password => $PW, role => 'operator'), 422, 'a bad email', qr/email/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'advertiser'), 422,
          'an advertiser without advertiser_id', qr/advertiser_id/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'advertiser', advertiser_id => 'abc'),
          422, 'advertiser_id not a UUID', qr/advertiser_id/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'advertiser',
                 advertiser_id => Adserve::Test::uuid()),
          422, 'advertiser_id of no advertiser', qr/advertiser_id: no such advertiser/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'operator', advertiser_id => $adv_id),
          422, 'advertiser_id for an operator', qr/advertiser_id/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'operator', nickname => 'x'),
          422, 'an unknown field', qr/nickname/);
detail_ok(create(email => 'x@example.com', password => $PW, role => 'operator', id => Adserve::Test::uuid()),
          422, 'a read-only id', qr/id/);
detail_ok(create(email => 'x@example.com', password => 1234567890, role => 'operator'),
          422, 'a password that is not a string', qr/password/);
detail_ok(create(email => 'OP.ONE@example.com', password => $PW, role => 'operator'), 409,
          'a duplicate email, in another case');
detail_ok($t->request('POST', '/api/users', body => '{"email":', headers => {
    'content-type' => 'application/json', Authorization => 'Bearer ' . $t->token }), 400, 'malformed JSON');

# ---- list: filters and paging ---------------------------------------------------------------
$res = $t->api('GET', '/api/users');
is($res->{json}{total}, 4, 'four users');
is_deeply([map { $_->{email} } @{ $res->{json}{items} }],
          ['admin2@example.com', $admin_email, 'adv@example.com', 'op.one@example.com'],
          'ordered by email');
is_deeply([map { $_->{email} } @{ $t->api('GET', '/api/users?role=admin')->{json}{items} }],
          ['admin2@example.com', $admin_email], '?role=admin');
$res = $t->api('GET', '/api/users?q=ADV');
is_deeply([$res->{json}{total}, $res->{json}{items}[0]{email}], [1, 'adv@example.com'], '?q= is a case-insensitive email substring');
$res = $t->api('GET', '/api/users?limit=2&offset=1');
is($res->{json}{total}, 4, 'total counts everything that matches');
is_deeply([map { $_->{email} } @{ $res->{json}{items} }], [$admin_email, 'adv@example.com'], 'limit and offset');
is(scalar @{ $t->api('GET', '/api/users?offset=10')->{json}{items} }, 0, 'an offset past the end');
detail_ok($t->api('GET', '/api/users?limit=0'), 422, 'limit 0', qr/limit/);
detail_ok($t->api('GET', '/api/users?limit=x'), 422, 'limit not a number', qr/limit/);
detail_ok($t->api('GET', '/api/users?offset=-1'), 422, 'a negative offset', qr/offset/);
detail_ok($t->api('GET', '/api/users?role=root'), 422, 'an unknown role filter', qr/role/);

# ---- get ------------------------------------------------------------------------------------------
$res = $t->api('GET', "/api/users/$op->{id}");
is($res->{status}, 200, 'get');
is_deeply($res->{json}, $op, 'the same as created');
detail_ok($t->api('GET', '/api/users/' . Adserve::Test::uuid()), 404, 'an unknown id');
detail_ok($t->api('GET', '/api/users/not-a-uuid'), 404, 'not a UUID');

# ---- patch ------------------------------------------------------------------------------------------
sub patch { my ($id, %f) = @_; return $t->api('PATCH', "/api/users/$id", json => \%f) }

my $op_login = login('op.one@example.com', $PW)->{json};
my $op_api = $t->api('POST', '/api/settings/api-token', token => $op_login->{access_token})->{json}{api_token};

$res = patch($op->{id});
is($res->{status}, 200, 'an empty patch');
is_deeply($res->{json}, $op, '... changes nothing');
detail_ok(patch($op->{id}, role => 'advertiser'), 422, 'to advertiser without advertiser_id', qr/advertiser_id/);
$res = patch($op->{id}, role => 'advertiser', advertiser_id => $adv_id);
is($res->{status}, 200, 'to advertiser with one');
is($res->{json}{advertiser_id}, $adv_id, '... set');
is($t->api('GET', '/api/auth/me', token => $op_login->{access_token})->{json}{role}, 'advertiser',
   'a role change applies to existing tokens at once');
$res = patch($op->{id}, role => 'operator');
is($res->{status}, 200, 'back to operator');
is($res->{json}{advertiser_id}, undef, '... drops advertiser_id');
detail_ok(patch($op->{id}, advertiser_id => $adv_id), 422, 'advertiser_id on an operator', qr/advertiser_id/);
detail_ok(patch($adv->{id}, advertiser_id => undef), 422, 'an advertiser without advertiser_id', qr/advertiser_id/);
detail_ok(patch($op->{id}, email => 'adv@example.com'), 409, 'an email in use');
detail_ok(patch($op->{id}, password => 'short'), 422, 'a short password', qr/password/);
detail_ok(patch($op->{id}, id => Adserve::Test::uuid()), 422, 'a read-only field', qr/id/);
detail_ok(patch($op->{id}, created_at => '2020-01-01T00:00:00Z'), 422, 'created_at is read-only', qr/created_at/);
detail_ok(patch(Adserve::Test::uuid(), role => 'admin'), 404, 'an unknown user');

$res = patch($op->{id}, email => 'Op.Two@example.com');
is($res->{status}, 200, 'a new email');
is($res->{json}{email}, 'op.two@example.com', '... lower-cased');
ok($res->{json}{updated_at} ge $op->{updated_at}, 'updated_at');
is(login('op.two@example.com', $PW)->{status}, 200, 'logs in with the new email');
is(login('op.one@example.com', $PW)->{status}, 401, 'not with the old one');
is($t->api('POST', '/api/users', json => { email => 'op.one@example.com', password => $PW, role => 'operator' })->{status},
   201, 'the old email is free again');
is($t->api('GET', '/api/auth/me', token => $op_login->{access_token})->{status}, 200,
   'an email change keeps the tokens');

$res = patch($op->{id}, password => 'a-new-password');
is($res->{status}, 200, 'a new password');
no_secret($res->{json}, 'patch');
is(login('op.two@example.com', 'a-new-password')->{status}, 200, 'it logs in');
is(login('op.two@example.com', $PW)->{status}, 401, 'the old one does not');
is($t->api('GET', '/api/auth/me', token => $op_login->{access_token})->{status}, 401,
   'a password change revokes the access tokens ...');
is($t->request('POST', '/api/auth/refresh', json => { refresh_token => $op_login->{refresh_token} })->{status},
   401, '... the refresh tokens ...');
is($t->api('GET', '/api/auth/me', token => $op_api)->{status}, 401, '... and the API token');

# ---- the last admin ----------------------------------------------------------------------------
my $a2 = login('admin2@example.com', $PW)->{json}{access_token};
is($t->api('PATCH', "/api/users/$me->{id}", json => { role => 'operator' }, token => $a2)->{status}, 200,
   'with two admins, one can be demoted');
detail_ok($t->api('PATCH', "/api/users/$admin2->{id}", json => { role => 'operator' }, token => $a2), 409,
          'the last admin cannot demote themselves', qr/last admin/);
detail_ok($t->api('DELETE', "/api/users/$admin2->{id}", token => $a2), 409,
          'nor delete themselves', qr/last admin/);
is($t->api('PATCH', "/api/users/$me->{id}", json => { role => 'admin' }, token => $a2)->{status}, 200,
   'the first admin is admin again');
is($t->api('DELETE', "/api/users/$admin2->{id}")->{status}, 204, 'now the second can go');
detail_ok($t->api('DELETE', "/api/users/$me->{id}"), 409, 'but not the last one', qr/last admin/);
is($t->api('GET', '/api/users?role=admin')->{json}{total}, 1, 'one admin left');

# ---- delete ----------------------------------------------------------------------------------------
my $adv_login = login('adv@example.com', $PW)->{json};
$res = $t->api('DELETE', "/api/users/$adv->{id}");
is($res->{status}, 204, 'delete');
is($res->{content} // '', '', 'no body');
detail_ok($t->api('GET', '/api/auth/me', token => $adv_login->{access_token}), 401, 'their access token, at once');
is($t->request('POST', '/api/auth/refresh', json => { refresh_token => $adv_login->{refresh_token} })->{status},
   401, 'their refresh token');
is(login('adv@example.com', $PW)->{status}, 401, 'their login');
detail_ok($t->api('GET', "/api/users/$adv->{id}"), 404, 'gone');
detail_ok($t->api('DELETE', "/api/users/$adv->{id}"), 404, 'deleting twice');
is($t->redis('HGET', 'adserve:user_by_email', 'adv@example.com'), '', 'the email index entry is gone');
is($t->redis('EXISTS', "adserve:user:$adv->{id}") + 0, 0, 'the record is gone');

# ---- audit ------------------------------------------------------------------------------------------
my @records;
{
    my @lines = split /\n/, $t->redis('XRANGE', 'adserve:audit', '-', '+');
    my $rec;
    # id, then field / value pairs (values are one line: JSON is printed compact)
    for (my $i = 0; $i < @lines; $i++) {
        if ($lines[$i] =~ /^\d+-\d+$/) { push @records, $rec = {}; next }
        $rec->{ $lines[$i] } = $lines[$i + 1];
        $i++;
    }
}
my @users = grep { ($_->{resource} // '') eq 'user' } @records;
my %actions;
$actions{ $_->{action} }++ for @users;
ok($actions{create} >= 5 && $actions{update} >= 5 && $actions{delete} == 2 && $actions{api_token} == 1,
   'audit: create, update, delete, api_token records of resource user') or diag explain \%actions;
my ($del) = grep { $_->{action} eq 'delete' && $_->{id} eq $adv->{id} } @users;
is(decode_json($del->{before})->{email}, 'adv@example.com', 'a delete keeps the before image');
is($del->{after}, 'null', '... and no after');
is($del->{actor}, $me->{id}, '... and names the actor');
my ($boot) = grep { $_->{action} eq 'create' && $_->{actor} eq 'system' } @users;
ok($boot, 'the first admin\'s creation is audited as the system');
my $all = $t->redis('XRANGE', 'adserve:audit', '-', '+');
unlike($all, qr/argon2|password|\Q$PW\E|a-new-password/, 'no password or hash anywhere in the audit stream');

done_testing;
