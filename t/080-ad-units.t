# /api/ad-units: create, read, list, update, move and delete ad units
# through nginx and the sidecar, with the spec's shapes: every default after
# a minimal create, every nested shape's validation (422 naming the path),
# the hierarchy's paths (moves rewrite the subtree; cycles are 409), unique
# codes, each role on each endpoint, audit records, the revision, and the
# serving side seeing the change within 1 s.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;
my $UUID = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
my $TIME = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

sub detail_ok {
    my ($res, $status, $name, $like) = @_;
    is($res->{status}, $status, "$name: $status") or diag $res->{content};
    ok(defined $res->{json} && defined $res->{json}{detail} && !ref $res->{json}{detail}
       && length $res->{json}{detail}, "$name: a {detail} string");
    like($res->{json}{detail} // '', $like, "$name: the detail says why") if $like;
}

my $seq = 0;
sub create {
    my (%f) = @_;
    $seq++;
    return $t->api('POST', '/api/ad-units',
                   json => { code => "unit-$$-$seq", name => "Unit $seq", %f });
}

sub created {
    my $res = create(@_);
    is($res->{status}, 201, 'created') or diag $res->{content};
    return $res->{json};
}

sub get_unit { $t->api('GET', "/api/ad-units/$_[0]")->{json} }

# redis-cli's answer without its newline (Adserve::Test::redis chomps under
# `local $/`, which leaves it: reported to the lead)
sub rc { my $o = $t->redis(@_); $o =~ s/\n+\z//; return $o }

sub members { my @m = split ' ', rc('SMEMBERS', $_[0]); return sort @m }

sub revision { rc('GET', 'adserve:rev') || 0 }

# the audit stream as [{field => value}], oldest first
sub audit {
    my @lines = split /\n/, rc('XRANGE', 'adserve:audit', '-', '+');
    my (@records, $cur);
    for my $l (@lines) {
        if ($l =~ /^\d{13}-\d+$/) { push @records, $cur = {}; next }
        next unless $cur;
        if (exists $cur->{_key}) { $cur->{ delete $cur->{_key} } = $l } else { $cur->{_key} = $l }
    }
    return grep { ($_->{resource} // '') eq 'ad_unit' } @records;
}

my $me = $t->api('GET', '/api/auth/me')->{json};

# ---- a minimal create: the spec's defaults --------------------------------------------
my $rev0 = revision();
my $res = $t->api('POST', '/api/ad-units', json => { code => 'home-top', name => 'Home top' });
is($res->{status}, 201, 'POST with code and name only: 201');
my $u = $res->{json};
like($u->{id}, $UUID, 'the server chose a version 4 UUID');
like($u->{created_at}, $TIME, 'created_at is RFC 3339 UTC');
is_deeply($u, {
    id => $u->{id}, code => 'home-top', name => 'Home top', created_by => $me->{id},
    path => $u->{id}, parent_id => undef, created_at => $u->{created_at},
    updated_at => $u->{created_at}, instl => 0, is_active => JSON::PP::false,
    native => { assets => [] }, recommendation => { ext => {}, topn => 10 },
    status => 'INACTIVE',
}, 'the whole ad unit: the spec\'s defaults (instl 0, native, recommendation, INACTIVE); '
 . 'path = own id for a root; created_by = the caller');
is($res->{headers}{location}, "/api/ad-units/$u->{id}", 'Location names the new ad unit');
is_deeply(get_unit($u->{id}), $u, 'GET answers the same');
is_deeply(get_unit(uc $u->{id}), $u, 'an upper-case id is the same id');
is_deeply($JSON->decode(rc('HGET', 'adserve:ad_units', $u->{id})), $u,
          'Redis holds the response shape (data contract)');
is(rc('HGET', 'adserve:ad_unit_codes', 'home-top'), $u->{id}, 'the code index');
is(revision(), $rev0 + 1, 'the create bumped the revision once');

# ---- every nested shape's defaults ---------------------------------------------------------
my $full = created(
    display => { displayfmt => {}, event => [ { type => 1 } ] },
    video => { comp => [ { display => {} } ] },
    native => { assets => [ { id => 1, title => { len => 25 } } ] },
    ext => {},
    ad_unit_sizes => [ { w => 300, h => 250 } ],
    recommendation => {
        candidate_filtering => {},
        content_filter_rule => { type => 'and', data => [
            { type => 'cmp', data => { lhs => ['category'], op => 'in', rhs => ['a', 'b'] } },
            { type => 'not', data => { type => 'or', data => [
                { type => 'cmp', data => { lhs => ['kv', 'section'], op => 'eq', rhs => 'x' } } ] } } ] },
        fallback => [ { type => 'popular' }, { type => 'preset' },
                      { type => 'snapshot', path => 'snap/picks.txt' } ],
    },
);
is_deeply($full->{display}, {
    clktype => 1, displayfmt => {}, event => [ { type => 1, wjs => 1, wpx => 1 } ],
    h => 250, w => 300, priv => 0, unit => 2,
}, 'DisplayPlacement and EventSpec defaults (w 300, h 250, clktype 1, priv 0, unit 2, wjs/wpx 1)');
is_deeply($full->{video}, {
    boxing => 1, clktype => 1, comp => [ { display => { clktype => 1, priv => 0, unit => 2 } } ],
    delay => 0, h => 300, w => 480, linear => 0, maxdur => 0, mindur => 0, maxext => 0,
    podseq => 0, ptype => 1, skip => 0, skipafter => 0, skipmin => 0, slotinpod => 0, unit => 2,
}, 'VideoPlacement and Companion defaults');
is_deeply($full->{native}, { assets => [ { id => 1, title => { len => 25 } } ] }, 'NativePlacement');
is_deeply($full->{recommendation}, {
    topn => 10, ext => {},
    candidate_filtering => { method => 'NoFilter' },
    content_filter_rule => { type => 'and', data => [
        { type => 'cmp', data => { lhs => ['category'], op => 'in', rhs => ['a', 'b'] } },
        { type => 'not', data => { type => 'or', data => [
            { type => 'cmp', data => { lhs => ['kv', 'section'], op => 'eq', rhs => 'x' } } ] } } ] },
    fallback => [
        { type => 'popular', activation => 'except_timeout', serving_context => 'all' },
        { type => 'preset', activation => 'always', order => 'sequential', items => [] },
        { type => 'snapshot', path => 'snap/picks.txt', activation => 'always', order => 'sequential' },
    ],
}, 'RecommendationPlacement, Expr, fallbacks and candidate_filtering defaults');
is_deeply($full->{ext}, {
    algorithm => 'axa0', approval_method => 'admin', bcat => [], default_cpa => 0,
    default_cpc => 0, display => { enabled => 0 }, metric_mode => 'all',
    native => { enabled => 0, render_mode => 'html' }, payout => 'rates',
    recommendation => { enabled => 0 }, responsive => 'fixed', target_ecpm => 0,
    video => { enabled => 0 },
}, 'AdUnitExt defaults when ext is sent');
my $nulls = created(description => undef, gpid => undef, ad_unit_sizes => undef, no => undef,
                    display => { ampren => undef, w => undef, h => undef });
ok(exists $nulls->{description} && !defined $nulls->{description}, 'a nullable field sent as null stays null');
is_deeply([ @{ $nulls->{display} }{qw(w h)} ], [ undef, undef ], 'display w/h null stay null (no default over null)');

# ---- validation: every nested shape, the detail naming the path -----------------------------
my $count = $t->api('GET', '/api/ad-units')->{json}{total};
my $rev = revision();
my @invalid = (
    [ 'no code',                { code => undef },                    qr/^code: must not be null/ ],
    [ 'unknown top-level',      { colour => 'red' },                   qr/^colour: unknown property/ ],
    [ 'read-only id',           { id => '6f1c2f4e-4b8a-4a57-9d1e-3f2a1b0c9d8e' }, qr/^id: is read-only/ ],
    [ 'read-only path',         { path => 'x' },                       qr/^path: is read-only/ ],
    [ 'empty code',             { code => '' },                        qr/^code: must not be empty/ ],
    [ 'name not a string',      { name => 42 },                        qr/^name: must be a string/ ],
    [ 'bad status',             { status => 'LIVE' },                  qr/^status: must be one of ACTIVE, INACTIVE, ARCHIVED/ ],
    [ 'instl 2',                { instl => 2 },                        qr/^instl: must be one of 0, 1/ ],
    [ 'instl fractional',       { instl => 0.5 },                      qr/^instl: must be an integer/ ],
    [ 'parent_id not a uuid',   { parent_id => 'nope' },               qr/^parent_id: must be a UUID/ ],
    [ 'negative size',          { ad_unit_sizes => [ { w => -1, h => 1 } ] }, qr/^ad_unit_sizes\[0\]\.w: must be >= 0/ ],
    [ 'size without h',         { ad_unit_sizes => [ { w => 1 } ] },   qr/^ad_unit_sizes\[0\]\.h: is required/ ],
    [ 'display clktype',        { display => { clktype => 4 } },       qr/^display\.clktype: must be one of 0, 1, 2, 3/ ],
    [ 'display ampren',         { display => { ampren => 256 } },      qr/^display\.ampren: must be between 0 and 255/ ],
    [ 'display api item',       { display => { api => [ 1, 70000 ] } }, qr/^display\.api\[1\]: must be between 0 and 65535/ ],
    [ 'display pos',            { display => { pos => 'Middle' } },    qr/^display\.pos: must be one of Unknown, AboveTheFold/ ],
    [ 'display context',        { display => { context => 'Radio' } }, qr/^display\.context: must be one of ContentCentric/ ],
    [ 'display event type',     { display => { event => [ { type => 1 }, { type => 2 }, { type => 6 } ] } },
                                qr/^display\.event\[2\]\.type: must be one of 1, 2, 3, 4, 5/ ],
    [ 'event without type',     { display => { event => [ {} ] } },    qr/^display\.event\[0\]\.type: is required/ ],
    [ 'event method',           { display => { event => [ { type => 1, method => [3] } ] } },
                                qr/^display\.event\[0\]\.method\[0\]: must be one of 1, 2/ ],
    [ 'displayfmt unknown',     { display => { displayfmt => { depth => 1 } } }, qr/^display\.displayfmt\.depth: unknown property/ ],
    [ 'displayfmt expdir',      { display => { displayfmt => { expdir => 'Sideways' } } }, qr/^display\.displayfmt\.expdir: must be one of Left/ ],
    [ 'display mime null',      { display => { mime => undef } },      qr/^display\.mime: must not be null/ ],
    [ 'display unit',           { display => { unit => 0 } },          qr/^display\.unit: must be one of 1, 2, 3/ ],
    [ 'video ptype',            { video => { ptype => 6 } },           qr/^video\.ptype: must be one of 1, 2, 3, 4, 5/ ],
    [ 'video playmethod',       { video => { playmethod => [ 8 ] } },  qr/^video\.playmethod\[0\]: must be one of 1, 2, 3, 4, 5, 6, 7/ ],
    [ 'video podseq',           { video => { podseq => 2 } },          qr/^video\.podseq: must be one of -1, 0, 1/ ],
    [ 'video slotinpod',        { video => { slotinpod => 3 } },       qr/^video\.slotinpod: must be one of -1, 0, 1, 2/ ],
    [ 'video comptype',         { video => { comptype => [ 'Flash' ] } }, qr/^video\.comptype\[0\]: must be one of Static, HTML, IFrame/ ],
    [ 'video delivery',         { video => { delivery => [ 'Carrier' ] } }, qr/^video\.delivery\[0\]: must be one of Streaming/ ],
    [ 'video playend',          { video => { playend => 'Never' } },   qr/^video\.playend: must be one of OnVideoCompletion/ ],
    [ 'video negative h',       { video => { h => -1 } },              qr/^video\.h: must be >= 0/ ],
    [ 'video skip',             { video => { skip => 2 } },            qr/^video\.skip: must be one of 0, 1/ ],
    [ 'companion clktype',      { video => { comp => [ { display => { clktype => 256 } } ] } },
                                qr/^video\.comp\[0\]\.display\.clktype: must be between 0 and 255/ ],
    [ 'companion unknown',      { video => { comp => [ { size => 1 } ] } }, qr/^video\.comp\[0\]\.size: unknown property/ ],
    [ 'asset with no member',   { native => { assets => [ { id => 1 } ] } },
                                qr/^native\.assets\[0\]: must have at least one of title, img, video, data/ ],
    [ 'asset with null member', { native => { assets => [ { id => 1, title => undef } ] } },
                                qr/^native\.assets\[0\]: must have at least one of/ ],
    [ 'asset without id',       { native => { assets => [ { title => { len => 1 } } ] } }, qr/^native\.assets\[0\]\.id: is required/ ],
    [ 'native video member',    { native => { assets => [ { id => 1, video => { minduration => 1 } } ] } },
                                qr/^native\.assets\[0\]\.video\.maxduration: is required/ ],
    [ 'native data unknown',    { native => { assets => [ { id => 1, data => { type => 1, label => 'x' } } ] } },
                                qr/^native\.assets\[0\]\.data\.label: unknown property/ ],
    [ 'native img type',        { native => { assets => [ { id => 1, img => { type => 65536 } } ] } },
                                qr/^native\.assets\[0\]\.img\.type: must be between 0 and 65535/ ],
    [ 'native plcmtcnt',        { native => { plcmtcnt => 0 } },      qr/^native\.plcmtcnt: must be between 1 and 255/ ],
    [ 'topn 100',               { recommendation => { topn => 100 } }, qr/^recommendation\.topn: must be between 0 and 99/ ],
    [ 'topn fractional',        { recommendation => { topn => 1.5 } }, qr/^recommendation\.topn: must be an integer/ ],
    [ 'ext free-form not object', { recommendation => { ext => [] } }, qr/^recommendation\.ext: must be an object/ ],
    [ 'tracking mode',          { recommendation => { ad_log_tracking_mode => 'never' } },
                                qr/^recommendation\.ad_log_tracking_mode: must be one of on_ad_response, on_event_tracker/ ],
    [ 'filtering method',       { recommendation => { candidate_filtering => { method => 'Random' } } },
                                qr/^recommendation\.candidate_filtering\.method: must be one of NoFilter, ViewPenalty, ViewOut/ ],
    [ 'Expr unknown tag',       { recommendation => { content_filter_rule => { type => 'xor', data => [] } } },
                                qr/^recommendation\.content_filter_rule\.type: must be one of cmp, and, or, not/ ],
    [ 'Expr without tag',       { recommendation => { content_filter_rule => { data => [] } } },
                                qr/^recommendation\.content_filter_rule\.type: is required/ ],
    [ 'Expr bad op',            { recommendation => { content_filter_rule => {
                                    type => 'cmp', data => { lhs => ['a'], op => 'like', rhs => 1 } } } },
                                qr/^recommendation\.content_filter_rule\.data\.op: must be one of eq, ne/ ],
    [ 'nested Expr',            { recommendation => { content_filter_rule => { type => 'and', data => [
                                    { type => 'not', data => { type => 'cmp', data => { lhs => ['a'], op => 'eq' } } } ] } } },
                                qr/^recommendation\.content_filter_rule\.data\[0\]\.data\.data\.rhs: is required/ ],
    [ 'Expr and with object',   { recommendation => { content_filter_rule => { type => 'and', data => {} } } },
                                qr/^recommendation\.content_filter_rule\.data: must be an array/ ],
    [ 'fallback unknown tag',   { recommendation => { fallback => [ { type => 'random' } ] } },
                                qr/^recommendation\.fallback\[0\]\.type: must be one of popular, preset, snapshot/ ],
    [ 'fallback without tag',   { recommendation => { fallback => [ {} ] } },
                                qr/^recommendation\.fallback\[0\]\.type: is required/ ],
    [ 'snapshot without path',  { recommendation => { fallback => [ { type => 'preset' }, { type => 'snapshot' } ] } },
                                qr/^recommendation\.fallback\[1\]\.path: is required/ ],
    [ 'popular has no order',   { recommendation => { fallback => [ { type => 'popular', order => 'random' } ] } },
                                qr/^recommendation\.fallback\[0\]\.order: unknown property/ ],
    [ 'preset activation',      { recommendation => { fallback => [ { type => 'preset', activation => 'sometimes' } ] } },
                                qr/^recommendation\.fallback\[0\]\.activation: must be one of always, except_timeout, timeout_only/ ],
    [ 'item expire Feb 30',     { recommendation => { fallback => [ { type => 'preset', items => [
                                    { id => 'x', expire => '2024-02-30T00:00:00Z' } ] } ] } },
                                qr/^recommendation\.fallback\[0\]\.items\[0\]\.expire: must be an RFC 3339 date-time/ ],
    [ 'item expire no zone',    { recommendation => { fallback => [ { type => 'preset', items => [
                                    { id => 'x', expire => '2024-02-01T00:00:00' } ] } ] } },
                                qr/expire: must be an RFC 3339 date-time/ ],
    [ 'ext unknown',            { ext => { colour => 1 } },            qr/^ext\.colour: unknown property/ ],
    [ 'ext render_mode',        { ext => { native => { render_mode => 'svg' } } }, qr/^ext\.native\.render_mode: must be one of html, asset/ ],
    [ 'ext negative cpa',       { ext => { default_cpa => -0.01 } },   qr/^ext\.default_cpa: must be between 0 and 999999/ ],
    [ 'ext public_url',         { ext => { public_url => 'ftp://files.example/x' } }, qr/^ext\.public_url: must be an absolute http or https URL/ ],
    [ 'ext publisher unknown',  { ext => { publisher => { owner => 'x' } } }, qr/^ext\.publisher\.owner: unknown property/ ],
    [ 'ext inference keywords', { ext => { implicit_app_inference => { ua_keywords => undef } } },
                                qr/^ext\.implicit_app_inference\.ua_keywords: must not be null/ ],
    [ 'deep nesting',           { recommendation => { content_filter_rule =>
                                    (sub { my $e = { type => 'cmp', data => { lhs => ['a'], op => 'eq', rhs => 1 } };
                                           $e = { type => 'not', data => $e } for 1 .. 40; $e })->() } },
                                qr/nested more than 64 levels deep/ ],
);
for my $case (@invalid) {
    my ($name, $fields, $like) = @$case;
    detail_ok(create(%$fields), 422, $name, $like);
}
detail_ok($t->api('POST', '/api/ad-units', json => { name => 'x' }), 422, 'no code', qr/^code: is required/);
detail_ok($t->api('POST', '/api/ad-units', json => { code => 'x' }), 422, 'no name', qr/^name: is required/);
detail_ok($t->api('POST', '/api/ad-units', body => qq({"code":"\xff","name":"x"}),
                  headers => { 'content-type' => 'application/json' }),
          422, 'invalid UTF-8', qr/^code: must be valid UTF-8/);
detail_ok($t->api('POST', '/api/ad-units', body => '{"code":"a","name":"b","code":"c"}',
                  headers => { 'content-type' => 'application/json' }),
          422, 'a repeated member', qr/^code: duplicate property/);
detail_ok($t->api('POST', '/api/ad-units', body => '{"code":', headers => { 'content-type' => 'application/json' }),
          400, 'malformed JSON');
detail_ok(create(parent_id => '6f1c2f4e-4b8a-4a57-9d1e-3f2a1b0c9d8e'), 422, 'an unknown parent',
          qr/^parent_id: no such ad unit/);
is($t->api('GET', '/api/ad-units')->{json}{total}, $count, 'no invalid request wrote anything');
is(revision(), $rev, '... nor bumped the revision');

# ---- codes are unique ------------------------------------------------------------------------
detail_ok($t->api('POST', '/api/ad-units', json => { code => 'home-top', name => 'again' }),
          409, 'a duplicate code', qr/code/);
my $other = created();
detail_ok($t->api('PATCH', "/api/ad-units/$other->{id}", json => { code => 'home-top' }),
          409, 'PATCH to a code in use', qr/code/);
$res = $t->api('PATCH', "/api/ad-units/$other->{id}", json => { code => 'home-side' });
is($res->{status}, 200, 'PATCH to a free code');
is(rc('HGET', 'adserve:ad_unit_codes', 'home-side'), $other->{id}, 'the index follows the new code');
is(rc('HEXISTS', 'adserve:ad_unit_codes', $other->{code}), 0, 'and forgets the old one');
is($t->api('POST', '/api/ad-units', json => { code => $other->{code}, name => 'reuse' })->{status}, 201,
   'the old code is free again');

# ---- PATCH: partial, nested objects replaced whole, no-ops write nothing -------------------------
sleep 1.05;    # updated_at has second precision
$res = $t->api('PATCH', "/api/ad-units/$u->{id}", json => { name => 'Home top (new)', display => { w => 728, h => 90 } });
is($res->{status}, 200, 'PATCH name and display');
my $p = $res->{json};
is($p->{name}, 'Home top (new)', 'the name changed');
is($p->{code}, 'home-top', 'the code did not');
is_deeply($p->{display}, { clktype => 1, h => 90, w => 728, priv => 0, unit => 2 },
          'a nested object sent is normalised whole (defaults for its omitted fields)');
is($p->{created_at}, $u->{created_at}, 'created_at kept');
cmp_ok($p->{updated_at}, 'gt', $u->{updated_at}, 'updated_at moved');
$rev = revision();
my $audits = () = audit();
$res = $t->api('PATCH', "/api/ad-units/$u->{id}", json => {});
is($res->{status}, 200, 'an empty PATCH: 200');
is_deeply($res->{json}, $p, '... with the unit unchanged');
$res = $t->api('PATCH', "/api/ad-units/$u->{id}", json => { name => 'Home top (new)' });
is_deeply($res->{json}, $p, 'a PATCH that changes nothing: unchanged, updated_at too');
is(revision(), $rev, 'no-op PATCHes do not bump the revision');
is(scalar(() = audit()), $audits, '... nor write audit records');
detail_ok($t->api('PATCH', "/api/ad-units/$u->{id}", json => { created_at => '2024-01-01T00:00:00Z' }),
          422, 'PATCH a read-only field', qr/^created_at: is read-only/);
detail_ok($t->api('PATCH', "/api/ad-units/$u->{id}", json => { name => undef }), 422, 'PATCH name null',
          qr/^name: must not be null/);
detail_ok($t->api('PATCH', "/api/ad-units/$u->{id}", json => { video => { linear => 3 } }), 422,
          'PATCH a bad nested value', qr/^video\.linear: must be one of 0, 1, 2/);
detail_ok($t->api('PATCH', "/api/ad-units/$u->{id}", json => { foo => 1 }), 422, 'PATCH an unknown field',
          qr/^foo: unknown property/);

# ---- the hierarchy: paths, moves, cycles -----------------------------------------------------------
my $root = created();
my $mid = created(parent_id => $root->{id});
my $leaf = created(parent_id => $mid->{id});
my $leaf2 = created(parent_id => $mid->{id});
is($mid->{path}, "$root->{id}/$mid->{id}", 'a child\'s path: the parent\'s path, a slash, its id');
is($leaf->{path}, "$root->{id}/$mid->{id}/$leaf->{id}", 'a grandchild\'s path');
is_deeply([ members("adserve:ad_unit_children:$mid->{id}") ],
          [ sort $leaf->{id}, $leaf2->{id} ], 'the children index');

my $root2 = created();
$rev = revision();
$res = $t->api('PATCH', "/api/ad-units/$mid->{id}", json => { parent_id => $root2->{id} });
is($res->{status}, 200, 'a move under another root');
is($res->{json}{path}, "$root2->{id}/$mid->{id}", 'the moved unit\'s path');
is(get_unit($leaf->{id})->{path}, "$root2->{id}/$mid->{id}/$leaf->{id}", 'a descendant\'s path followed');
is(get_unit($leaf2->{id})->{path}, "$root2->{id}/$mid->{id}/$leaf2->{id}", 'every descendant\'s');
is(revision(), $rev + 1, 'the move and its subtree: one transaction, one revision');
is(rc('SISMEMBER', "adserve:ad_unit_children:$root->{id}", $mid->{id}), 0, 'unlinked from the old parent');
is(rc('SISMEMBER', "adserve:ad_unit_children:$root2->{id}", $mid->{id}), 1, 'linked to the new one');
my @moves = grep { $_->{action} eq 'move' } audit();
is_deeply([ sort map { $_->{id} } @moves[-2, -1] ], [ sort $leaf->{id}, $leaf2->{id} ],
          'an audit record per moved descendant');

detail_ok($t->api('PATCH', "/api/ad-units/$root2->{id}", json => { parent_id => $leaf->{id} }),
          409, 'a move under its own descendant', qr/descendant/);
detail_ok($t->api('PATCH', "/api/ad-units/$mid->{id}", json => { parent_id => $mid->{id} }),
          409, 'a move under itself', qr/own parent/);
detail_ok($t->api('PATCH', "/api/ad-units/$mid->{id}", json => { parent_id => '6f1c2f4e-4b8a-4a57-9d1e-3f2a1b0c9d8e' }),
          422, 'a move under an unknown parent', qr/^parent_id: no such ad unit/);
is(get_unit($mid->{id})->{path}, "$root2->{id}/$mid->{id}", 'refused moves changed nothing');

$res = $t->api('PATCH', "/api/ad-units/$mid->{id}", json => { parent_id => undef });
is($res->{json}{path}, $mid->{id}, 'a move to the top: the path is the id');
is(get_unit($leaf->{id})->{path}, "$mid->{id}/$leaf->{id}", '... and the subtree follows');

$res = $t->api('GET', "/api/ad-units?parent_id=$mid->{id}");
is_deeply([ sort map { $_->{id} } @{ $res->{json}{items} } ], [ sort $leaf->{id}, $leaf2->{id} ],
          '?parent_id= lists the direct children');

# concurrent moves never corrupt paths: every unit's path is its parent's path plus its id
my @pool = map { created() } 1 .. 6;
my @kids;
for my $w (1 .. 4) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        srand($$);
        for (1 .. 12) {
            my ($a, $b) = map { $pool[rand @pool] } 1 .. 2;
            $t->api('PATCH', "/api/ad-units/$a->{id}",
                    json => { parent_id => rand() < 0.2 ? undef : $b->{id} });
        }
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
waitpid $_, 0 for @kids;
my %by_id = map { $_->{id} => $_ } map { get_unit($_->{id}) } @pool;
my $consistent = 1;
for my $x (values %by_id) {
    my $want = defined $x->{parent_id} ? "$by_id{ $x->{parent_id} }{path}/$x->{id}" : $x->{id};
    $consistent &&= $x->{path} eq $want;
}
ok($consistent, 'after 48 concurrent moves every path is its parent\'s path plus its id')
    or diag explain [ values %by_id ];
my %linked;
for my $x (values %by_id) {
    $linked{$_} = $x->{id} for members("adserve:ad_unit_children:$x->{id}");
}
is_deeply(\%linked, { map { $_->{id} => $_->{parent_id} } grep { defined $_->{parent_id} } values %by_id },
          '... and the children index matches every parent_id');

# ---- delete ---------------------------------------------------------------------------------------
detail_ok($t->api('DELETE', "/api/ad-units/$mid->{id}"), 409, 'delete with children', qr/children/);
is($t->api('DELETE', "/api/ad-units/$leaf->{id}")->{status}, 204, 'delete a leaf: 204');
is($t->api('DELETE', "/api/ad-units/$leaf2->{id}")->{status}, 204, 'delete the other leaf');
$res = $t->api('DELETE', "/api/ad-units/$mid->{id}");
is($res->{status}, 204, 'a unit without children deletes');
is($res->{content} // '', '', '... with no body');
detail_ok($t->api('GET', "/api/ad-units/$mid->{id}"), 404, 'a deleted unit');
detail_ok($t->api('DELETE', "/api/ad-units/$mid->{id}"), 404, 'deleted twice');
is(rc('HEXISTS', 'adserve:ad_unit_codes', $mid->{code}), 0, 'its code is free');
is(rc('EXISTS', "adserve:ad_unit_children:$mid->{id}"), 0, 'its children set is gone');
for my $m (qw(GET PATCH DELETE)) {
    detail_ok($t->api($m, '/api/ad-units/not-a-uuid', $m eq 'PATCH' ? (json => {}) : ()), 404,
              "$m with an id that is not a UUID");
}

# ---- audit records -----------------------------------------------------------------------------------
my ($create) = grep { $_->{action} eq 'create' && $_->{id} eq $u->{id} } audit();
ok($create, 'the create has an audit record');
is($create->{actor}, $me->{id}, '... by the caller');
is($create->{before}, 'null', '... with no before');
is_deeply($JSON->decode($create->{after}), $u, '... and the unit as after');
my ($update) = grep { $_->{action} eq 'update' && $_->{id} eq $u->{id} } audit();
is_deeply([ map { $JSON->decode($update->{$_})->{name} } qw(before after) ], [ 'Home top', 'Home top (new)' ],
          'an update records before and after');
my ($delete) = grep { $_->{action} eq 'delete' && $_->{id} eq $mid->{id} } audit();
ok($delete && $delete->{after} eq 'null' && $JSON->decode($delete->{before})->{id} eq $mid->{id},
   'a delete records the unit as before, null after');

# ---- paging and filters --------------------------------------------------------------------------------
my @page_units = map { created(code => "page-$_", name => "Paged $_", status => $_ % 2 ? 'ACTIVE' : 'INACTIVE') } 1 .. 7;
my $all = $t->api('GET', '/api/ad-units?limit=500')->{json};
is($all->{total}, scalar @{ $all->{items} }, 'total counts every match');
my @order = map { $_->{id} } @{ $all->{items} };
is_deeply(\@order, [ map { $_->{id} } sort { $a->{created_at} cmp $b->{created_at} || $a->{id} cmp $b->{id} }
                     @{ $all->{items} } ], 'oldest first, then by id');
my @paged;
for (my $off = 0; $off < $all->{total}; $off += 4) {
    my $pg = $t->api('GET', "/api/ad-units?limit=4&offset=$off")->{json};
    is($pg->{total}, $all->{total}, "page at $off: the same total");
    push @paged, map { $_->{id} } @{ $pg->{items} };
}
is_deeply(\@paged, \@order, 'pages of 4 add up to the whole list, in order');
is_deeply($t->api('GET', "/api/ad-units?offset=$all->{total}")->{json}{items}, [], 'an offset past the end: no items');
$res = $t->api('GET', '/api/ad-units?q=PAGED');
is_deeply([ sort map { $_->{code} } @{ $res->{json}{items} } ], [ map { "page-$_" } 1 .. 7 ],
          '?q= matches names case-insensitively');
is($t->api('GET', '/api/ad-units?q=page-3')->{json}{total}, 1, '?q= matches codes');
$res = $t->api('GET', '/api/ad-units?status=ACTIVE&q=page');
is_deeply([ sort map { $_->{code} } @{ $res->{json}{items} } ], [ map { "page-$_" } 1, 3, 5, 7 ],
          '?status= filters (with ?q=)');
for my $bad ([ 'limit=0', qr/^limit: must be between 1 and 500/ ], [ 'limit=501', qr/^limit/ ],
             [ 'limit=ten', qr/^limit: must be an integer/ ], [ 'limit=2.5', qr/^limit: must be an integer/ ],
             [ 'offset=-1', qr/^offset: must be >= 0/ ], [ 'status=LIVE', qr/^status: must be one of/ ],
             [ 'parent_id=x', qr/^parent_id: must be a UUID/ ], [ 'sort=name', qr/^sort: unknown property/ ],
             [ 'limit=1&limit=2', qr/^limit: duplicate property/ ]) {
    detail_ok($t->api('GET', "/api/ad-units?$bad->[0]"), 422, "?$bad->[0]", $bad->[1]);
}
created() for 1 .. 50 - $all->{total} + 1;
$res = $t->api('GET', '/api/ad-units')->{json};
is(scalar @{ $res->{items} }, 50, 'the default limit is 50');
cmp_ok($res->{total}, '>', 50, '... of more');

# ---- serving sees the change within 1 s -------------------------------------------------------------------
my $live = created();
is($t->ad($live->{id})->{status}, 404, 'an INACTIVE ad unit does not serve (404)');
$res = $t->api('PATCH', "/api/ad-units/$live->{id}", json => { status => 'ACTIVE' });
ok($res->{json}{is_active}, 'is_active follows status');
ok($t->wait_until(1, sub { $t->ad($live->{id})->{status} == 204 }),
   'once ACTIVE, serving answers it (204: no line item yet) within 1 s');
my $fresh = created(status => 'ACTIVE');
ok($t->wait_until(1, sub { $t->ad($fresh->{id})->{status} == 204 }), 'a POSTed ACTIVE ad unit serves within 1 s');
$t->api('DELETE', "/api/ad-units/$fresh->{id}");
ok($t->wait_until(1, sub { $t->ad($fresh->{id})->{status} == 404 }), 'a deleted one is gone within 1 s');

# ---- roles -----------------------------------------------------------------------------------------------------
sub make_user {
    my ($role) = @_;
    my @cred = ("$role-$$\@example.com", "pw-$role-0123456789");
    my $r = $t->api('POST', '/api/users', json => {
        email => $cred[0], password => $cred[1], role => $role,
        $role eq 'advertiser' ? (advertiser_id => $t->advertiser_id) : () });
    return $r->{status} == 201 ? \@cred : undef;
}
my $operator = make_user('operator');
my $advertiser = make_user('advertiser');
SKIP: {
    skip 'POST /api/users is not available: role tests need other users', 1 unless $operator && $advertiser;
    my %as = (as => $operator);
    $res = $t->api('POST', '/api/ad-units', %as, json => { code => "op-$$", name => 'by operator' });
    is($res->{status}, 201, 'operator: POST 201');
    my $op = $res->{json};
    isnt($op->{created_by}, $me->{id}, 'created_by is the operator');
    is($t->api('GET', '/api/ad-units', %as)->{status}, 200, 'operator: list 200');
    is($t->api('GET', "/api/ad-units/$op->{id}", %as)->{status}, 200, 'operator: GET 200');
    is($t->api('PATCH', "/api/ad-units/$op->{id}", %as, json => { name => 'x' })->{status}, 200, 'operator: PATCH 200');
    is($t->api('DELETE', "/api/ad-units/$op->{id}", %as)->{status}, 204, 'operator: DELETE 204');

    %as = (as => $advertiser);
    detail_ok($t->api('GET', '/api/ad-units', %as), 403, 'advertiser: list');
    detail_ok($t->api('POST', '/api/ad-units', %as, json => { code => 'adv', name => 'adv' }), 403, 'advertiser: POST');
    my $unknown = Adserve::Test::uuid();
    for my $id ($u->{id}, $unknown) {
        my $which = $id eq $unknown ? 'an unknown id' : 'an existing id';
        my @r = ($t->api('GET', "/api/ad-units/$id", %as),
                 $t->api('PATCH', "/api/ad-units/$id", %as, json => { name => 'mine' }),
                 $t->api('DELETE', "/api/ad-units/$id", %as));
        detail_ok($r[0], 404, "advertiser: GET $which");
        detail_ok($r[1], 404, "advertiser: PATCH $which");
        detail_ok($r[2], 404, "advertiser: DELETE $which");
    }
    is(get_unit($u->{id})->{name}, 'Home top (new)', 'the advertiser changed nothing');
}
for my $call ([ 'GET', '/api/ad-units' ], [ 'POST', '/api/ad-units' ], [ 'GET', "/api/ad-units/$u->{id}" ],
              [ 'PATCH', "/api/ad-units/$u->{id}" ], [ 'DELETE', "/api/ad-units/$u->{id}" ]) {
    detail_ok($t->request($call->[0], $call->[1], json => {}), 401, "no token: $call->[0] $call->[1]");
}

# ---- size and depth limits (found in review) -------------------------------------
{
    my $big = 'x' x 70000;
    my $res = $t->api('POST', '/api/ad-units', json => { code => 'huge', name => 'Huge',
                                                        ext => { passback => { tag => $big } } });
    is($res->{status}, 422, 'an ad unit over 64 KiB once stored is refused');
    like($res->{json}{detail}, qr/more than 65536/, '... saying how large it may be');
    my $made = $t->api('POST', '/api/ad-units', json => { code => 'grows', name => 'Grows',
                        ext => { passback => { tag => 'y' x 40000 } } });
    is($made->{status}, 201, 'one of 40 KB is fine');
    $res = $t->api('PATCH', "/api/developer/control/ad-units/$made->{json}{id}/ext",
                   json => { ext => { passback => { tag => 'y' x 40000 },
                                      external_raw_data => { more => 'z' x 40000 } } });
    is($res->{status}, 422, 'endpoint 1 cannot grow it past the limit');
    $res = $t->api('PATCH', "/api/ad-units/$made->{json}{id}",
                   json => { description => 'd' x 30000 });
    is($res->{status}, 422, 'nor can a PATCH');
    my $deep = 1;
    $deep = { d => $deep } for 1 .. 70;
    $res = $t->api('POST', '/api/ad-units', json => { code => 'deep', name => 'Deep',
                                                     ext => { external_raw_data => $deep } });
    is($res->{status}, 422, 'a free-form value nested more than 64 levels is refused');
    like($res->{json}{detail}, qr/nested more than 64 levels/, '... saying so');
}

done_testing;
