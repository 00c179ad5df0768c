# /api/licas: a line item to creative association. Defaults (weight 1,
# ACTIVE), its advertiser (the line item's), the rules (409): one LICA per
# pair, the creative of the order's advertiser, a size the line item
# targets (any, when it targets none), no new LICA on an ARCHIVED line
# item; unknown references (422); the pair cannot change (409); status
# and weight do; the indexes behind the delete rules; lists; Redis.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub members { sort split /\n/, $t->redis('SMEMBERS', $_[0]) }
sub post { $t->api('POST', '/api/licas', json => { @_ }) }
sub patch { $t->api('PATCH', "/api/licas/$_[0]", json => $_[1]) }

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
my $globex = $t->created('/api/advertisers', { name => 'Globex' });
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order' });
my $seq = 0;
sub line_item { $t->created('/api/line-items', { order_id => $order->{id}, name => 'LI ' . ++$seq, type => 'STANDARD',
                                             cost_type => 'CPM', rate => 3, @_ }) }
sub creative { $t->created('/api/creatives', { advertiser_id => $acme->{id}, name => 'C ' . ++$seq, type => 'IMAGE',
                                           w => 300, h => 250, image_url => 'https://cdn.example/c.png',
                                           landing_url => 'https://acme.example/', @_ }) }

my $any = line_item();
my $leaderboard = line_item(targeting => { sizes => [ { w => 728, h => 90 } ] });
my $mpu = creative();

# ---- create ---------------------------------------------------------------------------------
my $rev = $t->revision;
my $lica = $t->created('/api/licas', { line_item_id => $any->{id}, creative_id => $mpu->{id} });
is_deeply({ map { $_ => $lica->{$_} } qw(line_item_id creative_id advertiser_id weight status) }, {
    line_item_id => $any->{id}, creative_id => $mpu->{id}, advertiser_id => $acme->{id}, weight => 1, status => 'ACTIVE',
}, 'weight 1, ACTIVE, the line item\'s advertiser');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:licas', $lica->{id})), $lica, 'adserve:licas holds it');
is($t->revision, $rev + 1, 'one revision');
is($t->redis('HGET', 'adserve:lica_pairs', "$any->{id}:$mpu->{id}"), $lica->{id}, 'the pair index');
is_deeply([ members("adserve:line_item_licas:$any->{id}") ], [ $lica->{id} ], 'the line item\'s LICA index');
is_deeply([ members("adserve:creative_licas:$mpu->{id}") ], [ $lica->{id} ], 'the creative\'s LICA index');

# ---- the rules --------------------------------------------------------------------------------
$t->refused(post(line_item_id => $any->{id}, creative_id => $mpu->{id}), 409,
        qr/^creative_id: the creative is already associated with this line item/, 'the same pair twice');
my $theirs = $t->created('/api/creatives', { advertiser_id => $globex->{id}, name => 'Theirs', type => 'IMAGE', w => 300, h => 250,
                                         image_url => 'https://cdn.example/g.png', landing_url => 'https://globex.example/' });
$t->refused(post(line_item_id => $any->{id}, creative_id => $theirs->{id}), 409,
        qr/^creative_id: the creative belongs to another advertiser than the line item's order/, 'another advertiser\'s creative');
$t->refused(post(line_item_id => $leaderboard->{id}, creative_id => $mpu->{id}), 409,
        qr/^creative_id: the creative's size \(300x250\) is not one the line item targets/, 'a size the line item does not target');
my $banner = creative(w => 728, h => 90);
is($t->created('/api/licas', { line_item_id => $leaderboard->{id}, creative_id => $banner->{id}, weight => 5 })->{weight}, 5,
   'a size it targets, with a weight');
is($t->created('/api/licas', { line_item_id => $any->{id}, creative_id => $banner->{id} })->{status}, 'ACTIVE',
   'a line item targeting no sizes takes any');
my $archived = line_item();
is($t->api('PATCH', "/api/line-items/$archived->{id}", json => { status => 'ARCHIVED' })->{status}, 200, 'a line item archived');
$t->refused(post(line_item_id => $archived->{id}, creative_id => $mpu->{id}), 409, qr/^line_item_id: the line item is ARCHIVED/,
        'no new LICA for it');
my $ghost = Adserve::Test::uuid();
for my $case (
    [ { line_item_id => $ghost, creative_id => $mpu->{id} }, qr/^line_item_id: no such line item/, 'unknown line item' ],
    [ { line_item_id => $any->{id}, creative_id => $ghost }, qr/^creative_id: no such creative/, 'unknown creative' ],
    [ { creative_id => $mpu->{id} }, qr/^line_item_id: is required/, 'no line item' ],
    [ { line_item_id => $any->{id}, creative_id => $mpu->{id}, weight => 0 }, qr/^weight: must be between 1 and/, 'weight 0' ],
    [ { line_item_id => $any->{id}, creative_id => $mpu->{id}, weight => 1.5 }, qr/^weight: must be an integer/, 'weight 1.5' ],
    [ { line_item_id => $any->{id}, creative_id => $mpu->{id}, status => 'DRAFT' }, qr/^status: must be one of ACTIVE, PAUSED/, 'status' ],
    [ { line_item_id => $any->{id}, creative_id => $mpu->{id}, advertiser_id => $acme->{id} }, qr/^advertiser_id: is read-only/, 'advertiser_id' ],
) {
    $t->refused(post(%{ $case->[0] }), 422, $case->[1], $case->[2]);
}

# ---- update -------------------------------------------------------------------------------------
$rev = $t->revision;
my $res = patch($lica->{id}, { status => 'PAUSED', weight => 3 });
is($res->{status}, 200, 'pause with a new weight') or diag $res->{content};
is_deeply([ @{ $res->{json} }{qw(status weight)} ], [ 'PAUSED', 3 ], '... both changed');
is($t->revision, $rev + 1, '... one revision');
is(patch($lica->{id}, { status => 'ACTIVE' })->{json}{status}, 'ACTIVE', 'and back to ACTIVE');
$t->refused(patch($lica->{id}, { creative_id => $banner->{id} }), 409, qr/^creative_id: cannot change/, 'the creative cannot change');
$t->refused(patch($lica->{id}, { line_item_id => $leaderboard->{id} }), 409, qr/^line_item_id: cannot change/, 'nor the line item');

# ---- delete ---------------------------------------------------------------------------------------
is($t->api('DELETE', "/api/licas/$lica->{id}")->{status}, 204, 'delete: 204');
is($t->redis('HEXISTS', 'adserve:lica_pairs', "$any->{id}:$mpu->{id}"), '0', 'the pair is free');
ok(!grep({ $_ eq $lica->{id} } members("adserve:creative_licas:$mpu->{id}")), 'out of the creative\'s index');
is($t->created('/api/licas', { line_item_id => $any->{id}, creative_id => $mpu->{id} })->{status}, 'ACTIVE',
   'the pair can be made again');
$t->refused($t->api('DELETE', "/api/licas/$lica->{id}"), 404, qr/^LICA not found/, 'the deleted one: 404');

# ---- lists -----------------------------------------------------------------------------------------
is($t->api('GET', "/api/licas?line_item_id=$any->{id}")->{json}{total}, 2, '?line_item_id=');
is($t->api('GET', "/api/licas?creative_id=$banner->{id}")->{json}{total}, 2, '?creative_id=');
is($t->api('GET', "/api/licas?creative_id=$banner->{id}&line_item_id=$any->{id}")->{json}{total}, 1, 'filters combine');
is($t->api('GET', "/api/licas?advertiser_id=$acme->{id}")->{json}{total}, 3, '?advertiser_id=');
is($t->api('GET', '/api/licas?status=PAUSED')->{json}{total}, 0, '?status=');
is($t->api('GET', '/api/licas')->{json}{total}, 3, 'all');

done_testing;
