# Line item targeting (sidecar/targeting.c) through POST /api/line-items:
# the shape with its defaults, and every refusal of a rule serving could
# not evaluate, each a 422 whose detail names the path: the shape (unknown
# properties at every level, enums, bounds), ad units and placements that
# do not exist, an ad unit both included and excluded, yob_max < yob_min,
# dayparts, and kv (unknown keys, a PREDEFINED key's unknown values, the
# op / rhs agreement, the depth, comparison and value limits). The keys and
# values are made through the API, so the Redis layout the two sides agreed
# on is exercised end to end. Also: PATCH and the batch refuse the same way.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

# Targeting is a part of line items, which another change brings; once its
# handler is in the tree this test runs (and fails loudly if the route is
# missing).
plan skip_all => 'waits for line items (sidecar/api_line_items.c)'
    unless -e "$Adserve::Test::ROOT/sidecar/api_line_items.c";

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub created {
    my ($path, $body) = @_;
    my $res = $t->api('POST', $path, json => $body);
    is($res->{status}, 201, "POST $path: 201") or diag $res->{content};
    return $res->{json} // {};
}

sub deleted {
    my ($path) = @_;
    my $res = $t->api('DELETE', $path);
    is($res->{status}, 204, "DELETE $path: 204") or diag $res->{content};
}

# ---- what targeting refers to -----------------------------------------------------------
my $adv = created('/api/advertisers', { name => "Targeting $$" });
my $order = created('/api/orders', { advertiser_id => $adv->{id}, name => 'Targeting order' });
my @units = map { created('/api/ad-units', { code => "tgt-$$-$_", name => "Unit $_" }) } 1 .. 2;
my ($u0, $u1) = map { $_->{id} } @units;
my $placement = created('/api/placements', { name => 'Sports', ad_unit_ids => [$u0] })->{id};
my $unknown = Adserve::Test::uuid();

my $keys = '/api/custom-targeting/keys';
my $section = created($keys, { name => 'section', type => 'PREDEFINED' })->{id};
created("$keys/$section/values", { name => $_ }) for qw(news weather);
my $gone = created("$keys/$section/values", { name => 'gone' })->{id};
deleted("$keys/$section/values/$gone");
my $color = created($keys, { name => 'color', type => 'PREDEFINED' })->{id};
created("$keys/$color/values", { name => 'sport' });
created($keys, { name => 'q', type => 'FREEFORM' });
my $old = created($keys, { name => 'old', type => 'FREEFORM' })->{id};
deleted("$keys/$old");

my $seq = 0;
sub line_item_body {
    my ($targeting) = @_;
    $seq++;
    return { order_id => $order->{id}, name => "Targeted $seq", type => 'STANDARD',
             cost_type => 'CPM', rate => 1, targeting => $targeting };
}
sub line_item { $t->api('POST', '/api/line-items', json => line_item_body(@_)) }

sub accepted {
    my ($targeting, $name) = @_;
    my $res = line_item($targeting);
    is($res->{status}, 201, "$name: 201") or diag $res->{content};
    return $res->{json};
}

sub refused {
    my ($targeting, $detail, $name) = @_;
    my $res = line_item($targeting);
    is($res->{status}, 422, "$name: 422") or diag $res->{content};
    is($res->{json} && $res->{json}{detail}, $detail, "$name: the detail names the path");
}

sub cmp_ {
    my ($key, $op, $rhs) = @_;
    return { type => 'cmp', data => { lhs => [$key], op => $op, rhs => $rhs } };
}
sub kv { refused({ kv => $_[0] }, "targeting.kv$_[1]", $_[2]) }

# ---- the shape: defaults, and a whole rule kept as sent ---------------------------------------
my $li = accepted({}, 'empty targeting');
is_deeply($li->{targeting}, {
    ad_units => { include => [], exclude => [] }, placements => [], sizes => [], kv => undef,
    device => { types => [], os => [], browsers => [] },
    user => { yob_min => undef, yob_max => undef, genders => [] }, dayparts => [],
    segments => { include => [], exclude => [] },
}, 'every default: empty lists, kv and the year bounds null') or diag $JSON->encode($li->{targeting});

my %full = (
    ad_units => { include => [$u0], exclude => [$u1] }, placements => [$placement],
    sizes => [{ w => 300, h => 250 }, { w => 0, h => 0 }],
    kv => { type => 'and', data => [
        cmp_('section', 'in', [qw(news weather news)]),
        { type => 'not', data => cmp_('color', 'eq', 'sport') },
        { type => 'or', data => [cmp_('q', 'intersects', ['any', 3]), cmp_('q', 'ge', 2.5),
                                 cmp_('q', 'ne', 'free text')] },
    ] },
    device => { types => ['mobile', 'tablet'], os => ['ios'], browsers => ['safari'] },
    user => { yob_min => 1970, yob_max => 1970, genders => ['F', 'O'] },
    dayparts => [{ days => ['sat', 'sun'], start => '00:00', end => '24:00' },
                 { days => ['mon'], start => '09:30', end => '17:00', tz => 'UTC' }],
);
$li = accepted(\%full, 'every part used');
my %want = (%full, dayparts => [{ %{ $full{dayparts}[0] }, tz => 'UTC' }, $full{dayparts}[1]],
            segments => { include => [], exclude => [] });
is_deeply($li->{targeting}, \%want, 'kept as sent, tz defaulting to UTC')
    or diag $JSON->encode($li->{targeting});
is_deeply($t->api('GET', "/api/line-items/$li->{id}")->{json}{targeting}, \%want,
          'GET returns the same targeting');
accepted({ kv => undef }, 'kv null');

# ---- ad units and placements ------------------------------------------------------------
refused({ ad_units => { include => [$u0, $u1], exclude => [$u1] } },
        qq{targeting.ad_units.exclude[0]: ad unit "$u1" is also in include}, 'included and excluded');
refused({ ad_units => { include => [$u0, $unknown] } },
        qq{targeting.ad_units.include[1]: ad unit "$unknown" does not exist}, 'unknown included ad unit');
refused({ ad_units => { exclude => [$unknown] } },
        qq{targeting.ad_units.exclude[0]: ad unit "$unknown" does not exist}, 'unknown excluded ad unit');
refused({ placements => [$placement, $u0] },
        qq{targeting.placements[1]: placement "$u0" does not exist}, 'an ad unit id as a placement');
refused({ ad_units => { include => ['home'] } },
        'targeting.ad_units.include[0]: must be a UUID', 'an ad unit id that is no UUID');
refused({ ad_units => { include => [map { Adserve::Test::uuid() } 1 .. 1001] } },
        'targeting.ad_units.include: must have at most 1000 items', '1001 included ad units');

# ---- sizes, device, user ----------------------------------------------------------------
refused({ sizes => [{ w => -1, h => 250 }] }, 'targeting.sizes[0].w: must be >= 0', 'negative width');
refused({ sizes => [{ w => 300, h => 2.5 }] }, 'targeting.sizes[0].h: must be an integer', 'fractional height');
refused({ sizes => [{ w => 300 }] }, 'targeting.sizes[0].h: is required', 'size without h');
refused({ device => { types => ['watch'] } },
        'targeting.device.types[0]: must be one of desktop, mobile, tablet, ctv, other', 'device type');
refused({ device => { os => ['beos'] } },
        'targeting.device.os[0]: must be one of windows, macos, linux, android, ios, other', 'os');
refused({ device => { browsers => ['opera'] } },
        'targeting.device.browsers[0]: must be one of chrome, firefox, safari, edge, other', 'browser');
refused({ user => { yob_min => 1899 } },
        'targeting.user.yob_min: must be between 1900 and 2100', 'yob_min before 1900');
refused({ user => { yob_max => 2101 } },
        'targeting.user.yob_max: must be between 1900 and 2100', 'yob_max after 2100');
refused({ user => { yob_min => 1990, yob_max => 1989 } },
        'targeting.user.yob_max: must be >= yob_min (1990)', 'yob_max before yob_min');
refused({ user => { genders => ['X'] } }, 'targeting.user.genders[0]: must be one of M, F, O', 'gender');

# ---- dayparts ----------------------------------------------------------------------------
sub daypart { refused({ dayparts => [{ days => ['mon'], start => '09:00', end => '17:00', %{ $_[0] } }] },
                      "targeting.dayparts[0].$_[1]", $_[2]) }
daypart({ days => [] }, 'days: must name at least one day', 'no days');
daypart({ days => ['monday'] }, 'days[0]: must be one of mon, tue, wed, thu, fri, sat, sun', 'a day name');
daypart({ start => '9:00' }, 'start: must be a time HH:MM from 00:00 to 23:59', 'start without a leading 0');
daypart({ start => '24:00' }, 'start: must be a time HH:MM from 00:00 to 23:59', 'start at 24:00');
daypart({ start => '12:60' }, 'start: must be a time HH:MM from 00:00 to 23:59', 'minute 60');
daypart({ end => '24:01' }, 'end: must be a time HH:MM from 00:00 to 24:00', 'end after 24:00');
daypart({ end => '09:00' }, 'end: must be after start (09:00); past midnight, use two dayparts',
        'end at start');
daypart({ start => '22:00', end => '02:00' },
        'end: must be after start (22:00); past midnight, use two dayparts', 'past midnight');
daypart({ tz => 'Europe/Paris' }, 'tz: must be one of UTC', 'a zone other than UTC');
refused({ dayparts => [{ days => ['mon'], end => '17:00' }] },
        'targeting.dayparts[0].start: is required', 'daypart without start');

# ---- unknown properties, at every level ----------------------------------------------------
refused({ geo => {} }, 'targeting.geo: unknown property', 'targeting');
refused({ ad_units => { only => [] } }, 'targeting.ad_units.only: unknown property', 'ad_units');
refused({ sizes => [{ w => 1, h => 1, d => 1 }] }, 'targeting.sizes[0].d: unknown property', 'sizes');
refused({ device => { model => [] } }, 'targeting.device.model: unknown property', 'device');
refused({ user => { age => 3 } }, 'targeting.user.age: unknown property', 'user');
refused({ dayparts => [{ days => ['mon'], start => '09:00', end => '10:00', dst => 1 }] },
        'targeting.dayparts[0].dst: unknown property', 'dayparts');
kv({ %{ cmp_('q', 'eq', 'x') }, note => 1 }, '.note: unknown property', 'an expression');
kv({ type => 'cmp', data => { %{ cmp_('q', 'eq', 'x')->{data} }, ci => JSON::PP::true } },
   '.data.ci: unknown property', 'a comparison');

# ---- kv: the Expr shape ----------------------------------------------------------------
kv({ type => 'xor', data => [] }, '.type: must be one of cmp, and, or, not', 'an unknown expression');
kv(cmp_('q', 'like', 'x'), '.data.op: must be one of eq, ne, lt, le, gt, ge, in, nin, intersects',
   'an unknown op');
kv({ type => 'cmp', data => { lhs => ['q'], op => 'eq' } }, '.data.rhs: is required', 'no rhs');
kv({ type => 'and', data => [] }, '.data: must hold at least one expression', 'an empty and');
kv({ type => 'or', data => [cmp_('q', 'eq', 'x'), { type => 'or', data => [] }] },
   '.data[1].data: must hold at least one expression', 'an empty or inside');
kv({ type => 'cmp', data => { lhs => ['q', 'section'], op => 'eq', rhs => 'x' } },
   '.data.lhs: must name exactly one key', 'two keys');
kv({ type => 'cmp', data => { lhs => [], op => 'eq', rhs => 'x' } },
   '.data.lhs: must name exactly one key', 'no key');

# ---- kv: keys and values ----------------------------------------------------------------
kv(cmp_('nokey', 'eq', 'x'), '.data.lhs[0]: "nokey" is not a custom targeting key', 'an unknown key');
kv(cmp_('old', 'eq', 'x'), '.data.lhs[0]: "old" is not a custom targeting key', 'a deleted key');
kv(cmp_('section', 'eq', 'sport'), '.data.rhs: "sport" is not a value of key "section"',
   'a value of another key');
kv({ type => 'and', data => [cmp_('q', 'eq', 'x'), cmp_('section', 'in', ['news', 'sport'])] },
   '.data[1].data.rhs[1]: "sport" is not a value of key "section"', 'an unknown value in a list');
kv(cmp_('section', 'eq', 'gone'), '.data.rhs: "gone" is not a value of key "section"', 'a deleted value');
kv(cmp_('section', 'eq', 5), '.data.rhs: must be a string naming a value of PREDEFINED key "section"',
   'a number for a PREDEFINED key');
kv(cmp_('section', 'gt', 5), '.data.rhs: must be a string naming a value of PREDEFINED key "section"',
   'an order for a PREDEFINED key');

# ---- kv: what each op takes ----------------------------------------------------------------
kv(cmp_('q', 'eq', JSON::PP::true), '.data.rhs: must be a string or a finite number for op eq', 'eq true');
kv(cmp_('q', 'ne', undef), '.data.rhs: must be a string or a finite number for op ne', 'ne null');
kv(cmp_('q', 'eq', ['x']), '.data.rhs: must be a string or a finite number for op eq', 'eq a list');
kv(cmp_('q', 'lt', '5'), '.data.rhs: must be a finite number for op lt', 'lt a string');
kv(cmp_('q', 'ge', {}), '.data.rhs: must be a finite number for op ge', 'ge an object');
kv(cmp_('q', 'in', 'x'), '.data.rhs: must be an array for op in', 'in a string');
kv(cmp_('q', 'nin', []), '.data.rhs: must not be empty', 'nin an empty list');
kv(cmp_('q', 'intersects', ['x', {}]), '.data.rhs[1]: must be a string or a finite number',
   'intersects a list holding an object');
{
    my $body = $JSON->encode(line_item_body({ kv => cmp_('q', 'le', 0) }));
    $body =~ s/"rhs":0/"rhs":1e999/ or die 'no rhs in the body';
    my $res = $t->api('POST', '/api/line-items', body => $body,
                      headers => { 'content-type' => 'application/json' });
    is($res->{status}, 422, 'le 1e999: 422') or diag $res->{content};
    is($res->{json} && $res->{json}{detail}, 'targeting.kv.data.rhs: must be a finite number for op le',
       'le 1e999: the detail names the path');
}

# ---- kv: limits ----------------------------------------------------------------------
sub nest {
    my ($levels, $kind) = @_;
    my $e = cmp_('q', 'eq', 'x');
    $e = $kind eq 'not' ? { type => 'not', data => $e } : { type => $kind, data => [$e] }
        for 2 .. $levels;
    return $e;
}
accepted({ kv => nest(16, 'not') }, '16 levels of not');
accepted({ kv => nest(16, 'and') }, '16 levels of and');
kv(nest(17, 'not'), '.data' x 16 . ': nested more than 16 levels deep', '17 levels of not');
kv(nest(17, 'or'), '.data[0]' x 16 . ': nested more than 16 levels deep', '17 levels of or');
accepted({ kv => { type => 'or', data => [map { cmp_('q', 'eq', "v$_") } 1 .. 256] } },
         '256 comparisons');
kv({ type => 'or', data => [map { cmp_('q', 'eq', "v$_") } 1 .. 257] }, ': more than 256 comparisons',
   '257 comparisons');
accepted({ kv => { type => 'and', data => [cmp_('q', 'in', [1 .. 9999]), cmp_('q', 'ne', 0)] } },
         '10000 values');
kv({ type => 'and', data => [cmp_('q', 'in', [1 .. 10000]), cmp_('q', 'ne', 0)] },
   ': more than 10000 rhs values in all', '10001 values');

# ---- PATCH and the batch refuse the same way ------------------------------------------------
my $res = $t->api('PATCH', "/api/line-items/$li->{id}",
                  json => { targeting => { ad_units => { include => [$unknown] } } });
is($res->{status}, 422, 'PATCH with an unknown ad unit: 422') or diag $res->{content};
is($res->{json} && $res->{json}{detail}, qq{targeting.ad_units.include[0]: ad unit "$unknown" does not exist},
   'PATCH: the detail names the path');
is_deeply($t->api('GET', "/api/line-items/$li->{id}")->{json}{targeting}, \%want,
          'PATCH refused: the targeting is unchanged');

$res = $t->api('POST', '/api/line-items/batch', json => { items => [
    { op => 'create', data => line_item_body({ kv => cmp_('section', 'eq', 'sport') }) },
    { op => 'create', data => line_item_body({ kv => cmp_('section', 'eq', 'news') }) },
] });
is($res->{status}, 200, 'batch: 200') or diag $res->{content};
my @results = @{ ($res->{json} // {})->{results} // [] };
is($results[0]{status}, 422, 'batch: the item with an unknown value is 422');
like($results[0]{detail} // '', qr/targeting\.kv\.data\.rhs: "sport" is not a value of key "section"/,
     'batch: its detail names the path');
is($results[1]{status}, 201, 'batch: the well-targeted item is created');

done_testing;
