# Targeting at serving, end to end: line items made through the API with
# kv, device, user and daypart targeting, and requests that do and do not
# match them. A request that fails a line item's targeting falls to the
# next group: another targeted line item, then an untargeted HOUSE one.
# A line item whose targeting serving cannot compile (written to Redis
# past the sidecar's checks) never serves, and is counted as skipped.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use Adserve::Test;

my $t = Adserve::Test->new;

# the dayparts below name today (UTC): never run across midnight
my $to_midnight = 86400 - time % 86400;
if ($to_midnight < 90) {
    note "waiting $to_midnight s for midnight UTC";
    sleep $to_midnight + 1;
}
my @days = qw(thu fri sat sun mon tue wed);      # 1970-01-01 was a Thursday
my $today = $days[int(time / 86400) % 7];
my @other_days = grep { $_ ne $today } @days;

my %UA = (
    iphone  => 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 '
             . '(KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
    ipad    => 'Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 '
             . '(KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
    android => 'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) '
             . 'Chrome/120.0.0.0 Mobile Safari/537.36',
    windows => 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) '
             . 'Chrome/120.0.0.0 Safari/537.36',
);

# ---- demand through the API --------------------------------------------------------------------
my $unit = $t->created('/api/ad-units', { code => "tgt-serve-$$", name => 'Targeted', status => 'ACTIVE',
                                          display => { w => 300, h => 250 } });
my $unit2 = $t->created('/api/ad-units', { code => "tgt-serve2-$$", name => 'Dayparted', status => 'ACTIVE',
                                           display => { w => 300, h => 250 } });
my $adv = $t->created('/api/advertisers', { name => "Targeting $$" });
my $order = $t->created('/api/orders', { advertiser_id => $adv->{id}, name => 'Targeted order' });
is($t->api('PATCH', "/api/orders/$order->{id}", json => { status => 'APPROVED' })->{status}, 200, 'order approved');

my $keys = '/api/custom-targeting/keys';
my $section = $t->created($keys, { name => 'section', type => 'PREDEFINED' });
$t->created("$keys/$section->{id}/values", { name => $_ }) for qw(sport news weather);
$t->created($keys, { name => 'age', type => 'FREEFORM' });

sub cmp_ { return { type => 'cmp', data => { lhs => [$_[0]], op => $_[1], rhs => $_[2] } } }

# line NAME => TYPE, PRIORITY, UNIT, TARGETING: an ACTIVE line item with
# its own creative and LICA; the creative's id
my %creative;
sub line {
    my ($name, $type, $priority, $unit_id, $targeting) = @_;
    my $li = $t->created('/api/line-items', {
        order_id => $order->{id}, name => $name, type => $type, priority => $priority,
        cost_type => 'CPM', rate => 2, targeting => { ad_units => { include => [$unit_id] }, %$targeting } });
    is($t->api('PATCH', "/api/line-items/$li->{id}", json => { status => 'ACTIVE' })->{status}, 200,
       "$name: activated");
    my $cr = $t->created('/api/creatives', {
        advertiser_id => $adv->{id}, name => $name, type => 'IMAGE', w => 300, h => 250,
        image_url => "https://cdn.example/$name.png", landing_url => 'https://advertiser.example/' });
    $t->created('/api/licas', { line_item_id => $li->{id}, creative_id => $cr->{id} });
    $creative{$name} = $cr->{id};
    return $li;
}

line('kv', 'SPONSORSHIP', 1, $unit->{id}, {
    kv => { type => 'and', data => [ cmp_('section', 'intersects', ['sport', 'news']),
                                     cmp_('age', 'ge', 18) ] } });
line('device', 'SPONSORSHIP', 2, $unit->{id}, { device => { types => ['mobile'], os => ['ios'] } });
line('user', 'STANDARD', 8, $unit->{id}, { user => { yob_min => 1980, yob_max => 1999, genders => ['F'] } });
line('house', 'HOUSE', 16, $unit->{id}, {});

line('never', 'SPONSORSHIP', 1, $unit2->{id},
     { dayparts => [ { days => \@other_days, start => '00:00', end => '24:00' } ] });
my $now_li = line('today', 'SPONSORSHIP', 2, $unit2->{id},
     { dayparts => [ { days => [$today], start => '00:00', end => '12:00' },
                     { days => [$today], start => '12:00', end => '24:00', tz => 'UTC' } ] });
line('house2', 'HOUSE', 16, $unit2->{id}, {});

ok($t->wait_until(5, sub { $t->workers_at($t->revision) }), 'every worker has the demand');

# serves NAME, BODY, WANT: the creative of line item WANT (or 204 for undef),
# on every try (the requests spread over both workers)
sub serves {
    my ($unit_id, $body, $want, $name) = @_;
    my @got;
    for (1 .. 4) {
        my $res = $t->ad($unit_id, $body);
        push @got, $res->{status} == 200 ? $res->{json}{ad}{id} // '?' : $res->{status};
    }
    my $expect = defined $want ? $creative{$want} : 204;
    my %names = reverse %creative;
    ok(!grep({ $_ ne $expect } @got), $name)
        or diag 'got: ' . join(', ', map { $names{$_} // $_ } @got) . ', want ' . ($want // 204);
}

sub req {
    my (%o) = @_;
    return { version => '0.1.0', ($o{user} ? (user => $o{user}) : ()),
             ($o{ua} ? (device => { ua => $UA{ $o{ua} } }) : ()),
             ($o{kv} ? (ext => { kv => $o{kv} }) : ()) };
}

my $u = $unit->{id};
# ---- kv ----------------------------------------------------------------------------------------
serves($u, req(kv => { section => 'sport', age => 30 }), 'kv', 'kv: section sport, age 30');
serves($u, req(kv => { section => ['weather', 'news'], age => '21' }), 'kv',
       'kv: a multi-valued section intersects, an age as a numeric string');
serves($u, req(kv => { section => 'sport', age => 18 }, ua => 'windows'), 'kv', 'kv: age 18 (ge is inclusive)');
serves($u, '{"ext":{"kv":{"sec\u0074ion":"spor\u0074","age":[4e1]}}}', 'kv',
       'kv: escaped key and value, a number with an exponent in an array');
serves($u, req(kv => { section => 'weather', age => 30 }, ua => 'windows'), 'house',
       'kv: section weather: falls through to the house line item');
serves($u, req(kv => { section => 'sport', age => 17 }, ua => 'iphone'), 'device',
       'kv: age 17 fails, an iPhone: the next sponsorship (device)');
serves($u, req(kv => { section => 'sport' }, ua => 'windows'), 'house', 'kv: no age: the cmp on it is false');
serves($u, req(kv => { section => 'sport', age => 'thirty' }, ua => 'windows'), 'house',
       'kv: a non-numeric age fails ge');

# ---- device ------------------------------------------------------------------------------------
serves($u, req(ua => 'iphone'), 'device', 'device: mobile iOS matches');
serves($u, req(ua => 'ipad'), 'house', 'device: an iPad is a tablet, not mobile');
serves($u, req(ua => 'android', user => { yob => 1990, gender => 'M' }), 'house',
       'device: Android is not iOS; user: M is not F');
serves($u, req(), 'house', 'no user agent, no user, no kv: only the house line item');

# ---- user --------------------------------------------------------------------------------------
serves($u, req(ua => 'android', user => { id => 'u1', yob => 1990, gender => 'F' }), 'user',
       'user: yob 1990 and F match');
serves($u, req(ua => 'windows', user => { yob => 1980, gender => 'F' }), 'user', 'user: yob_min is inclusive');
serves($u, req(ua => 'windows', user => { yob => 1999, gender => 'F' }), 'user', 'user: yob_max is inclusive');
serves($u, req(ua => 'windows', user => { yob => 2000, gender => 'F' }), 'house', 'user: yob 2000 is too late');
serves($u, req(ua => 'windows', user => { gender => 'F' }), 'house', 'user: no yob fails a yob range');
serves($u, req(ua => 'windows', user => { yob => 1990 }), 'house', 'user: no gender fails a genders list');

# ---- dayparts ------------------------------------------------------------------------------------
serves($unit2->{id}, req(), 'today', "dayparts: today ($today) serves, the other days' line item does not");
is($t->api('PATCH', "/api/line-items/$now_li->{id}",
           json => { targeting => { ad_units => { include => [$unit2->{id}] },
                                    dayparts => [ { days => \@other_days, start => '00:00', end => '24:00' } ] } })->{status},
   200, "dayparts: the line item moved to the other days");
my $rev = $t->revision;
ok($t->wait_until(2, sub { $t->workers_at($rev) }), 'every worker has the change');
serves($unit2->{id}, req(), 'house2', 'dayparts: nothing for today: the house line item');

# ---- a rule serving cannot compile ------------------------------------------------------------------
my $bad = $t->chain(unit => { id => $u }, order => { id => $order->{id} }, skip => [qw(ad_units orders)],
                    line_item => { type => 'SPONSORSHIP', priority => 1,
                                   targeting => { ad_units => { include => [$u] },
                                                  kv => cmp_('section', 'like', 'sport') } });
$creative{bad} = $bad->{creative};
ok($t->wait_until(2, sub { $t->workers_at($bad->{rev}) }), 'every worker has the malformed line item');
serves($u, req(kv => { section => 'sport' }, ua => 'windows'), 'house', 'malformed targeting never serves');
my $all = $t->worker_status;
ok($all && !grep({ $_->{skipped_records} < 1 } values %$all), '... and every worker counts it as skipped')
    or diag explain $all;

done_testing;
