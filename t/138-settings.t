# The Settings group (README "Settings"): GET /api/settings for every role,
# PATCH for the admin. The public URL is data that serving follows within
# 1 s, like any record: the event URLs of new ads, the integration tags and
# the reset mails' links move to it, an ad unit's ext.public_url still
# wins, and null goes back to each node's adserve_public_url. The currency
# is one of ISO 4217. Bad values are refused at the field they name; a
# record written past the API with a bad URL changes nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;
use Adserve::Smtp;

my $smtp = Adserve::Smtp->new;
my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_SMTP_URL} = $smtp->url;
$t->start('sidecar', 'nginx');
my $base = $t->base;                 # ADSERVE_PUBLIC_URL, and the node's adserve_public_url
my $new_base = 'https://ads.publisher.example/v0';

my $res = $t->api('GET', '/api/settings');
is($res->{status}, 200, 'GET /api/settings');
is_deeply($res->{json}, { public_url => undef, currency => 'USD', default_public_url => $base,
                          updated_at => undef },
          '... never written: the defaults, and what a null public_url means');

my $c = $t->chain;
my $own = $t->chain(unit => { ext => { public_url => 'https://own.example' } });
ok($t->wait_until(5, sub { $t->workers_at($own->{rev}) }), 'fixtures loaded') or BAIL_OUT('no snapshot');
like($t->ad($c->{unit})->{json}{ad}{impression_url}, qr{^\Q$base\E/app/v0/event/impression\?ad_log=},
     'an ad\'s impression URL starts at adserve_public_url');

# ---- a change serves within 1 s -------------------------------------------
$res = $t->api('PATCH', '/api/settings', json => { public_url => $new_base });
is($res->{status}, 200, 'PATCH public_url') or diag $res->{content};
is($res->{json}{public_url}, $new_base, '... answered with the new value');
is($res->{json}{currency}, 'USD', '... the rest unchanged');
like($res->{json}{updated_at} // '', qr/^\d{4}-\d\d-\d\dT/, '... and when');
my $rev = $t->revision;
sleep 1.0;
ok($t->workers_at($rev), "every worker is on revision $rev after 1 s");
my @ads = map { $t->ad($c->{unit})->{json}{ad} } 1 .. 20;
is(scalar(grep { ($_->{impression_url} // '') =~ m{^\Q$new_base\E/app/v0/event/impression\?ad_log=[-\w]+$} } @ads),
   20, '20 of 20 ads after 1 s have impression URLs at the new public URL');
is(scalar(grep { ($_->{click_url} // '') =~ m{^\Q$new_base\E/app/v0/event/click\?ad_log=} } @ads),
   20, '... and click URLs');
like($t->ad($own->{unit})->{json}{ad}{impression_url}, qr{^https://own\.example/app/v0/event/impression},
     'a unit with its own ext.public_url keeps it');

my $unit = $t->created('/api/ad-units', { code => 'settings-top', name => 'Top', display => { w => 300, h => 250 } });
my $i = $t->api('GET', "/api/ad-units/$unit->{id}/integration")->{json};
is($i->{sdk}{script_url}, "$new_base/sdk/v0/adserve.js", 'the integration tag loads the SDK from the new public URL');
like($i->{sdk}{snippet}, qr{src="\Q$new_base\E/sdk/v0/adserve\.js"}, '... in its snippet too');

my $user = $t->created('/api/users', { email => 'forgetful@example.com', password => 'first-password-1',
                                       role => 'operator' });
is($t->request('POST', '/api/auth/forgot-password', json => { email => 'forgetful@example.com' })->{status},
   200, 'a reset asked for');
my ($mail) = $smtp->wait_for(sub { $_->{to} eq 'forgetful@example.com' }, 10);
like($mail->{body} // '', qr{\Q$new_base\E/console/\#/reset-password\?token=}, '... its mail links to the new public URL');

# ---- the currency, and partial changes -------------------------------------
$res = $t->api('PATCH', '/api/settings', json => { currency => 'EUR' });
is($res->{status}, 200, 'PATCH currency');
is($res->{json}{currency}, 'EUR', '... EUR');
is($res->{json}{public_url}, $new_base, '... the public URL as it was');
is_deeply($t->api('GET', '/api/settings')->{json}{currency}, 'EUR', 'GET shows it');

# ---- bad input ------------------------------------------------------------
my %bad = (
    'ftp://ads.example'           => 'another scheme',
    'https://ads.example/'        => 'a trailing slash',
    'https://ads.example/"x'      => 'a quote',
    'https://ads.example/a b'     => 'a space',
    'https://ads.example/?a&b'    => 'an ampersand',
    'ads.example'                 => 'no scheme',
    ('https://a.example/' . 'x' x 600) => 'over 512 characters',
);
for my $url (sort keys %bad) {
    $res = $t->api('PATCH', '/api/settings', json => { public_url => $url });
    is($res->{status}, 422, "public_url with $bad{$url}: 422");
    like($res->{json}{detail} // '', qr/^public_url: /, '... naming the field');
}
for my $cur ('usd', 'XYZ', 'EURO', 12, undef) {
    $res = $t->api('PATCH', '/api/settings', json => { currency => $cur });
    is($res->{status}, 422, 'currency ' . ($cur // 'null') . ': 422');
    like($res->{json}{detail} // '', qr/^currency: /, '... naming the field');
}
for my $field ('default_public_url', 'updated_at', 'id', 'rate') {
    $res = $t->api('PATCH', '/api/settings', json => { $field => 'x' });
    is($res->{status}, 422, "$field cannot be written: 422");
}
is($t->api('PATCH', '/api/settings', json => [ 1 ])->{status}, 400, 'a body that is no object: 400');
is($t->api('PATCH', '/api/settings', body => '{"currency":', headers => { 'content-type' => 'application/json' })->{status},
   400, 'malformed JSON: 400');
is($t->api('GET', '/api/settings')->{json}{currency}, 'EUR', 'nothing refused was stored');

# ---- roles ----------------------------------------------------------------
$t->api('POST', '/api/users', json => { email => 'adv@example.com', password => 'a-good-password',
                                        role => 'advertiser', advertiser_id => $t->advertiser_id });
my $op = [ 'forgetful@example.com', 'first-password-1' ];
my $adv = [ 'adv@example.com', 'a-good-password' ];
is($t->api('GET', '/api/settings', as => $op)->{status}, 200, 'an operator reads the settings');
is($t->api('GET', '/api/settings', as => $adv)->{status}, 200, 'an advertiser too (money is labelled with the currency)');
is($t->api('PATCH', '/api/settings', as => $op, json => { currency => 'GBP' })->{status}, 403, 'an operator may not change them');
is($t->api('PATCH', '/api/settings', as => $adv, json => { currency => 'GBP' })->{status}, 403, 'nor an advertiser');
is($t->api('GET', '/api/settings', token => undef)->{status}, 401, 'no token: 401');

# ---- audit ------------------------------------------------------------------
my $audit = $t->api('GET', '/api/audit-logs?resource=settings')->{json};
is($audit->{total}, 2, 'two changes in the audit log');
my ($first) = grep { ($_->{after}{currency} // '') eq 'USD' } @{ $audit->{items} };
is($first->{before}{public_url}, undef, '... the first from null');
is($first->{after}{public_url}, $new_base, '... to the new public URL');
is($first->{id}, 'global', '... of the one settings record');

# ---- back to the node's, and a record written past the API ------------------
$t->api('PATCH', '/api/settings', json => { public_url => undef });
$rev = $t->revision;
sleep 1.0;
ok($t->workers_at($rev), "every worker is on revision $rev after 1 s");
is(scalar(grep { ($t->ad($c->{unit})->{json}{ad}{impression_url} // '') =~ m{^\Q$base\E/app/v0/event/} } 1 .. 20),
   20, 'public_url null: 20 of 20 ads at adserve_public_url again');

$rev = $t->transaction(['HSET', 'adserve:settings', 'global',
                        '{"id":"global","public_url":"javascript:alert(1)","currency":"EUR"}'],
                       ['XADD', 'adserve:changes', '*', 'kind', 'settings', 'id', 'global']);
ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'a bad URL written past the API is read');
is(scalar(grep { ($t->ad($c->{unit})->{json}{ad}{impression_url} // '') =~ m{^\Q$base\E/app/v0/event/} } 1 .. 10),
   10, '... and ignored by serving');
is($t->api('GET', "/api/ad-units/$unit->{id}/integration")->{json}{sdk}{script_url}, "$base/sdk/v0/adserve.js",
   '... and by the integration tags');
is($t->request('GET', '/app/v0/status')->{status}, 200, 'the node is well');

done_testing;
