# POST /app/v0/ad/{tagid}: every status of the spec, and the 200 shape.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

# a publisher's own path to serving, rewritten in its location: the unit is
# the one of the path as rewritten (the module's rewrite-phase handler reads
# the path too, to fetch the unit ahead)
my $t = Adserve::Test->new(template => Adserve::Test::with_locations(<<'NGINX'));
        location /app/v0/ad-alias/ {
            rewrite ^/app/v0/ad-alias/alias-(.*)$ /app/v0/ad-alias/$1 break;
            adserve_ad;
        }
NGINX

my $img = $t->chain;
my $html = $t->chain(creative => { type => 'HTML', image_url => undef,
                                   html => '<a href="https://x.example/?a=1&b=2">"Buy" \\ now</a>' });
my $idle = $t->chain(skip => [qw(line_items licas)]);     # ACTIVE unit, no demand
my $inactive = $t->chain(unit => { status => 'INACTIVE' });
my $archived = $t->chain(unit => { status => 'ARCHIVED' });
ok($t->wait_until(5, sub { $t->workers_at($archived->{rev}) }), 'every worker loaded the fixtures');

# ---- 404 ----------------------------------------------------------------
for my $case (['unknown id', Adserve::Test::uuid()], ['INACTIVE ad unit', $inactive->{unit}],
              ['ARCHIVED ad unit', $archived->{unit}], ['empty tagid', ''],
              ['a path below the tagid', "$img->{unit}/x"])
{
    my $res = $t->ad($case->[1]);
    is($res->{status}, 404, "404 for $case->[0]");
    is($res->{json}{detail}, 'unknown or inactive ad unit', "... with a {detail} body")
        if $case->[1] ne '';
}
is($t->ad(Adserve::Test::uuid(), '{not json')->{status}, 404,
   '404, not 500, for malformed JSON on an unknown ad unit');

# ---- 500 ----------------------------------------------------------------
for my $body ('', '{', '{"version":"0.1.0",}', '[1,2]', '"just a string"', "{\"a\":\"\x01\"}",
              '{"user":{"id":"u1"}} trailing', "{\"a\":\"\xff\"}")
{
    my $res = $t->ad($img->{unit}, $body);
    (my $shown = $body) =~ s/[^\x20-\x7e]/?/g;
    is($res->{status}, 500, "500 for malformed body '$shown' on an ACTIVE ad unit");
}
like($t->ad($img->{unit}, '{')->{json}{detail}, qr/malformed/, '... with a {detail} body');

# ---- a rewritten path ----------------------------------------------------
{
    my $res = $t->request('POST', "/app/v0/ad-alias/alias-$img->{unit}",
                          json => { version => '0.1.0', user => { id => 'u1' } });
    is($res->{status}, 200, 'a path rewritten in its location (rewrite ... break): 200');
    is($res->{json}{ad}{id}, $img->{creative}, '... the ad of the unit of the rewritten path');
    is($t->request('POST', "/app/v0/ad-alias/$img->{unit}",
                   json => { version => '0.1.0' })->{status}, 200,
       '... and a path that needs no rewrite: 200');
}

# ---- 204 ----------------------------------------------------------------
my $res = $t->ad($idle->{unit});
is($res->{status}, 204, '204 for an ACTIVE ad unit with nothing eligible');
is($res->{content} // '', '', '... with an empty body');

# ---- 200 ----------------------------------------------------------------
$res = $t->ad($img->{unit});
is($res->{status}, 200, '200 when there is an ad');
like($res->{headers}{'content-type'}, qr{^application/json}, '... as JSON');
my $j = $res->{json};
is($j->{version}, '0.1.0', 'version is 0.1.0');
is($j->{ad}{id}, $img->{creative}, 'ad.id is the creative');
is($j->{ad}{display}{w}, 300, 'ad.display.w');
is($j->{ad}{display}{h}, 250, 'ad.display.h');
is($j->{ad}{display}{banner}{img}, "https://cdn.example/$img->{creative}.png",
   'ad.display.banner.img is the image URL');
ok(!exists $j->{ad}{display}{adm}, 'an image ad has no adm');
is($j->{ext}{message}, 'ok', 'ext.message');
like($j->{ext}{ad_log}, qr/^[A-Za-z0-9_-]{100,}$/, 'ext.ad_log is a base64url token');
isnt($t->ad($img->{unit})->{json}{ext}{ad_log}, $j->{ext}{ad_log},
     'every response has its own ad_log');

$j = $t->ad($html->{unit})->{json};
is($j->{ad}{display}{adm}, '<a href="https://x.example/?a=1&b=2">"Buy" \\ now</a>',
   'an HTML ad carries its markup, escaped and intact, in adm');
ok(!exists $j->{ad}{display}{banner}, 'an HTML ad has no banner');

# the request body: unknown fields are ignored, as in OpenRTB
is($t->ad($img->{unit}, { version => '0.1.0', imp => [ { id => 1 } ], user => { id => 'u', yob => 'x' } })->{status},
   200, 'unknown or wrong-typed request fields do not fail the request');

# ---- methods, limits, CORS, never 401 -----------------------------------
$res = $t->request('GET', "/app/v0/ad/$img->{unit}");
is($res->{status}, 405, '405 for GET');
is($res->{headers}{allow}, 'POST, OPTIONS', '... with Allow');

$res = $t->ad($img->{unit}, '{"pad":"' . ('x' x 17000) . '"}');
is($res->{status}, 413, '413 for a body over 16 KiB');
is($t->ad($img->{unit}, '{"pad":"' . ('x' x 16000) . '"}')->{status}, 200,
   'a body just under 16 KiB is served');

$res = $t->request('OPTIONS', "/app/v0/ad/$img->{unit}",
                   headers => { Origin => 'https://publisher.example',
                                'Access-Control-Request-Method' => 'POST' });
is($res->{status}, 204, 'CORS preflight answers 204');
is($res->{headers}{'access-control-allow-origin'}, '*', '... allowing any origin');
is($res->{headers}{'access-control-allow-methods'}, 'POST, OPTIONS', '... POST');
is($res->{headers}{'access-control-allow-headers'}, 'Content-Type', '... the Content-Type header');
is($res->{headers}{'access-control-max-age'}, '86400', '... for a day');
ok(!exists $t->ad($img->{unit})->{headers}{'access-control-allow-methods'},
   'an ad response does not repeat what only a preflight needs');
is($t->ad($img->{unit})->{headers}{'access-control-allow-origin'}, '*',
   'the ad response carries CORS too');
for my $path ('/app/v0/event', '/app/v0/event/impression?ad_log=x') {
    $res = $t->request('OPTIONS', $path, headers => { Origin => 'https://publisher.example',
                                                      'Access-Control-Request-Method' => 'POST' });
    is($res->{status}, 204, "CORS preflight of $path: 204");
    like($res->{headers}{'access-control-allow-methods'} // '', qr/GET, POST/, '... GET and POST allowed');
}

$res = $t->request('POST', "/app/v0/ad/$img->{unit}",
                   headers => { Authorization => 'Bearer forged' }, body => '{}');
is($res->{status}, 200, 'serving ignores Authorization: it never answers 401');

done_testing;
