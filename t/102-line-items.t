# /api/line-items: the fields and their defaults (priority by type),
# validation of every field and of the rules between them (flight, goal
# against cost type), targeting checked on every write that sends it,
# every status transition (allowed and refused), the activation rules
# (not under an ARCHIVED order, not after the flight), the immutable
# order, the delete rule (409 with LICAs), targeted sizes that must keep
# fitting the LICAs' creatives, lists with filters, and Redis (the record
# in adserve:line_items, the indexes, a revision per write).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use POSIX qw(strftime);
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub members { sort split /\n/, $t->redis('SMEMBERS', $_[0]) }
sub patch { $t->api('PATCH', "/api/line-items/$_[0]", json => $_[1]) }
sub iso { strftime('%Y-%m-%dT%H:%M:%SZ', gmtime $_[0]) }

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order' });
my $unit = $t->created('/api/ad-units', { code => "li-$$", name => 'Unit', status => 'ACTIVE' });
my $seq = 0;
sub body { return { order_id => $order->{id}, name => 'Line ' . ++$seq, type => 'PRICE_PRIORITY',
                    cost_type => 'CPM', rate => 2.5, @_ } }
sub li { $t->created('/api/line-items', body(@_)) }
sub post { $t->api('POST', '/api/line-items', json => body(@_)) }

# ---- create: the defaults ---------------------------------------------------------------
my $rev = $t->revision;
my $li = li();
is_deeply({ map { $_ => $li->{$_} } qw(order_id advertiser_id status priority start_at end_at goal delivery frequency_caps) }, {
    order_id => $order->{id}, advertiser_id => $acme->{id}, status => 'DRAFT', priority => 12,
    start_at => undef, end_at => undef, goal => { type => 'NONE' }, delivery => 'EVEN', frequency_caps => [],
}, 'defaults: DRAFT, priority 12 for PRICE_PRIORITY, open flight, no goal, EVEN, no caps; the order\'s advertiser');
is_deeply($li->{targeting}{ad_units}, { include => [], exclude => [] }, 'targeting normalised (targeting.c defaults)');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:line_items', $li->{id})), $li, 'adserve:line_items holds the record');
is($t->revision, $rev + 1, 'one revision');
is_deeply([ members("adserve:order_line_items:$order->{id}") ], [ $li->{id} ], 'the order\'s line item index');
my %priority = (SPONSORSHIP => 4, STANDARD => 8, PRICE_PRIORITY => 12, HOUSE => 16);
is(li(type => $_)->{priority}, $priority{$_}, "$_: default priority $priority{$_}") for sort keys %priority;
is(li(type => 'HOUSE', priority => 3)->{priority}, 3, 'a given priority stays');

my $full = li(type => 'STANDARD', cost_type => 'CPC', rate => 0.4, start_at => '2030-01-01T00:00:00Z',
              end_at => '2030-02-01T00:00:00+01:00', goal => { type => 'CLICKS', units => 5000 },
              delivery => 'ASAP', frequency_caps => [ { max => 3, seconds => 86400 }, { max => 1, seconds => 60 } ],
              targeting => { ad_units => { include => [ $unit->{id} ] }, sizes => [ { w => 300, h => 250 } ] });
is_deeply([ @$full{qw(start_at end_at delivery)} ], [ '2030-01-01T00:00:00Z', '2030-02-01T00:00:00+01:00', 'ASAP' ],
          'the flight and delivery as sent');
is_deeply($full->{frequency_caps}, [ { max => 3, seconds => 86400 }, { max => 1, seconds => 60 } ], 'frequency caps');
is_deeply($full->{goal}, { type => 'CLICKS', units => 5000 }, 'a CLICKS goal');

# ---- validation -------------------------------------------------------------------------------
my $ghost = Adserve::Test::uuid();
for my $case (
    [ { order_id => undef }, 422, qr/^order_id: must not be null/, 'order_id null' ],
    [ { order_id => $ghost }, 422, qr/^order_id: no such order/, 'unknown order' ],
    [ { type => 'DIRECT' }, 422, qr/^type: must be one of SPONSORSHIP, STANDARD, PRICE_PRIORITY, HOUSE/, 'type' ],
    [ { cost_type => 'CPV' }, 422, qr/^cost_type: must be one of CPM, CPC, CPA/, 'cost type' ],
    [ { rate => -0.01 }, 422, qr/^rate: must be between 0 and/, 'negative rate' ],
    [ { rate => 1e6 }, 422, qr/^rate: must be between 0 and 999999\b/, 'a rate of a million' ],
    [ { rate => '1' }, 422, qr/^rate: must be a number/, 'rate a string' ],
    [ { priority => 0 }, 422, qr/^priority: must be between 1 and 16/, 'priority 0' ],
    [ { priority => 17 }, 422, qr/^priority: must be between 1 and 16/, 'priority 17' ],
    [ { priority => 2.5 }, 422, qr/^priority: must be an integer/, 'priority fractional' ],
    [ { start_at => 'tomorrow' }, 422, qr/^start_at: must be an RFC 3339 date-time/, 'start_at' ],
    [ { end_at => '2030-02-30T00:00:00Z' }, 422, qr/^end_at: must be an RFC 3339/, 'no February 30' ],
    [ { start_at => '2030-01-02T00:00:00Z', end_at => '2030-01-01T00:00:00Z' }, 422,
      qr/^end_at: must be after start_at/, 'a flight that ends before it starts' ],
    [ { start_at => '2030-01-01T01:00:00+01:00', end_at => '2030-01-01T00:00:00Z' }, 422,
      qr/^end_at: must be after start_at/, 'an empty flight (offsets count)' ],
    [ { goal => { type => 'IMPRESSIONS' } }, 422, qr/^goal\.units: is required/, 'a goal without units' ],
    [ { goal => { type => 'IMPRESSIONS', units => 0 } }, 422, qr/^goal\.units: must be between 1/, 'zero units' ],
    [ { goal => { type => 'NONE', units => 5 } }, 422, qr/^goal\.units: unknown property/, 'units without a goal' ],
    [ { goal => { type => 'VIEWS', units => 5 } }, 422, qr/^goal\.type: must be one of IMPRESSIONS, CLICKS, NONE/, 'goal type' ],
    [ { cost_type => 'CPM', goal => { type => 'CLICKS', units => 10 } }, 422, qr/^goal\.type: a CPM line item's goal counts IMPRESSIONS/, 'CPM with a CLICKS goal' ],
    [ { cost_type => 'CPC', goal => { type => 'IMPRESSIONS', units => 10 } }, 422, qr/^goal\.type: a CPC line item's goal counts CLICKS/, 'CPC with an IMPRESSIONS goal' ],
    [ { delivery => 'FAST' }, 422, qr/^delivery: must be one of EVEN, ASAP/, 'delivery' ],
    [ { frequency_caps => [ { max => 0, seconds => 60 } ] }, 422, qr/^frequency_caps\[0\]\.max: must be between 1/, 'cap max 0' ],
    [ { frequency_caps => [ { max => 1 } ] }, 422, qr/^frequency_caps\[0\]\.seconds: is required/, 'cap without a window' ],
    [ { frequency_caps => [ map { { max => 1, seconds => $_ } } 1 .. 9 ] }, 422, qr/^frequency_caps: must have at most 8/, 'nine caps' ],
    [ { advertiser_id => $acme->{id} }, 422, qr/^advertiser_id: is read-only/, 'advertiser_id comes from the order' ],
    [ { status => 'ACTIVE' }, 409, qr/^status: a new line item starts as DRAFT/, 'born ACTIVE' ],
    [ { targeting => { ad_units => { include => [ $ghost ] } } }, 422,
      qr/^targeting\.ad_units\.include\[0\]: ad unit "$ghost" does not exist/, 'targeting an unknown ad unit' ],
    [ { targeting => { placements => [ $ghost ] } }, 422, qr/^targeting\.placements\[0\]: placement "$ghost" does not exist/,
      'targeting an unknown placement' ],
    [ { targeting => { kv => { type => 'cmp', data => { lhs => ['nokey'], op => 'eq', rhs => 'x' } } } }, 422,
      qr/^targeting\.kv\.data\.lhs\[0\]: "nokey" is not a custom targeting key/, 'targeting an unknown key' ],
    [ { targeting => { sizes => [ { w => 300 } ] } }, 422, qr/^targeting\.sizes\[0\]\.h: is required/, 'a size without h' ],
    [ { targeting => { colour => 'red' } }, 422, qr/^targeting\.colour: unknown property/, 'unknown targeting member' ],
) {
    $t->refused(post(%{ $case->[0] }), $case->[1], $case->[2], $case->[3]);
}
$t->refused(patch($li->{id}, { targeting => { ad_units => { exclude => [ $ghost ] } } }), 422,
        qr/^targeting\.ad_units\.exclude\[0\]: ad unit/, 'PATCH checks targeting too');
$t->refused(patch($full->{id}, { end_at => '2029-12-31T00:00:00Z' }), 422, qr/^end_at: must be after start_at/,
        'PATCH checks the flight against the stored start');
$t->refused(patch($full->{id}, { cost_type => 'CPM' }), 422, qr/^goal\.type: a CPM/, 'PATCH checks the goal against a new cost type');
is(patch($full->{id}, { cost_type => 'CPM', goal => { type => 'IMPRESSIONS', units => 100000 } })->{status}, 200,
   '... which changes with a fitting goal');
$t->refused(patch($li->{id}, { order_id => Adserve::Test::uuid() }), 409, qr/^order_id: cannot change/, 'order_id is immutable');

# ---- every transition -------------------------------------------------------------------------
my @states = qw(DRAFT ACTIVE PAUSED COMPLETED ARCHIVED);
my %path = (DRAFT => [], ACTIVE => ['ACTIVE'], PAUSED => [qw(ACTIVE PAUSED)], COMPLETED => [qw(ACTIVE COMPLETED)],
            ARCHIVED => ['ARCHIVED']);
my %allowed = map { $_ => 1 } ('DRAFT ACTIVE', 'DRAFT ARCHIVED', 'ACTIVE PAUSED', 'ACTIVE COMPLETED',
                               'ACTIVE ARCHIVED', 'PAUSED ACTIVE', 'PAUSED COMPLETED', 'PAUSED ARCHIVED',
                               'COMPLETED ARCHIVED');
sub li_in { $t->in_state('/api/line-items', \&li, \%path, @_) }
$t->transitions_ok('/api/line-items', \&li, \%path, \@states, \%allowed);
$t->refused(patch(li_in('ARCHIVED')->{id}, { rate => 3 }), 409, qr/ARCHIVED/, 'an ARCHIVED line item does not change');
is(patch(li_in('COMPLETED')->{id}, { name => 'Done' })->{status}, 200, 'a COMPLETED one can still be renamed');

# ---- activation ---------------------------------------------------------------------------------
is($order->{status}, 'DRAFT', 'the order is still DRAFT');
is(patch(li()->{id}, { status => 'ACTIVE' })->{status}, 200,
   'a line item of a DRAFT order can be activated (serving waits for the order\'s approval)');
my $ended = li(start_at => iso(time - 7200), end_at => iso(time - 3600));
$t->refused(patch($ended->{id}, { status => 'ACTIVE' }), 409, qr/^status: the flight ended at/, 'a flight in the past');
is(patch($ended->{id}, { end_at => iso(time + 3600), status => 'ACTIVE' })->{status}, 200, '... fixed with a new end');
my $waiting = li();
my $doomed = li();
is(patch($doomed->{id}, { status => 'ACTIVE' })->{status}, 200, 'an ACTIVE one');
is($t->api('PATCH', "/api/orders/$order->{id}", json => { status => 'ARCHIVED' })->{status}, 200, 'the order archived');
$t->refused(patch($waiting->{id}, { status => 'ACTIVE' }), 409, qr/^status: the order is ARCHIVED/,
        'a line item of an ARCHIVED order cannot be activated');
is(patch($doomed->{id}, { status => 'PAUSED' })->{status}, 200, '... but can be paused');
$t->refused(patch($doomed->{id}, { status => 'ACTIVE' }), 409, qr/order is ARCHIVED/, '... and not resumed');
$t->refused(post(), 409, qr/^order_id: the order is ARCHIVED/, 'no new line item under an ARCHIVED order');

# ---- sizes, LICAs, delete -----------------------------------------------------------------------
my $order2 = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order 2' });
my $sized = $t->created('/api/line-items', body(order_id => $order2->{id}, targeting => { sizes => [ { w => 300, h => 250 } ] }));
my $creative = $t->created('/api/creatives', { advertiser_id => $acme->{id}, name => 'MPU', type => 'IMAGE', w => 300, h => 250,
                                           image_url => 'https://cdn.example/mpu.png', landing_url => 'https://acme.example/' });
my $lica = $t->created('/api/licas', { line_item_id => $sized->{id}, creative_id => $creative->{id} });
$t->refused(patch($sized->{id}, { targeting => { sizes => [ { w => 728, h => 90 } ] } }), 409,
        qr/^targeting\.sizes: creative $creative->{id} of LICA $lica->{id} would no longer fit \(300x250\)/,
        'targeted sizes that leave a LICA\'s creative out');
is(patch($sized->{id}, { targeting => { sizes => [ { w => 728, h => 90 }, { w => 300, h => 250 } ] } })->{status}, 200,
   'sizes that still hold it');
$t->refused($t->api('DELETE', "/api/line-items/$sized->{id}"), 409, qr/has LICAs \(1\)/, 'a line item with a LICA cannot be deleted');
is($t->api('DELETE', "/api/licas/$lica->{id}")->{status}, 204, 'the LICA deleted');
is($t->api('DELETE', "/api/line-items/$sized->{id}")->{status}, 204, 'then the line item');
ok(!grep({ $_ eq $sized->{id} } members("adserve:order_line_items:$order2->{id}")), 'out of the order\'s index');

# ---- the placement index -------------------------------------------------------------------------
my $p1 = $t->created('/api/placements', { name => 'P1', ad_unit_ids => [ $unit->{id} ] });
my $p2 = $t->created('/api/placements', { name => 'P2' });
my $pl = $t->created('/api/line-items', body(order_id => $order2->{id}, targeting => { placements => [ $p1->{id}, $p2->{id} ] }));
is_deeply([ members("adserve:placement_line_items:$p1->{id}") ], [ $pl->{id} ], 'each targeted placement indexes the line item');
is(patch($pl->{id}, { targeting => { placements => [ $p2->{id} ] } })->{status}, 200, 'targeting one placement less');
is_deeply([ members("adserve:placement_line_items:$p1->{id}") ], [], '... leaves its index');
is_deeply([ members("adserve:placement_line_items:$p2->{id}") ], [ $pl->{id} ], '... keeps the other');

# ---- lists ------------------------------------------------------------------------------------------
my $o2 = $t->api('GET', "/api/line-items?order_id=$order2->{id}")->{json};
is($o2->{total}, 1, '?order_id=');
is($o2->{items}[0]{id}, $pl->{id}, '... the one left');
my $all = $t->api('GET', '/api/line-items?limit=500')->{json};
is($t->api('GET', '/api/line-items?status=ACTIVE')->{json}{total},
   scalar(grep { $_->{status} eq 'ACTIVE' } @{ $all->{items} }), '?status=');
is($t->api('GET', '/api/line-items?type=HOUSE')->{json}{total},
   scalar(grep { $_->{type} eq 'HOUSE' } @{ $all->{items} }), '?type=');
is($t->api('GET', "/api/line-items?advertiser_id=$acme->{id}")->{json}{total}, $all->{total}, '?advertiser_id=');
is($t->api('GET', '/api/line-items?q=LINE%201')->{json}{total},
   scalar(grep { $_->{name} =~ /line 1/i } @{ $all->{items} }), '?q=');
is($t->api('GET', '/api/line-items?limit=2&offset=1')->{json}{items}[0]{id}, $all->{items}[1]{id}, 'paging');
$t->refused($t->api('GET', '/api/line-items?type=DIRECT'), 422, qr/^type: must be one of/, '?type= is the enum');

done_testing;
