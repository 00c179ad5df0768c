# The Integration group (README "Management API"): GET
# /api/ad-units/{id}/integration gives what a publisher pastes. The SDK's
# three lines name the unit and its display size and load the SDK that
# nginx serves at the public URL; the VAST tag URL is there only for a unit
# that serves video, and a player's GET of it answers VAST. Operators may
# read it, advertisers may not; unknown and malformed ids are 404.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use Adserve::Test;

my $t = Adserve::Test->new;
my $base = $t->base;                # ADSERVE_PUBLIC_URL, as the run scripts default it
my $unit = $t->created('/api/ad-units', { code => 'home-top', name => 'Home top',
                                          display => { w => 300, h => 250 } });
my $res = $t->api('GET', "/api/ad-units/$unit->{id}/integration");
is($res->{status}, 200, 'an ad unit\'s integration');
my $i = $res->{json};
is($i->{ad_unit_id}, $unit->{id}, '... of that unit');
is($i->{sdk}{script_url}, "$base/sdk/v0/adserve.js", '... the SDK at the public URL');
is($i->{sdk}{element_id}, "adserve-$unit->{id}", '... an element of its own');
is($i->{sdk}{snippet},
   qq{<div id="adserve-$unit->{id}"></div>\n}
   . qq{<script async src="$base/sdk/v0/adserve.js"></script>\n}
   . qq{<script>window.adserve=window.adserve||{cmd:[]};adserve.cmd.push(function(){adserve.registerAd({tagid:"$unit->{id}",element:"adserve-$unit->{id}",width:300,height:250});});</script>\n},
   '... the three lines of README "Web SDK", sized as the display placement');
is($i->{vast_tag_url}, undef, '... and no VAST tag: the unit serves no video');
my $sdk = HTTP::Tiny->new->get($i->{sdk}{script_url});
is($sdk->{status}, 200, 'the script URL is the SDK nginx serves');
like($sdk->{content}, qr/registerAd/, '... the SDK itself');

my $video = $t->created('/api/ad-units', { code => 'pre-roll', name => 'Pre-roll', status => 'ACTIVE',
                                           video => { w => 640, h => 360, mindur => 5, maxdur => 30, mime => ['video/mp4'] } });
$t->api('PATCH', "/api/developer/control/ad-units/$video->{id}/ext", json => { ext => { video => { enabled => 1 } } })->{status} == 200
    or BAIL_OUT('cannot turn video on');
$i = $t->api('GET', "/api/ad-units/$video->{id}/integration")->{json};
is($i->{vast_tag_url}, "$base/app/v0/vast/$video->{id}", 'a video unit has its VAST tag URL');
unlike($i->{sdk}{snippet}, qr/width:/, '... and a snippet without a size (it has no display placement)');
my $rev = $t->revision;
ok($t->wait_until(5, sub { $t->workers_at($rev) }), 'serving has the video unit');
my $vast = HTTP::Tiny->new->get("$i->{vast_tag_url}?uid=u1");
is($vast->{status}, 200, "a player's GET of the VAST tag URL answers");
like($vast->{content}, qr/^<VAST version="4\.2"/, '... VAST 4.2 (no fill: the unit has no video demand)');

# roles and bad ids
$t->api('POST', '/api/users', json => { email => 'op@example.com', password => 'a-good-password', role => 'operator' });
$t->api('POST', '/api/users', json => { email => 'adv@example.com', password => 'a-good-password', role => 'advertiser',
                                        advertiser_id => $t->advertiser_id });
is($t->api('GET', "/api/ad-units/$unit->{id}/integration", as => [ 'op@example.com', 'a-good-password' ])->{status},
   200, 'an operator may read it');
is($t->api('GET', "/api/ad-units/$unit->{id}/integration", as => [ 'adv@example.com', 'a-good-password' ])->{status},
   403, 'an advertiser may not (403)');
is($t->api('GET', "/api/ad-units/$unit->{id}/integration", token => undef)->{status}, 401, 'nor anyone without a token (401)');
is($t->api('GET', '/api/ad-units/6f1c2b7e-0000-4000-8000-000000000000/integration')->{status}, 404, 'an unknown ad unit: 404');
is($t->api('GET', '/api/ad-units/..%2F..%2Fetc/integration')->{status}, 404, 'an id that is no UUID: 404');

done_testing;
