# forgot-password / reset-password end to end: a real SMTP sink (aiosmtpd)
# receives the mail, the link in it resets the password; the answer never
# tells whether the account exists; limits per address and per client; a
# dead mail server neither delays the answer nor loses the mail (outbox);
# without ADSERVE_SMTP_URL the mail goes to the Redis outbox.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(time sleep);
use Adserve::Test;
use Adserve::Smtp;

my $smtp = Adserve::Smtp->new;
my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_SMTP_URL} = $smtp->url;
$t->env->{ADSERVE_SMTP_FROM} = 'noreply@adserve.test';
$t->env->{ADSERVE_PUBLIC_URL} = 'https://console.example/';
$t->env->{ADSERVE_RESET_TTL} = 600;
$t->start('sidecar', 'nginx');

my $SENT = 'if the account exists, a reset link has been sent';

# forgot-password from a client address of its own (the sidecar directly, as
# nginx calls it), so that the per-client limit only bites where tested
my $direct = HTTP::Tiny->new(timeout => 20);
# what nginx shows the sidecar so that X-Real-IP is believed (scripts/run)
sub proxy_token { open my $fh, '<', $t->var . '/secrets/proxy_token' or die; local $/; <$fh> }
my $next_ip = 1;
sub forgot {
    my ($body, $ip, $type) = @_;
    $ip //= '198.51.100.' . $next_ip++;
    my $t0 = time;
    my $res = $direct->request('POST',
        'http://127.0.0.1:' . $t->env->{ADSERVE_SIDECAR_PORT} . '/api/auth/forgot-password',
        { headers => { 'content-type' => $type // 'application/json', 'x-real-ip' => $ip,
                       'x-adserve-proxy' => proxy_token() },
          content => ref $body ? encode_json($body) : $body });
    $res->{json} = eval { decode_json($res->{content}) };
    $res->{seconds} = time - $t0;
    return $res;
}

sub reset_pw {
    my ($token, $password) = @_;
    return $t->request('POST', '/api/auth/reset-password', json => { token => $token, password => $password });
}

sub login {
    my ($email, $password) = @_;
    return $t->request('POST', '/api/auth/login', json => { email => $email, password => $password });
}

sub make_user {
    my ($email) = @_;
    my $res = $t->api('POST', '/api/users', json => { email => $email, password => 'first-password-1',
                                                      role => 'operator' });
    is($res->{status}, 201, "user $email") or diag $res->{content};
    return $res->{json};
}

sub mails_to { my ($to, $secs) = @_; return $smtp->wait_for(sub { $_->{to} eq $to }, $secs) }

sub token_of {
    my ($text) = @_;
    my ($token) = $text =~ m{https://console\.example/console/\#/reset-password\?token=([A-Za-z0-9_-]+)};
    return $token;
}

# ---- validation: the spec's 422 list, on this endpoint only ---------------------------
sub spec_422 {
    my ($res, $loc, $type, $name) = @_;
    is($res->{status}, 422, "$name: 422");
    my $d = $res->{json}{detail};
    ok(ref $d eq 'ARRAY' && @$d == 1, "$name: detail is a list") or return diag $res->{content};
    is_deeply($d->[0]{loc}, $loc, "$name: loc");
    ok(defined $d->[0]{msg} && length $d->[0]{msg}, "$name: msg");
    is($d->[0]{type}, $type, "$name: type $type");
}
spec_422(forgot({}), ['body', 'email'], 'missing', 'no email');
spec_422(forgot({ email => 'not-an-address' }), ['body', 'email'], 'value_error', 'a malformed email');
spec_422(forgot({ email => 42 }), ['body', 'email'], 'value_error', 'a number');
spec_422(forgot({ email => 'a@example.com', extra => 1 }), ['body', 'extra'], 'value_error', 'an unknown field');
# the spec's only failure of this endpoint is that 422 list: a body it cannot take too
spec_422(forgot('{"email":'), ['body'], 'value_error', 'malformed JSON');
spec_422(forgot('{"email":"a@example.com"}', undef, 'text/plain'), ['body'], 'value_error', 'a text/plain body');
spec_422(forgot('[]'), ['body'], 'value_error', 'a body that is not an object');
spec_422(forgot({ email => "a\x00\@example.com" }), ['body'], 'value_error', 'a NUL in the email');
my $r = $t->request('POST', '/api/auth/reset-password', json => { token => 'x' });
is($r->{status}, 422, 'reset-password without password: 422 ...');
ok(!ref $r->{json}{detail}, '... with the usual {detail} string');

# ---- the flow, through nginx --------------------------------------------------------------
my $user = make_user('Reset.Me@example.com');
my $email = 'reset.me@example.com';
my $old = login($email, 'first-password-1')->{json};
my $api = $t->api('POST', '/api/settings/api-token', token => $old->{access_token})->{json}{api_token};

$r = $t->request('POST', '/api/auth/forgot-password', json => { email => 'Reset.Me@Example.com' });
is($r->{status}, 200, 'forgot-password: 200');
is_deeply($r->{json}, { detail => $SENT }, "{detail: \"$SENT\"}");
my $unknown = $t->request('POST', '/api/auth/forgot-password', json => { email => 'nobody@example.com' });
is($unknown->{status}, 200, 'an unknown address: 200 too');
is($unknown->{content}, $r->{content}, '... byte for byte the same answer');

my ($mail) = mails_to($email);
ok($mail, 'the mail arrived at the SMTP sink') or BAIL_OUT('no mail: ' . $smtp->log);
is($mail->{from}, 'noreply@adserve.test', 'from ADSERVE_SMTP_FROM');
like($mail->{headers}{subject}, qr/reset/i, 'subject');
like($mail->{headers}{date} // '', qr/^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000$/, 'a Date header');
ok($mail->{headers}{'message-id'}, 'a Message-ID');
my $token = token_of($mail->{body});
ok($token, 'the body links to the console\'s reset page: ADSERVE_PUBLIC_URL/console/#/reset-password?token=...') or diag $mail->{body};
like($token // '', qr/^[A-Za-z0-9_-]{43}$/, 'the token: 32 random bytes, base64url');
like($mail->{body}, qr/10 minutes/, 'the mail says when it expires');

my $key = 'adserve:reset:' . sha256_hex($token);
my $ttl = $t->redis('TTL', $key);
ok($ttl > 590 && $ttl <= 600, "stored as its SHA-256 only, for ADSERVE_RESET_TTL ($ttl s)");
unlike($t->redis('KEYS', 'adserve:reset:*'), qr/\Q$token\E/, 'the token itself is not in Redis');
unlike($t->log_text('sidecar.log'), qr/\Q$token\E|reset-password\?token/, 'nor in the log');
like($t->log_text('sidecar.log'), qr/password reset mail for user \Q$user->{id}\E sent/, 'the log says it was sent');
ok(!mails_to('nobody@example.com', 0.5), 'no mail for an unknown address');

$r = reset_pw($token, 'short');
is($r->{status}, 422, 'a password under 10 characters: 422');
like($r->{json}{detail}, qr/password/, '... naming the field');
is(reset_pw($token, 'second-password-2')->{status}, 200, 'reset with the mailed token');
is(login($email, 'second-password-2')->{status}, 200, 'the new password logs in');
is(login($email, 'first-password-1')->{status}, 401, 'the old one does not');
$r = reset_pw($token, 'third-password-3');
is($r->{status}, 400, 'the token cannot be used twice');
is($r->{json}{detail}, 'invalid or expired reset token', '... {detail}');
is($t->request('POST', '/api/auth/refresh', json => { refresh_token => $old->{refresh_token} })->{status}, 401,
   'the reset revoked the refresh tokens');
is($t->api('GET', '/api/auth/me', token => $api)->{status}, 401, '... and the API token');
is($t->api('GET', '/api/auth/me', token => $old->{access_token})->{status}, 401, '... and the access tokens');
is(reset_pw('A' x 43, 'third-password-3')->{status}, 400, 'an unknown token: 400');
is(reset_pw('short', 'third-password-3')->{status}, 400, 'a malformed token: 400');

my @audit = grep { /reset_password/ } split /\n/, $t->redis('XRANGE', 'adserve:audit', '-', '+');
ok(@audit, 'the reset is in the audit stream');
unlike($t->redis('XRANGE', 'adserve:audit', '-', '+'), qr/argon2|second-password/, 'without a password or hash');

# two outstanding links: using one kills the other (the password changed)
forgot({ email => $email }) for 1 .. 2;
my @two;
$t->wait_until(10, sub { (@two = mails_to($email, 0)) >= 3 });
my ($t2, $t3) = map { token_of($_->{body}) } @two[1, 2];
ok($t2 && $t3 && $t2 ne $t3, 'two more links');
is(reset_pw($t3, 'fourth-password-4')->{status}, 200, 'the newer one resets');
is(reset_pw($t2, 'fifth-password-5')->{status}, 400, 'the older one is dead now');

# expiry
forgot({ email => $email });      # the 4th for this address within the hour: not sent
my $victim = make_user('expiry@example.com');
forgot({ email => 'expiry@example.com' });
my ($m) = mails_to('expiry@example.com');
my $tx = token_of($m->{body});
$t->redis('PEXPIRE', 'adserve:reset:' . sha256_hex($tx), 1);
sleep 0.05;
is(reset_pw($tx, 'another-password')->{status}, 400, 'an expired token: 400');
is(scalar(mails_to($email, 0)), 3, 'the 4th request for one address within the hour sent nothing ...');
is($t->redis('GET', 'adserve:stats:reset_mails_suppressed'), 1, '... and was counted');
like($t->log_text('sidecar.log'), qr/password reset mail suppressed by its rate limit/, '... and logged');

# ---- per client: 10 per hour --------------------------------------------------------------------
my $busy = make_user('busy@example.com');
for my $i (1 .. 10) {
    is(forgot({ email => "nobody$i\@example.com" }, '192.0.2.77')->{status}, 200, "client request $i of 10");
}
$r = forgot({ email => 'busy@example.com' }, '192.0.2.77');
is_deeply([$r->{status}, $r->{json}], [200, { detail => $SENT }], 'the 11th: still 200, the same answer');
forgot({ email => 'busy@example.com' }, '192.0.2.78');
my @busy = mails_to('busy@example.com');
sleep 0.5;
is(scalar(@busy = mails_to('busy@example.com')), 1, 'only the request from another client was mailed');

# ---- similar timing: known and unknown addresses ------------------------------------------------
# Interleaved, each known address's mail delivered before the next request
# (the mail thread would otherwise slow only the unknown ones). Alike: the
# medians within a third of each other; answering an unknown address
# without the password hash's work would put it near zero.
my (@known_s, @unknown_s);
for my $i (1 .. 10) {
    make_user("timing$i\@example.com");
    push @known_s, forgot({ email => "timing$i\@example.com" })->{seconds};
    mails_to("timing$i\@example.com");
    push @unknown_s, forgot({ email => "ghost$i\@example.com" })->{seconds};
}
sub median { my @s = sort { $a <=> $b } @_; return $s[@s / 2] }
my ($k, $u) = (median(@known_s), median(@unknown_s));
cmp_ok(abs($k - $u), '<', ($k > $u ? $k : $u) / 3,
       sprintf 'known and unknown answer alike (median %.1f ms vs %.1f ms)', 1000 * $k, 1000 * $u);

# ---- no timing tells an account: a sign test over 120 pairs ------------------------------------
# A known address's answer used to be about 0.1 ms slower while its mail went out (the mail thread,
# woken by the request, ran beside it): 106 of 120 pairs, z = 8.4. Each pair here asks for a known
# address and an unknown one, in turn first, from client addresses of their own (the limits reset),
# with every known request's mail going to the SMTP sink. Without a difference, the known one is the
# slower in about half of the pairs: |z| stays well under 4 (a chance of 6 in 100,000).
make_user('signtest@example.com');
my ($slower, $pairs) = (0, 120);
for my $i (1 .. $pairs) {
    $t->redis('DEL', 'adserve:ratelimit:reset_address:' . sha256_hex('signtest@example.com'));
    my %took;
    for my $which ($i % 2 ? qw(known unknown) : qw(unknown known)) {
        my $email = $which eq 'known' ? 'signtest@example.com' : "nobody$i\@example.com";
        $took{$which} = forgot({ email => $email }, sprintf '10.1.%d.%d', $i, $which eq 'known' ? 1 : 2)->{seconds};
    }
    $slower++ if $took{known} > $took{unknown};
}
my $z = ($slower - $pairs / 2) / sqrt($pairs / 4);
ok(abs($z) < 4, sprintf 'a known address answers no slower than an unknown one: the slower in %d of %d pairs (z = %.1f)',
   $slower, $pairs, $z);
ok($t->wait_until(10, sub { mails_to('signtest@example.com') >= $pairs }), '... and every known one was mailed');

# ---- a mail server that never answers ------------------------------------------------------------
my $hole = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1', LocalPort => 0, ReuseAddr => 1)
    or die "listen: $!";
$t->stop('sidecar');
$t->env->{ADSERVE_SMTP_URL} = 'smtp://127.0.0.1:' . $hole->sockport;
$t->start('sidecar');
my $slow = make_user('slow@example.com');
$r = forgot({ email => 'slow@example.com' });
is($r->{status}, 200, 'a silent mail server: still 200');
ok($r->{seconds} < 1, sprintf 'and at once (%.2f s): sending is not in the request', $r->{seconds});
ok($t->wait_until(15, sub { $t->redis('XLEN', 'adserve:outbox') >= 1 }),
   'after the 5 s timeout the mail fell back to the outbox');
my $log = $t->log_text('sidecar.log');
like($log, qr/password reset mail for user \Q$slow->{id}\E not sent \(.*\): falling back to the outbox/,
     'the failure is logged');
like($log, qr/password reset mail for user \Q$slow->{id}\E queued for the outbox/, '... and the fallback');
close $hole;

# ---- no SMTP configured: the outbox ---------------------------------------------------------------
$t->stop('sidecar');
delete $t->env->{ADSERVE_SMTP_URL};
$t->start('sidecar');
$t->redis('DEL', 'adserve:outbox');
my $box = make_user('outbox@example.com');
$r = forgot({ email => 'outbox@example.com' });
is_deeply([$r->{status}, $r->{json}], [200, { detail => $SENT }], 'without SMTP: the same answer');
ok($t->wait_until(10, sub { $t->redis('XLEN', 'adserve:outbox') == 1 }), 'one message in adserve:outbox');
# id, then at, from, to, subject, sealed (one line each): no body in clear
my $raw = $t->redis('XRANGE', 'adserve:outbox', '-', '+');
my @f = split /\n/, $raw;
my %entry = @f[1 .. 10];
is($entry{to}, 'outbox@example.com', 'outbox: to');
is($entry{from}, 'noreply@adserve.test', 'outbox: from');
like($entry{subject}, qr/reset/i, 'outbox: subject');
ok(!exists $entry{body}, 'outbox: no body in clear');
like($entry{sealed} // '', qr/^[A-Za-z0-9_-]{100,}$/, 'outbox: the body is sealed');
unlike($raw, qr/reset-password\?token=/, 'no reset link anywhere in Redis');

# the operator's way in: scripts/outbox opens it with the runtime folder's key
my $opened = $t->script('outbox', '1');
like($opened, qr/^to: outbox\@example\.com$/m, 'scripts/outbox lists the message');
my $otoken = token_of($opened);
ok($otoken, 'scripts/outbox shows the body, with the link');
$t->redis('XADD', 'adserve:outbox', '*', at => 'x', from => 'x', to => 'forged@example.com',
          subject => 'x', sealed => 'AAAA' x 40);
like($t->script('outbox', '1'), qr/cannot be opened/, 'a body sealed with another key is not opened');
like($t->log_text('sidecar.log'), qr/password reset mail for user \Q$box->{id}\E queued for the outbox/,
     'the log says a reset mail was queued for the outbox');
unlike($t->log_text('sidecar.log'), qr/\Q$otoken\E/, 'without the token');
is(reset_pw($otoken, 'from-the-outbox')->{status}, 200, 'the outbox link resets the password');
is(login('outbox@example.com', 'from-the-outbox')->{status}, 200, 'and the new password logs in');
ok(!$smtp->wait_for(sub { $_->{to} eq 'outbox@example.com' }, 0), 'nothing went to the SMTP sink');

done_testing;
