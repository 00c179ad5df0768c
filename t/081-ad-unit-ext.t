# The spec's endpoint 1: PATCH /api/developer/control/ad-units/{ad_unit_id}/ext.
# Admin only; the body is exactly {"ext": AdUnitExt}; the submitted ext,
# normalised with every default of the AdUnitExt table, replaces the stored
# one whole; 200 with the whole ad unit; every failure {detail: string}.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub detail_ok {
    my ($res, $status, $name, $like) = @_;
    is($res->{status}, $status, "$name: $status") or diag $res->{content};
    ok(defined $res->{json} && defined $res->{json}{detail} && !ref $res->{json}{detail}
       && length $res->{json}{detail}, "$name: {detail: string}");
    like($res->{json}{detail} // '', $like, "$name: the detail names it") if $like;
}

# redis-cli's answer without its trailing newline
sub rc { my $o = $t->redis(@_); $o =~ s/\n+\z//; return $o }

# Every default of the spec's AdUnitExt table; the nullable fields without
# a default (external_raw_data, implicit_app_inference, passback,
# public_url, publisher, target_service) stay absent.
my %DEFAULTS = (
    algorithm => 'axa0', approval_method => 'admin', bcat => [], default_cpa => 0,
    default_cpc => 0, display => { enabled => 0 }, metric_mode => 'all',
    native => { enabled => 0, render_mode => 'html' }, payout => 'rates',
    recommendation => { enabled => 0 }, responsive => 'fixed', target_ecpm => 0,
    video => { enabled => 0 },
);

my $unit = $t->api('POST', '/api/ad-units', json => { code => 'ext-unit', name => 'Ext unit' })->{json};
my $url = "/api/developer/control/ad-units/$unit->{id}/ext";
sub ext_patch { my ($body, %o) = @_; return $t->api('PATCH', $url, json => $body, %o) }

# ---- 200: {"ext": {}} is every default -------------------------------------------------
my $rev = rc('GET', 'adserve:rev');
my $res = ext_patch({ ext => {} });
is($res->{status}, 200, '{"ext": {}}: 200');
is_deeply($res->{json}{ext}, \%DEFAULTS, 'every AdUnitExt default, exactly');
my %rest = %{ $res->{json} };
delete @rest{qw(ext updated_at)};
my %before = %$unit;
delete @before{qw(updated_at)};
is_deeply(\%rest, \%before, 'the answer is the whole ad unit, otherwise unchanged');
is_deeply($t->api('GET', "/api/ad-units/$unit->{id}")->{json}, $res->{json}, 'GET shows the same');
is_deeply($JSON->decode(rc('HGET', 'adserve:ad_units', $unit->{id})), $res->{json}, 'Redis holds it');
is(rc('GET', 'adserve:rev'), $rev + 1, 'the revision moved (serving reads ext.bcat)');
my (undef, %a) = split /\n/, rc('XREVRANGE', 'adserve:audit', '+', '-', 'COUNT', 1);   # id, fields
is_deeply([ @a{qw(action resource id)} ], [ 'update', 'ad_unit', $unit->{id} ], 'an audit record');
ok(!exists $JSON->decode($a{before})->{ext} && $JSON->decode($a{after})->{ext}{algorithm} eq 'axa0',
   '... with the ext before and after');

# ---- every field set ----------------------------------------------------------------------
my %full = (
    algorithm => 'axb1', approval_method => 'delegate', bcat => [ 'IAB7', 'IAB25-3' ],
    default_cpa => 1.5, default_cpc => 0.25, display => { enabled => 1, sticky => JSON::PP::true },
    external_raw_data => { source => [ 1, 2 ] },
    implicit_app_inference => { app_name => 'App', cat => undef, ios_bundle => 'com.x' },
    metric_mode => 'internal_only', native => { enabled => 1 }, passback => '<script></script>',
    payout => 'revenue_share', public_url => 'https://track.example.com:8443/base',
    publisher => { name => 'Pub', seller_id => 's-1', ext => { tier => 1 } },
    recommendation => { enabled => 1 }, responsive => 'resized', target_ecpm => 2.75,
    target_service => 'svc-a', video => { enabled => 1 },
);
$res = ext_patch({ ext => \%full });
is($res->{status}, 200, 'every field set: 200');
is_deeply($res->{json}{ext}, {
    %full,
    native => { enabled => 1, render_mode => 'html' },
    implicit_app_inference => { app_name => 'App', cat => undef, ios_bundle => 'com.x', ua_keywords => [] },
}, 'kept as sent, nested defaults filled (native.render_mode, implicit_app_inference.ua_keywords)');

# ---- replacement: what is not sent again is back to its default ----------------------------
$res = ext_patch({ ext => { algorithm => 'axc2', native => { render_mode => 'asset' } } });
is($res->{status}, 200, 'a partial ext: 200');
is_deeply($res->{json}{ext}, { %DEFAULTS, algorithm => 'axc2', native => { enabled => 0, render_mode => 'asset' } },
          'the submitted ext replaced the stored one whole: every other field is back to its default');
$res = ext_patch({ ext => { external_raw_data => undef, publisher => undef } });
is_deeply($res->{json}{ext}, { %DEFAULTS, external_raw_data => undef, publisher => undef },
          'nullable fields sent as null stay null');
$res = ext_patch({ ext => {} });
is_deeply($res->{json}{ext}, \%DEFAULTS, '{"ext": {}} resets everything');
is($res->{json}{name}, 'Ext unit', 'the rest of the ad unit is untouched');

# ---- 400, 401, 403, 404 --------------------------------------------------------------------
for my $body ('{"ext": {', '{"ext": {}} x', '') {
    detail_ok($t->api('PATCH', $url, body => $body, headers => { 'content-type' => 'application/json' }),
              400, "malformed JSON '$body'");
}
detail_ok($t->api('PATCH', $url, body => '[{"ext": {}}]', headers => { 'content-type' => 'application/json' }),
          400, 'a body that is not an object');
detail_ok($t->request('PATCH', $url, json => { ext => {} }), 401, 'no token');
detail_ok($t->request('PATCH', $url, json => { ext => {} }, headers => { Authorization => 'Bearer x.y.z' }),
          401, 'a bad token');
for my $role (qw(operator advertiser)) {
    my @cred = ("$role-$$\@example.com", "pw-$role-0123456789");
    my $r = $t->api('POST', '/api/users', json => {
        email => $cred[0], password => $cred[1], role => $role,
        $role eq 'advertiser' ? (advertiser_id => $t->advertiser_id) : () });
    SKIP: {
        skip "POST /api/users answered $r->{status}: no $role to test with", 3 unless $r->{status} == 201;
        detail_ok(ext_patch({ ext => {} }, as => \@cred), 403, "$role");
    }
}
detail_ok($t->api('PATCH', '/api/developer/control/ad-units/' . Adserve::Test::uuid() . '/ext',
                  json => { ext => {} }), 404, 'an unknown ad unit');
detail_ok($t->api('PATCH', '/api/developer/control/ad-units/not-a-uuid/ext', json => { ext => {} }),
          404, 'an id that is not a UUID');
# the spec fixes this endpoint's failures to 400, 403, 404 and 422: a body that is not JSON
# is a bad request, not a 415
detail_ok($t->api('PATCH', $url, body => '{"ext":{}}', headers => { 'content-type' => 'text/plain' }),
          400, 'a text/plain body', qr/Content-Type must be application\/json/);
detail_ok($t->api('PATCH', $url, body => '{"ext":', headers => { 'content-type' => 'application/json' }),
          400, 'malformed JSON', qr/malformed JSON/);
detail_ok(ext_patch({ ext => { gpid => "a\x00b" } }), 422, 'a NUL in a string',
          qr/field 'ext\.gpid' holds a control character/);

# ---- 422, one per rule ---------------------------------------------------------------------------
my $stored = $t->api('GET', "/api/ad-units/$unit->{id}")->{json};
my @invalid = (
    [ 'no ext',                  {},                                              qr/^ext: is required/ ],
    [ 'another top-level field', { ext => {}, name => 'x' },                      qr/^name: unknown property/ ],
    [ 'only another field',      { extension => {} },                             qr/^extension: unknown property/ ],
    [ 'ext null',                { ext => undef },                                qr/^ext: must not be null/ ],
    [ 'ext an array',            { ext => [] },                                   qr/^ext: must be an object/ ],
    [ 'unknown field in ext',    { ext => { colour => 'red' } },                  qr/^ext\.colour: unknown property/ ],
    [ 'unknown field deeper',    { ext => { native => { enabled => 1, size => 2 } } }, qr/^ext\.native\.size: unknown property/ ],
    [ 'unknown in publisher',    { ext => { publisher => { owner => 'x' } } },    qr/^ext\.publisher\.owner: unknown property/ ],
    [ 'negative default_cpa',    { ext => { default_cpa => -1 } },                qr/^ext\.default_cpa: must be between 0 and 999999/ ],
    [ 'negative default_cpc',    { ext => { default_cpc => -0.5 } },              qr/^ext\.default_cpc: must be between 0 and 999999/ ],
    [ 'negative target_ecpm',    { ext => { target_ecpm => -2 } },                qr/^ext\.target_ecpm: must be between 0 and 999999/ ],
    # a floor serving could not honour was stored, then became no floor at all
    [ 'target_ecpm of 1e9',      { ext => { target_ecpm => 1e9 } },               qr/^ext\.target_ecpm: must be between 0 and 999999/ ],
    [ 'default_cpc over the bound', { ext => { default_cpc => 1000000 } },        qr/^ext\.default_cpc: must be between 0 and 999999/ ],
    [ 'cost as a string',        { ext => { default_cpc => '1' } },               qr/^ext\.default_cpc: must be a number/ ],
    [ 'cost null',               { ext => { default_cpa => undef } },             qr/^ext\.default_cpa: must not be null/ ],
    [ 'approval_method',         { ext => { approval_method => 'auto' } },        qr/^ext\.approval_method: must be one of admin, delegate/ ],
    [ 'metric_mode',             { ext => { metric_mode => 'none' } },            qr/^ext\.metric_mode: must be one of all, internal_only, external_only/ ],
    [ 'payout',                  { ext => { payout => 'cash' } },                 qr/^ext\.payout: must be one of rates, revenue_share, none/ ],
    [ 'responsive',              { ext => { responsive => 'fluid' } },            qr/^ext\.responsive: must be one of fixed, resized/ ],
    [ 'render_mode',             { ext => { native => { render_mode => 'svg' } } }, qr/^ext\.native\.render_mode: must be one of html, asset/ ],
    [ 'native enabled 2',        { ext => { native => { enabled => 2 } } },       qr/^ext\.native\.enabled: must be one of 0, 1/ ],
    [ 'bcat item',               { ext => { bcat => [ 'IAB1', 7 ] } },            qr/^ext\.bcat\[1\]: must be a string/ ],
    [ 'bcat null',               { ext => { bcat => undef } },                    qr/^ext\.bcat: must not be null/ ],
    [ 'algorithm number',        { ext => { algorithm => 1 } },                   qr/^ext\.algorithm: must be a string/ ],
    [ 'display not an object',   { ext => { display => 1 } },                     qr/^ext\.display: must be an object/ ],
    [ 'public_url relative',     { ext => { public_url => '/track' } },           qr/^ext\.public_url: must be an absolute http or https URL/ ],
    [ 'ua_keywords item',        { ext => { implicit_app_inference => { ua_keywords => [ {} ] } } },
                                 qr/^ext\.implicit_app_inference\.ua_keywords\[0\]: must be a string/ ],
);
for my $case (@invalid) {
    my ($name, $body, $like) = @$case;
    detail_ok(ext_patch($body), 422, $name, $like);
}
is_deeply($t->api('GET', "/api/ad-units/$unit->{id}")->{json}, $stored, 'no refused request changed the ad unit');

done_testing;
