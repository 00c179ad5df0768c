# The serving decision on the real stack, one rule at a time: every
# eligibility rule of the API contract (ad unit, order, line item, flight,
# LICA, creative approval, size, bcat, targeting through an ancestor or a
# placement), the tier order, priority and eCPM inside a tier, CPC ranked
# on its observed CTR (and the unit's default_cpc without a rate), the
# target_ecpm floor for PRICE_PRIORITY, random split between equals and
# LICA weights, and the impression and click URLs of the response.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX qw(strftime);
use Adserve::Test;

my $t = Adserve::Test->new;
my $uuid = \&Adserve::Test::uuid;
sub iso { strftime('%Y-%m-%dT%H:%M:%SZ', gmtime $_[0]) }

# the creative served on a unit, '' for 204, "status N" otherwise
sub served {
    my ($unit, $via) = @_;
    my $res = $t->ad($unit, undef, $via ? (via => $via) : ());
    return $res->{status} == 200 ? $res->{json}{ad}{id} : $res->{status} == 204 ? '' : "status $res->{status}";
}

# the creatives served over n requests: id => count
sub tally {
    my ($unit, $n) = @_;
    my %seen;
    $seen{ served($unit) }++ for 1 .. $n;
    return \%seen;
}

# true when every worker serves WANT on UNIT: each reads pacing (observed
# CTRs) on its own timer
sub everywhere { my ($unit, $want) = @_; return !grep { served($unit, $_) ne $want } @{ $t->worker_connections } }

sub loaded { my ($rev) = @_; ok($t->wait_until(5, sub { $t->workers_at($rev) }), "workers at revision $rev") }

# ---- the response: URLs on the public address ---------------------------------------------------
my $plain = $t->chain;
my $own = $t->chain(unit => { ext => { public_url => 'https://ads.publisher.example/' } });
loaded($own->{rev});
my $ad = $t->ad($plain->{unit})->{json};
my $tok = $ad->{ext}{ad_log};
ok(length $tok > 100, 'a 200 carries ext.ad_log');
is($ad->{ad}{impression_url}, $t->base . "/app/v0/event/impression?ad_log=$tok",
   'impression_url: the public URL, the impression path and the same token');
is($ad->{ad}{click_url}, $t->base . "/app/v0/event/click?ad_log=$tok", 'click_url: the click path');
is($ad->{version}, '0.1.0', 'version 0.1.0');
is($ad->{ext}{message}, 'ok', 'ext.message');
$ad = $t->ad($own->{unit})->{json};
like($ad->{ad}{impression_url}, qr{^https://ads\.publisher\.example/app/v0/event/impression\?ad_log=[-\w]+$},
     "the ad unit's ext.public_url overrides the global one (trailing slash dropped)");
like($ad->{ad}{click_url}, qr{^https://ads\.publisher\.example/app/v0/event/click\?ad_log=}, '... for clicks too');

# ---- eligibility, one rule at a time ------------------------------------------------------------
my $now = time;
my @cases = (
    ['everything in order', {}, 1],
    ['order PAUSED', { order => { status => 'PAUSED' } }, 0],
    ['order DRAFT', { order => { status => 'DRAFT' } }, 0],
    ['line item PAUSED', { line_item => { status => 'PAUSED' } }, 0],
    ['line item DRAFT', { line_item => { status => 'DRAFT' } }, 0],
    ['flight not started', { line_item => { start_at => iso($now + 3600) } }, 0],
    ['flight over', { line_item => { end_at => iso($now - 60) } }, 0],
    ['inside its flight', { line_item => { start_at => iso($now - 60), end_at => iso($now + 3600) } }, 1],
    ['LICA PAUSED', { lica => { status => 'PAUSED' } }, 0],
    ['creative PENDING', { creative => { approval => 'PENDING' } }, 0],
    ['creative REJECTED', { creative => { approval => 'REJECTED' } }, 0],
    ["creative's size not the unit's", { creative => { w => 728, h => 90 } }, 0],
    ['size among ad_unit_sizes only (targeting metadata, the spec)', { creative => { w => 728, h => 90 },
                                   unit => { ad_unit_sizes => [ { w => 728, h => 90 } ] } }, 0],
    ['an interstitial unit, a creative not made for one', { unit => { instl => 1 } }, 0],
    ['an interstitial unit, an interstitial creative', { unit => { instl => 1 }, creative => { interstitial => JSON::PP::true } }, 1],
    ['category in ext.bcat', { creative => { categories => ['IAB7-39'] },
                               unit => { ext => { bcat => ['IAB7'] } } }, 0],
    ['category not in ext.bcat', { creative => { categories => ['IAB8'] },
                                   unit => { ext => { bcat => ['IAB7'] } } }, 1],
    ['ad unit targeted nowhere', { line_item => { targeting => { ad_units => { include => [ $uuid->() ] } } } }, 0],
);
my @chains = map { [ $_->[0], $t->chain(%{ $_->[1] }), $_->[2] ] } @cases;

# targeted through an ancestor, through a placement, and excluded below an ancestor
my ($root, $child, $grandchild, $excluded, $by_placement) = map { $uuid->() } 1 .. 5;
my $placement = $uuid->();
$t->put(ad_units => { id => $root, status => 'INACTIVE' },
        ad_units => { id => $child, status => 'ACTIVE', parent_id => $root, display => { w => 300, h => 250 } },
        ad_units => { id => $grandchild, status => 'ACTIVE', parent_id => $child, display => { w => 300, h => 250 } },
        ad_units => { id => $excluded, status => 'ACTIVE', parent_id => $root, display => { w => 300, h => 250 } },
        ad_units => { id => $by_placement, status => 'ACTIVE', display => { w => 300, h => 250 } },
        placements => { id => $placement, ad_unit_ids => [ $by_placement ] });
my $tree = $t->chain(unit => { id => $uuid->(), status => 'INACTIVE' },
                     line_item => { targeting => { ad_units => { include => [ $root ], exclude => [ $excluded ] } } });
my $plc = $t->chain(unit => { id => $uuid->(), status => 'INACTIVE' },
                    line_item => { targeting => { placements => [ $placement ] } });
loaded($plc->{rev});

for (@chains) {
    my ($name, $c, $serves) = @$_;
    is(served($c->{unit}), $serves ? $c->{creative} : '', "$name: " . ($serves ? 'serves' : 'no ad (204)'));
}
is(served($grandchild), $tree->{creative}, 'a line item targeting an ancestor serves two levels below it');
is(served($child), $tree->{creative}, '... and on the child between');
is(served($excluded), '', '... but not under an excluded unit');
is(served($by_placement), $plc->{creative}, 'a line item targeting a placement serves on its ad units');

# ---- one unit, many line items: the order of tiers, priority and eCPM ---------------------------
my $unit = $uuid->();
my $order = $uuid->();
$t->put(ad_units => { id => $unit, status => 'ACTIVE', display => { w => 300, h => 250 },
                      ext => { target_ecpm => 3, default_cpc => 10 } },
        orders => { id => $order, status => 'APPROVED' });

my %li;
# line NAME => {line item fields}: its own creative and LICA; the creative id
sub line {
    my ($name, $fields, $weights) = @_;
    my $li = $li{$name} = { id => $uuid->(), order_id => $order, status => 'ACTIVE', type => 'STANDARD',
                            priority => 8, cost_type => 'CPM', rate => 2,
                            targeting => { ad_units => { include => [ $unit ] } }, %$fields };
    my @recs = (line_items => $li);
    for my $w (@{ $weights // [1] }) {
        my $cr = $uuid->();
        push @{ $li->{creatives} }, $cr;
        push @recs, creatives => { id => $cr, approval => 'APPROVED', type => 'IMAGE', w => 300, h => 250,
                                   image_url => "https://cdn.example/$name.png", landing_url => 'https://adv.example/' },
                    licas => { id => $uuid->(), line_item_id => $li->{id}, creative_id => $cr,
                               status => 'ACTIVE', weight => $w };
    }
    return $t->put(@recs);
}
sub status_of {
    my ($name, $status) = @_;
    my %rec = %{ $li{$name} };
    delete $rec{creatives};
    $rec{status} = $status;
    loaded($t->put(line_items => \%rec));
}
sub cr { $li{ $_[0] }{creatives}[0] }

line(house => { type => 'HOUSE', priority => 1, rate => 50 });
line(pp => { type => 'PRICE_PRIORITY', priority => 1, rate => 40 });
line(std8 => { type => 'STANDARD', priority => 8, rate => 30 });
line(std4 => { type => 'STANDARD', priority => 4, rate => 1 });
loaded(line(spons => { type => 'SPONSORSHIP', priority => 16, rate => 0.5 }));

is(served($unit), cr('spons'), 'SPONSORSHIP first, whatever its priority and rate');
status_of(spons => 'PAUSED');
is(served($unit), cr('std4'), 'then STANDARD, priority 4 before priority 8 at any rate');
status_of(std4 => 'PAUSED');
is(served($unit), cr('std8'), '... then priority 8');
status_of(std8 => 'PAUSED');
is(served($unit), cr('pp'), 'then PRICE_PRIORITY');
status_of(pp => 'PAUSED');
is(served($unit), cr('house'), 'then HOUSE');
status_of(house => 'PAUSED');

# eCPM inside one priority: CPM rates, and CPC on its observed CTR
line(cpm_low => { rate => 2 });
loaded(line(cpm_high => { rate => 5 }));
is_deeply(tally($unit, 20), { cr('cpm_high') => 20 }, 'same priority: the higher CPM wins every time');
status_of(cpm_high => 'PAUSED');

loaded(line(cpc => { cost_type => 'CPC', rate => 1 }));
is_deeply(tally($unit, 10), { cr('cpm_low') => 10 },
          'a new CPC line item ranks on the prior CTR (0.1%: eCPM 1) below a CPM of 2');
$t->redis('HSET', 'adserve:delivery', "$li{cpc}{id}:imp", 1000, "$li{cpc}{id}:clk", 99);
ok($t->wait_until(5, sub { everywhere($unit, cr('cpc')) }),
   'observed CTR 100/2000 (eCPM 50): the CPC line item wins, once pacing has read it');
is_deeply(tally($unit, 10), { cr('cpc') => 10 }, '... every time');
$t->redis('HSET', 'adserve:delivery', "$li{cpc}{id}:clk", 0);
ok($t->wait_until(5, sub { everywhere($unit, cr('cpm_low')) }), 'no clicks (eCPM 0.5): CPM wins again');
status_of(cpc => 'PAUSED');

loaded(line(cpc_default => { cost_type => 'CPC', rate => 0 }));
$t->redis('HSET', 'adserve:delivery', "$li{cpc_default}{id}:imp", 1000);
ok($t->wait_until(5, sub { everywhere($unit, cr('cpc_default')) }),
   "a CPC line item without a rate bids the unit's default_cpc (10 x 0.05% x 1000 = eCPM 5)");
status_of(cpc_default => 'PAUSED');
status_of(cpm_low => 'PAUSED');

# the floor: target_ecpm 3 holds back PRICE_PRIORITY below it, nothing else
loaded(line(pp_low => { type => 'PRICE_PRIORITY', rate => 2 }));
is(served($unit), '', 'PRICE_PRIORITY under the unit\'s target_ecpm: no ad');
loaded(line(house_low => { type => 'HOUSE', rate => 0.1 }));
is(served($unit), cr('house_low'), '... the slot falls through to HOUSE, which has no floor');
loaded(line(pp_high => { type => 'PRICE_PRIORITY', rate => 4 }));
is(served($unit), cr('pp_high'), 'PRICE_PRIORITY at 4 clears the floor of 3');
status_of(pp_high => 'PAUSED');
loaded(line(std_low => { type => 'STANDARD', rate => 2 }));
is(served($unit), cr('std_low'), 'STANDARD under the floor still serves (the floor is for PRICE_PRIORITY)');
status_of(std_low => 'PAUSED');
status_of(house_low => 'PAUSED');
status_of(pp_low => 'PAUSED');

# equals split at random; a line item's creatives rotate by LICA weight
line(twin_a => { rate => 3 });
loaded(line(twin_b => { rate => 3 }, [1, 3]));
my $n = 400;
my $seen = tally($unit, $n);
my $b = ($seen->{ $li{twin_b}{creatives}[0] } // 0) + ($seen->{ $li{twin_b}{creatives}[1] } // 0);
my $a = $seen->{ cr('twin_a') } // 0;
is($a + $b, $n, 'equal line items: one of the two every time');
cmp_ok(abs($a - $n / 2), '<', $n * 0.15, "... split about evenly ($a / $b)");
my $heavy = $seen->{ $li{twin_b}{creatives}[1] } // 0;
cmp_ok(abs($heavy / ($b || 1) - 0.75), '<', 0.15,
       "... and twin_b's creatives by LICA weight 1:3 ($heavy of $b on the heavier)");

done_testing;
