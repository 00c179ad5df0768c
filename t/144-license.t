# The License group (README "License"): GET /api/license for every role
# gives the product's licence (none chosen yet, and it says so rather than
# claim one) and each component's: its SPDX licence, the Debian package
# that ships it, the version the sidecar links where the library gives
# one, and the copyright file with its full terms on this machine.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
$t->created('/api/users', { email => 'op@example.com', password => 'a-good-password', role => 'operator' });
$t->created('/api/users', { email => 'adv@example.com', password => 'a-good-password', role => 'advertiser',
                            advertiser_id => $t->advertiser_id });

my $res = $t->api('GET', '/api/license');
is($res->{status}, 200, 'GET /api/license');
my $l = $res->{json};
is($l->{product}{name}, 'adserve', 'the product');
is($l->{product}{version}, $t->request('GET', '/api/openapi.json')->{json}{info}{version}, '... at the API\'s version');
is($l->{product}{license}, undef, '... with no licence claimed');
like($l->{product}{notice}, qr/not chosen/, '... and a notice that says so');

my %c = map { $_->{name} => $_ } @{ $l->{components} };
is_deeply([ sort keys %c ], [ sort qw(hiredis libmicrohttpd cjson libsodium libcurl libjwt openssl nginx redis
                                         libmagic stb_image libwebp ffprobe) ],
          'every component the sidecar, the module and the node use');
my %spdx = (hiredis => 'BSD-3-Clause', libmicrohttpd => 'LGPL-2.1-or-later', cjson => 'MIT', libsodium => 'ISC',
            libcurl => 'curl', libjwt => 'MPL-2.0', openssl => 'Apache-2.0', nginx => 'BSD-2-Clause',
            redis => 'BSD-3-Clause', libmagic => 'BSD-2-Clause', stb_image => 'MIT OR Unlicense',
            libwebp => 'BSD-3-Clause', ffprobe => 'GPL-2.0-or-later');
is_deeply({ map { $_ => $c{$_}{license} } keys %c }, \%spdx, '... each with its SPDX licence');
for my $name (sort keys %c) {
    my $file = $c{$name}{copyright_file};
    ok(defined $file && -r $file, "$name: its copyright file is on this machine ($c{$name}{package})");
    my $text = do { local $/; open my $fh, '<', $file or die; <$fh> } // '';
    ok(length $text > 100, '... with its terms');
}
my $system = $t->api('GET', '/api/system')->{json}{sidecar}{libraries};
is($c{$_}{version}, $system->{$_}, "$_: the version System reports") for sort keys %$system;
is($c{nginx}{version}, undef, 'a server\'s version: null (the sidecar does not link it)');

is($t->api('GET', '/api/license', as => [ 'op@example.com', 'a-good-password' ])->{status}, 200, 'an operator reads it');
is($t->api('GET', '/api/license', as => [ 'adv@example.com', 'a-good-password' ])->{status}, 200, 'an advertiser too');
is($t->api('GET', '/api/license', token => undef)->{status}, 401, 'no token: 401');
is($t->api('POST', '/api/license')->{status}, 405, 'it is read-only: 405');

done_testing;
