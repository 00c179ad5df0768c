# Serving data end to end, everything through the API: an ACTIVE ad unit,
# an advertiser, an order (approved), a line item targeting the unit
# (activated), an approved creative and a LICA: nginx serves that creative
# within 1 s. Pausing the line item stops it within 1 s, resuming brings
# it back; an advertiser's edit of the creative (PENDING again) stops it,
# approval brings it back; pausing the order or the LICA stops it; a line
# item targeting a placement serves through it. Every such write updates
# its hash of the data contract with the record as the API returns it
# and bumps adserve:rev in the same transaction.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Time::HiRes qw(time);
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

# A write through the API: 2xx, the hash holds the answer, one revision.
sub write_ok {
    my ($method, $path, $hash, $body, $name, @as) = @_;
    my $rev = $t->revision;
    my $res = $t->api($method, $path, ($body ? (json => $body) : ()), @as);
    ok($res->{status} == 200 || $res->{status} == 201, "$name: $res->{status}") or diag $res->{content};
    my $rec = $res->{json} // {};
    is_deeply($JSON->decode($t->redis('HGET', "adserve:$hash", $rec->{id} // '') || 'null'), $rec,
              "$name: adserve:$hash holds the record as the API returns it");
    cmp_ok($t->revision, '>', $rev, "$name: the revision moved");
    return $rec;
}

# the creative served on unit within 1 s, or (want undef) 204 within 1 s
# The write just made serves within 1 s: on every worker (each is on its
# revision), and the answer is the one wanted.
sub serves_within {
    my ($unit, $want, $name) = @_;
    my $t0 = time;
    my $rev = $t->revision;
    my $last;
    my $ok = $t->wait_until(1, sub {
        return 0 unless $t->workers_at($rev);
        $last = $t->ad($unit);
        return defined $want ? $last->{status} == 200 && ($last->{json}{ad}{id} // '') eq $want
                             : $last->{status} == 204;
    });
    ok($ok, $name) or diag $last ? "last answer: $last->{status} $last->{content}"
                                 : "not every worker reached revision $rev";
    note sprintf '%s after %.0f ms', $name, (time - $t0) * 1000;
    return $last;
}

my $unit = write_ok('POST', '/api/ad-units', 'ad_units',
                    { code => "e2e-$$", name => 'Home top', status => 'ACTIVE', display => { w => 300, h => 250 } }, 'ad unit');
my $adv = $t->api('POST', '/api/advertisers', json => { name => 'Acme', domain => 'acme.example' })->{json};
ok($adv->{id}, 'an advertiser');
my $order = write_ok('POST', '/api/orders', 'orders', { advertiser_id => $adv->{id}, name => 'Launch' }, 'order');
write_ok('PATCH', "/api/orders/$order->{id}", 'orders', { status => 'APPROVED' }, 'order approved');
my $li = write_ok('POST', '/api/line-items', 'line_items',
                  { order_id => $order->{id}, name => 'Launch line', type => 'STANDARD', cost_type => 'CPM', rate => 4.5,
                    goal => { type => 'IMPRESSIONS', units => 100000 },
                    targeting => { ad_units => { include => [ $unit->{id} ] } } }, 'line item');
write_ok('PATCH', "/api/line-items/$li->{id}", 'line_items', { status => 'ACTIVE' }, 'line item activated');
my $creative = write_ok('POST', '/api/creatives', 'creatives',
                        { advertiser_id => $adv->{id}, name => 'MPU', type => 'IMAGE', w => 300, h => 250,
                          image_url => 'https://cdn.example/mpu.png', landing_url => 'https://acme.example/' }, 'creative');
is($creative->{approval}, 'APPROVED', 'the creative is approved (an admin made it)');
serves_within($unit->{id}, undef, 'no LICA yet: no ad (once every worker has the writes)');
my $lica = write_ok('POST', '/api/licas', 'licas', { line_item_id => $li->{id}, creative_id => $creative->{id} }, 'LICA');

my $ad = serves_within($unit->{id}, $creative->{id}, 'the LICA made through the API serves within 1 s');
is_deeply($ad->{json}{ad}{display}, { w => 300, h => 250, banner => { img => 'https://cdn.example/mpu.png' } },
          'the creative as the API wrote it');

# ---- what stops it, and what brings it back ---------------------------------------------------------
write_ok('PATCH', "/api/line-items/$li->{id}", 'line_items', { status => 'PAUSED' }, 'line item paused');
serves_within($unit->{id}, undef, 'a paused line item: 204 within 1 s');
write_ok('PATCH', "/api/line-items/$li->{id}", 'line_items', { status => 'ACTIVE' }, 'line item resumed');
serves_within($unit->{id}, $creative->{id}, 'resumed: served again within 1 s');

is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $adv->{id} })->{status}, 201, 'an Acme user');
my $edited = write_ok('PATCH', "/api/creatives/$creative->{id}", 'creatives', { image_url => 'https://cdn.example/mpu-v2.png' },
                      'the advertiser edits its creative', as => [ 'buyer@acme.example', 'a-good-password' ]);
is($edited->{approval}, 'PENDING', '... which is PENDING again');
serves_within($unit->{id}, undef, 'a PENDING creative is no longer served (within 1 s)');
write_ok('PATCH', "/api/creatives/$creative->{id}", 'creatives', { approval => 'APPROVED' }, 'approved again');
$ad = serves_within($unit->{id}, $creative->{id}, 'approved: served within 1 s');
is($ad->{json}{ad}{display}{banner}{img}, 'https://cdn.example/mpu-v2.png', '... its new image');

write_ok('PATCH', "/api/orders/$order->{id}", 'orders', { status => 'PAUSED' }, 'order paused');
serves_within($unit->{id}, undef, 'a paused order: 204 within 1 s');
write_ok('PATCH', "/api/orders/$order->{id}", 'orders', { status => 'APPROVED' }, 'order resumed');
serves_within($unit->{id}, $creative->{id}, 'the order resumed: served');

write_ok('PATCH', "/api/licas/$lica->{id}", 'licas', { status => 'PAUSED' }, 'LICA paused');
serves_within($unit->{id}, undef, 'a paused LICA: 204 within 1 s');
my $rev = $t->revision;
is($t->api('DELETE', "/api/licas/$lica->{id}")->{status}, 204, 'the LICA deleted');
is($t->redis('HEXISTS', 'adserve:licas', $lica->{id}), '0', '... out of adserve:licas');
cmp_ok($t->revision, '>', $rev, '... with a revision');

# ---- through a placement ------------------------------------------------------------------------------
my $unit2 = write_ok('POST', '/api/ad-units', 'ad_units', { code => "e2e2-$$", name => 'Sidebar', status => 'ACTIVE' }, 'a second ad unit');
my $place = write_ok('POST', '/api/placements', 'placements', { name => 'Sidebars', ad_unit_ids => [ $unit2->{id} ] }, 'placement');
my $li2 = write_ok('POST', '/api/line-items', 'line_items',
                   { order_id => $order->{id}, name => 'Via placement', type => 'SPONSORSHIP', cost_type => 'CPM', rate => 1,
                     targeting => { placements => [ $place->{id} ] } }, 'a line item targeting the placement');
write_ok('PATCH', "/api/line-items/$li2->{id}", 'line_items', { status => 'ACTIVE' }, 'activated');
write_ok('POST', '/api/licas', 'licas', { line_item_id => $li2->{id}, creative_id => $creative->{id} }, 'its LICA');
serves_within($unit2->{id}, $creative->{id}, 'served through the placement within 1 s');
is($t->ad($unit->{id})->{status}, 204, '... and not on the unit outside it');
write_ok('PATCH', "/api/placements/$place->{id}", 'placements', { ad_unit_ids => [] }, 'the placement emptied');
serves_within($unit2->{id}, undef, 'no longer served there (within 1 s)');

done_testing;
