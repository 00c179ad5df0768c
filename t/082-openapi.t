# GET /api/openapi.json: the OpenAPI 3.1.0 document of the management API.
# It must describe exactly the routes the sidecar serves (read from the
# route rows of sidecar/api_*.c), pass the OpenAPI 3.1 validator and the
# JSON Schema 2020-12 meta-schema, and describe real responses: an ad unit
# with every nested shape validates against its AdUnit component. The
# validator is shown to fail on broken copies, so its pass means something.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;
my $root = $Adserve::Test::ROOT;
my $tmp = tempdir(CLEANUP => 1);

my $res = $t->request('GET', '/api/openapi.json');
is($res->{status}, 200, 'public: 200 without a token') or diag $res->{content};
like($res->{headers}{'content-type'}, qr{^application/json}, 'JSON');
my $doc = $res->{json};
is($doc->{openapi}, '3.1.0', 'openapi 3.1.0');
is($doc->{info}{title}, 'Data Management APIs', 'the spec\'s title');
is($doc->{info}{version}, '0.5.0', 'the spec\'s version');
ok(@{ $doc->{servers} // [] }, 'servers');

# ---- every route, and nothing else ------------------------------------------------------------
my %rows;
for my $file (glob "$root/sidecar/api_*.c") {
    open my $fh, '<', $file or die "$file: $!";
    local $/;
    my $src = <$fh>;
    $rows{"$1 $2"}++ while $src =~ /\{\s*"(GET|POST|PUT|PATCH|DELETE)",\s*"(\/api[^"]*)"/g;
}
my %ops;
for my $path (keys %{ $doc->{paths} }) {
    $ops{ uc($_) . " $path" }++ for keys %{ $doc->{paths}{$path} };
}
cmp_ok(scalar keys %rows, '>=', 9, 'the route rows of sidecar/api_*.c were found');
is_deeply([ sort keys %ops ], [ sort keys %rows ], 'one operation per route row: every route documented, none invented');
ok(!grep({ $_ > 1 } values %rows), 'no route row twice');
for my $want ('GET /api/health', 'GET /api/openapi.json', 'GET /api/ad-units', 'POST /api/ad-units',
              'GET /api/ad-units/{id}', 'PATCH /api/ad-units/{id}', 'DELETE /api/ad-units/{id}',
              'PATCH /api/developer/control/ad-units/{ad_unit_id}/ext') {
    ok($ops{$want}, "documents $want");
}

# ---- operations ----------------------------------------------------------------------------------
my $schemas = $doc->{components}{schemas};
my %ids;
for my $op_name (sort keys %ops) {
    my ($method, $path) = split / /, $op_name;
    my $op = $doc->{paths}{$path}{ lc $method };
    $ids{ $op->{operationId} }++;
    ok(@{ $op->{tags} // [] } == 1 && length $op->{summary}, "$op_name: a tag and a summary");
    my @codes = keys %{ $op->{responses} };
    ok(grep({ /^2/ } @codes), "$op_name: a success response");
    my @bad = grep {
        my $s = $op->{responses}{$_}{content}{'application/json'}{schema}{'$ref'} // '';
        $s !~ m{^#/components/schemas/(Error|ValidationError)$};
    } grep { /^[45]/ } @codes;
    ok(!@bad, "$op_name: every error response is {detail}") or diag "@bad";
    my @params = map { $_->{name} } grep { $_->{in} eq 'path' } @{ $op->{parameters} // [] };
    is_deeply(\@params, [ $path =~ /\{(\w+)\}/g ], "$op_name: its path parameters");
    if ($path =~ m{^/api/internal/}) {
        is_deeply($op->{security}, [ { serviceKey => [] } ], "$op_name: the service key");
        ok($op->{responses}{401}, "$op_name: a 401");
    } elsif (@{ $op->{security} }) {
        is_deeply($op->{security}, [ { bearerAuth => [] } ], "$op_name: bearer auth");
        like($op->{description}, qr/^Roles: /, "$op_name: the roles are named");
        ok($op->{responses}{401}, "$op_name: a 401");
    }
}
ok(!grep({ $_ > 1 } values %ids), 'operationIds are unique');

# every operation's tag is one of the spec's resource groups, as it spells
# them; and the groups built so far are all there (the rest are open issues)
my @spec_groups = ('Auth', 'Advertisers', 'Users', 'AdUnit', 'Ad the service', 'AdSource', 'Allocations',
                   'AssociatedItemsPool', 'Custom Targeting Segment', 'Audit Logs', 'Blocked Creative',
                   'the service', 'Creatives', 'Dashboard', 'Experiment', 'External Creative', 'Integration',
                   'LICAs', 'License', 'LineItems', 'Media Library', 'Metric', 'Orders', 'Placements', 'Settings',
                   'System', 'developer', 'developer/control/allocations', 'developer/monitoring', 'internal',
                   'manager', 'Ad Unit Native Style', 'Custom Targeting Key', 'Custom Targeting Value',
                   'Native Format', 'Native Style Template', 'Native Style');
# (37 names: the spec counts 36 groups, and two of its names, "Ad the
# service" and "the service", are placeholders in its text, not groups)
is(scalar @spec_groups, 37, "the spec's list of groups");
my %spec_group = map { $_ => 1 } @spec_groups;
my %tags;
for my $path (keys %{ $doc->{paths} }) {
    $tags{$_}++ for map { @{ $_->{tags} // [] } } values %{ $doc->{paths}{$path} };
}
is_deeply([ grep { !$spec_group{$_} } sort keys %tags ], [], 'every tag is a group of the spec');
my @built = grep { $tags{$_} } @spec_groups;
cmp_ok(scalar @built, '>=', 28, scalar(@built) . ' of the groups have routes: ' . join(', ', @built));
is_deeply($doc->{paths}{'/api/health'}{get}{security}, [], 'health is public');
is_deeply($doc->{paths}{'/api/openapi.json'}{get}{security}, [], 'the document is public');
is_deeply($doc->{components}{securitySchemes}{bearerAuth}, { type => 'http', scheme => 'bearer', bearerFormat => 'JWT' },
          'the bearer scheme');

my $ext_op = $doc->{paths}{'/api/developer/control/ad-units/{ad_unit_id}/ext'}{patch};
is($ext_op->{description}, 'Roles: admin.', 'endpoint 1: admin only');
is_deeply([ sort keys %{ $ext_op->{responses} } ], [ qw(200 400 401 403 404 415 422 503) ], 'endpoint 1: its statuses');
is($ext_op->{requestBody}{content}{'application/json'}{schema}{'$ref'}, '#/components/schemas/DeveloperAdUnitExtRequest',
   'endpoint 1: the request body');
is($ext_op->{responses}{200}{content}{'application/json'}{schema}{'$ref'}, '#/components/schemas/AdUnit',
   'endpoint 1: answers the AdUnit');
my ($path_param) = @{ $ext_op->{parameters} };
is_deeply($path_param, { name => 'ad_unit_id', in => 'path', required => JSON::PP::true,
                         schema => { type => 'string', format => 'uuid' } }, 'endpoint 1: ad_unit_id, a uuid');
my $list = $doc->{paths}{'/api/ad-units'}{get};
is_deeply($list->{responses}{200}{content}{'application/json'}{schema}{required}, [ 'items', 'total' ], 'a list is {items, total}');
my %q = map { $_->{name} => $_ } @{ $list->{parameters} };
is_deeply($q{limit}{schema}, { type => 'integer', minimum => 1, maximum => 500, default => 50 }, '?limit= 1..500, default 50');
ok($q{offset} && $q{status} && $q{parent_id} && $q{q}, '?offset=, ?status=, ?parent_id=, ?q=');
my $status = $q{status}{schema};
$status = $schemas->{ $1 } if ($status->{'$ref'} // '') =~ m{^#/components/schemas/(\w+)$};
is_deeply($status->{enum}, [qw(ACTIVE INACTIVE ARCHIVED)], 'query parameters are typed: ?status= is the AdUnitStatus enum');
is($q{parent_id}{schema}{format}, 'uuid', '... ?parent_id= a uuid');

# every list route pages the same way, from the same table rows
for my $path (sort keys %{ $doc->{paths} }) {
    my $op = $doc->{paths}{$path}{get} or next;
    my $ok = $op->{responses}{200}{content}{'application/json'}{schema} // {};
    next unless ($ok->{required} // [])->[0] && "@{ $ok->{required} }" eq 'items total';
    my %p = map { $_->{name} => $_->{schema} } @{ $op->{parameters} // [] };
    is_deeply([ @p{qw(limit offset)} ],
              [ { type => 'integer', minimum => 1, maximum => 500, default => 50 },
                { type => 'integer', minimum => 0, default => 0 } ],
              "GET $path: ?limit= and ?offset= as every list");
}
my %audit = map { $_->{name} => $_->{schema} } @{ $doc->{paths}{'/api/audit-logs'}{get}{parameters} };
is($audit{from}{format}, 'date-time', 'audit logs: ?from= is a date-time');
my %users = map { $_->{name} => $_->{schema} } @{ $doc->{paths}{'/api/users'}{get}{parameters} };
is_deeply($users{role}{enum}, [qw(admin operator advertiser)], 'users: ?role= is the enum');
if (my $forgot = $doc->{paths}{'/api/auth/forgot-password'}{post}) {
    is($forgot->{responses}{422}{content}{'application/json'}{schema}{'$ref'}, '#/components/schemas/ValidationError',
       'forgot-password\'s 422 is the spec\'s ValidationError');
}
is_deeply($schemas->{ValidationError}{properties}{detail}{items}{'$ref'}, '#/components/schemas/ValidationErrorItem',
          'ValidationError: {detail: [{loc, msg, type}]}');
is_deeply($schemas->{Error}{properties}{detail}, { type => 'string', description => 'what went wrong' }, 'Error: {detail: string}');

# ---- the schemas ----------------------------------------------------------------------------------
my $content = $res->{content};
for my $name (sort keys %$schemas) {
    my $n = () = $content =~ /"\Q$name\E":\{/g;
    is($n, 1, "component $name is defined once");
}
my $ext = $schemas->{AdUnitExt}{properties};
is_deeply({ map { $_ => $ext->{$_}{default} } grep { exists $ext->{$_}{default} } keys %$ext }, {
    algorithm => 'axa0', approval_method => 'admin', bcat => [], default_cpa => 0, default_cpc => 0,
    display => { enabled => 0 }, metric_mode => 'all', native => { enabled => 0, render_mode => 'html' },
    payout => 'rates', recommendation => { enabled => 0 }, responsive => 'fixed', target_ecpm => 0,
    video => { enabled => 0 },
}, 'AdUnitExt: every default of the spec');
is($ext->{$_}{minimum}, 0, "AdUnitExt.$_ >= 0") for qw(default_cpa default_cpc target_ecpm);
is($schemas->{AdUnitExt}{additionalProperties}, JSON::PP::false, 'AdUnitExt: unknown properties refused');
is_deeply($ext->{publisher}, { oneOf => [ { '$ref' => '#/components/schemas/PublisherSettings' }, { type => 'null' } ] },
          'a nullable shape: oneOf its $ref and null');
is_deeply($ext->{target_service}{type}, [ 'string', 'null' ], 'a nullable string: a type array');
is_deeply($schemas->{AdUnitStatus}{enum}, [ qw(ACTIVE INACTIVE ARCHIVED) ], 'AdUnitStatus');
my $au = $schemas->{AdUnit};
is_deeply([ sort @{ $au->{required} } ], [ sort qw(id code created_by name path) ], 'AdUnit: the required fields');
ok($au->{properties}{$_}{readOnly}, "AdUnit.$_ is readOnly") for qw(id created_by path created_at updated_at);
is_deeply($au->{properties}{native}{default}, { assets => [] }, 'AdUnit.native default');
is_deeply($au->{properties}{recommendation}{default}, { ext => {}, topn => 10 }, 'AdUnit.recommendation default');
is($au->{properties}{status}{default}, 'INACTIVE', 'AdUnit.status default');
ok(!exists $schemas->{AdUnitPatch}{required}, 'the PATCH view requires nothing');
is_deeply($schemas->{Expr}{discriminator}{propertyName}, 'type', 'Expr: a discriminated union');
is_deeply([ sort keys %{ $schemas->{Expr}{discriminator}{mapping} } ], [ qw(and cmp not or) ], '... of cmp, and, or, not');
is_deeply([ sort keys %{ $schemas->{RecommendationFallback}{discriminator}{mapping} } ], [ qw(popular preset snapshot) ],
          'RecommendationFallback: popular, preset, snapshot');
is(scalar @{ $schemas->{AssetRequest}{anyOf} }, 4, 'AssetRequest: at least one of its four members');
is_deeply($schemas->{DisplayPlacement}{properties}{ampren}, { type => [ 'integer', 'null' ], minimum => 0, maximum => 255 },
          'bounds: DisplayPlacement.ampren 0..255 or null');
is_deeply($schemas->{PlaybackMethod}{enum}, [ 1 .. 7 ], 'an integer enum');

# ---- the validators ---------------------------------------------------------------------------------
sub write_json { my ($name, $data) = @_; my $f = "$tmp/$name"; open my $fh, '>', $f or die; print $fh (ref $data ? $JSON->encode($data) : $data); close $fh; $f }
sub validate {
    my $out = qx{node "$root/t/js/validate-openapi.mjs" @{[ map { quotemeta } @_ ]} 2>&1};
    return ($? >> 8, $out);
}

my $file = write_json('openapi.json', $content);
my ($rc, $out) = validate($file);
is($rc, 0, 'the document passes the OpenAPI 3.1 validator and the JSON Schema 2020-12 meta-schema') or diag $out;

my $rich = $t->api('POST', '/api/ad-units', json => {
    code => 'openapi-rich', name => 'Rich', status => 'ACTIVE', description => undef, gpid => 'g/1', no => 7,
    ad_unit_sizes => [ { w => 320, h => 50 } ],
    display => { event => [ { type => 2, method => [1], pxtrk => ['https://p.example/x'] } ], displayfmt => { expdir => 'Up' },
                 pos => 'Header', context => 'ArticleContent', ptype => 'Feed', mime => ['image/png'] },
    video => { comp => [ { display => { w => 300, h => 250 }, id => 'c1' } ], comptype => ['HTML'], delivery => ['Streaming'],
               playmethod => [1, 7], podseq => -1, playend => 'OnLeavingViewport', mincpmpersec => 0.5 },
    native => { assets => [ { id => 1, required => 1, img => { type => 3, w => 100, h => 100 } },
                            { id => 2, data => { type => 1, len => 90 } },
                            { id => 3, video => { minduration => 5, maxduration => 30, mimes => ['video/mp4'], protocols => [2, 3] } } ],
                plcmtcnt => 3 },
    recommendation => { topn => 5, ad_log_tracking_mode => 'on_ad_response', candidate_filtering => { method => 'ViewOut' },
                        content_filter_rule => { type => 'or', data => [ { type => 'cmp', data => { lhs => ['genre'], op => 'nin', rhs => [ 'horror' ] } } ] },
                        fallback => [ { type => 'preset', items => [ { id => 'item-1', expire => '2030-01-01T00:00:00.5+09:00' } ] } ] },
    ext => { publisher => { name => 'P' }, implicit_app_inference => { ua_keywords => ['Foo'] }, public_url => 'http://[::1]:8080/t' },
});
is($rich->{status}, 201, 'an ad unit with every nested shape') or diag $rich->{content};
my $instance = write_json('ad_unit.json', $rich->{json});
($rc, $out) = validate($file, AdUnit => $instance);
is($rc, 0, 'the API\'s answer validates against the AdUnit component') or diag $out;
my $list_instance = write_json('list.json', $t->api('GET', '/api/ad-units')->{json}{items}[0]);
($rc, $out) = validate($file, AdUnit => $list_instance, Error => write_json('err.json', $t->api('GET', '/api/ad-units/x')->{json}));
is($rc, 0, 'a listed item and an error answer validate too') or diag $out;

my $broken = $JSON->decode($content);
delete $broken->{info}{title};
($rc, $out) = validate(write_json('no-title.json', $broken));
isnt($rc, 0, 'a copy without info.title fails the validator');
like($out, qr/invalid/i, '... and says why');
$broken = $JSON->decode($content);
$broken->{components}{schemas}{AdUnit}{properties}{display} = { '$ref' => '#/components/schemas/NoSuchThing' };
($rc, $out) = validate(write_json('dangling.json', $broken));
isnt($rc, 0, 'a copy with a dangling $ref fails');
$broken = $JSON->decode($content);
$broken->{components}{schemas}{AdUnitSize}{properties}{w}{type} = 'whole-number';
($rc, $out) = validate(write_json('bad-type.json', $broken));
isnt($rc, 0, 'a copy with a schema that is not JSON Schema fails');
($rc, $out) = validate($file, AdUnit => write_json('bad-unit.json', { %{ $rich->{json} }, status => 'LIVE' }));
isnt($rc, 0, 'an ad unit that breaks its schema fails');

# ---- state machines: what the server takes, published for clients -------------------------------
is_deeply([ $schemas->{Order}{'x-state'}, $schemas->{Order}{'x-transitions'} ],
          [ 'status', [ { from => 'DRAFT', to => 'APPROVED', roles => [qw(admin operator)] },
                        { from => 'APPROVED', to => 'PAUSED' },
                        { from => 'PAUSED', to => 'APPROVED', roles => [qw(admin operator)] },
                        { from => undef, to => 'ARCHIVED' } ] ],
          'Order: x-state and x-transitions (from null: any state; roles absent: whoever may write)');
is_deeply([ map { "$_->{from}>$_->{to}" } grep { defined $_->{from} } @{ $schemas->{LineItem}{'x-transitions'} } ],
          [ 'DRAFT>ACTIVE', 'ACTIVE>PAUSED', 'PAUSED>ACTIVE', 'ACTIVE>COMPLETED', 'PAUSED>COMPLETED' ],
          'LineItem: its transitions');
ok($schemas->{Experiment}{'x-transitions'}, 'Experiment: its transitions');
ok(!exists $schemas->{AdUnit}{'x-transitions'}, 'none where the server takes any change (ad units)');
# and the server keeps to them: a change the document does not list is refused
my $adv_id = $t->created('/api/advertisers', { name => 'Machine' })->{id};
my $order = $t->created('/api/orders', { advertiser_id => $adv_id, name => 'Machine' });
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'Machine', type => 'STANDARD',
                                          cost_type => 'CPM', rate => 1 });
is($t->api('PATCH', "/api/line-items/$li->{id}", json => { status => 'COMPLETED' })->{status}, 409,
   'DRAFT to COMPLETED, which LineItem\'s x-transitions do not list: 409');
is($t->api('PATCH', "/api/line-items/$li->{id}", json => { status => 'ACTIVE' })->{status}, 200,
   '... DRAFT to ACTIVE, which they do: 200');

done_testing;
