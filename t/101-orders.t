# /api/orders: fields, validation, every status transition (allowed and
# refused), who may approve, ARCHIVED as final, the delete rule (only in
# DRAFT, and not with line items), the immutable advertiser, lists with
# filters, and the serving data (adserve:orders holds the record; every
# write bumps the revision once).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

sub patch { $t->api('PATCH', "/api/orders/$_[0]", json => $_[1], @_[2 .. $#_]) }

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
my $globex = $t->created('/api/advertisers', { name => 'Globex' });

# ---- create ---------------------------------------------------------------------------
my $rev = $t->revision;
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Spring sale' });
is($order->{status}, 'DRAFT', 'a new order is DRAFT');
is($order->{advertiser_id}, $acme->{id}, 'its advertiser');
is($order->{notes}, undef, 'notes null by default');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:orders', $order->{id})), $order,
          'adserve:orders holds the record as the API shows it (data contract)');
is($t->revision, $rev + 1, 'the create bumped the revision once');

for my $case (
    [ { name => 'x' }, 422, qr/^advertiser_id: is required/, 'no advertiser' ],
    [ { advertiser_id => $acme->{id} }, 422, qr/^name: is required/, 'no name' ],
    [ { advertiser_id => 'acme', name => 'x' }, 422, qr/^advertiser_id: must be a UUID/, 'advertiser_id not a UUID' ],
    [ { advertiser_id => Adserve::Test::uuid(), name => 'x' }, 422, qr/^advertiser_id: no such advertiser/, 'unknown advertiser' ],
    [ { advertiser_id => $acme->{id}, name => 'x', status => 'LIVE' }, 422, qr/^status: must be one of DRAFT, APPROVED, PAUSED, ARCHIVED/, 'unknown status' ],
    [ { advertiser_id => $acme->{id}, name => 'x', status => 'APPROVED' }, 409, qr/^status: a new order starts as DRAFT/, 'born APPROVED' ],
    [ { advertiser_id => $acme->{id}, name => 'x', budget => 5 }, 422, qr/^budget: unknown property/, 'unknown field' ],
) {
    $t->refused($t->api('POST', '/api/orders', json => $case->[0]), $case->[1], $case->[2], $case->[3]);
}

# ---- every transition -------------------------------------------------------------------
my @states = qw(DRAFT APPROVED PAUSED ARCHIVED);
my %path = (DRAFT => [], APPROVED => ['APPROVED'], PAUSED => [qw(APPROVED PAUSED)], ARCHIVED => ['ARCHIVED']);
my %allowed = map { $_ => 1 } ('DRAFT APPROVED', 'DRAFT ARCHIVED', 'APPROVED PAUSED', 'APPROVED ARCHIVED',
                               'PAUSED APPROVED', 'PAUSED ARCHIVED');
my $seq = 0;
sub new_order { $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'State ' . ++$seq }) }
sub order_in { $t->in_state('/api/orders', \&new_order, \%path, @_) }
$t->transitions_ok('/api/orders', \&new_order, \%path, \@states, \%allowed);
my $same = order_in('PAUSED');
is(patch($same->{id}, { status => 'PAUSED' })->{status}, 200, 'the same status again: 200 (nothing to do)');
my $archived = order_in('ARCHIVED');
$t->refused(patch($archived->{id}, { name => 'renamed' }), 409, qr/ARCHIVED: it can no longer change/,
        'an ARCHIVED order: no change at all');
is(patch($archived->{id}, { name => $archived->{name} })->{status}, 200, '... except none');
$t->refused(patch($order->{id}, { status => 'GONE' }), 422, qr/^status: must be one of/, 'an unknown status: 422');

# ---- who approves -------------------------------------------------------------------------
is($t->api('POST', '/api/users', json => { email => 'buyer@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201,
   'a user of Acme');
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);
my $own = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Self-made' }, @buyer);
is($own->{created_by}, $t->api('GET', '/api/auth/me', @buyer)->{json}{id}, 'an advertiser makes its own orders');
$t->refused(patch($own->{id}, { status => 'APPROVED' }, @buyer), 403, qr/only admins and operators may set APPROVED/,
        'but does not approve them');
is(patch($own->{id}, { status => 'APPROVED' })->{status}, 200, 'an admin does');
is(patch($own->{id}, { status => 'PAUSED' }, @buyer)->{status}, 200, 'the advertiser pauses it');
$t->refused(patch($own->{id}, { status => 'APPROVED' }, @buyer), 403, qr/only admins and operators/, '... but resuming is a review too');
is(patch($own->{id}, { status => 'ARCHIVED' }, @buyer)->{status}, 200, 'the advertiser archives it');

# ---- fields ----------------------------------------------------------------------------------
my $res = patch($order->{id}, { name => 'Summer sale', notes => 'PO 4711' });
is($res->{status}, 200, 'rename with notes');
is_deeply([ @{ $res->{json} }{qw(name notes status)} ], [ 'Summer sale', 'PO 4711', 'DRAFT' ], 'only those change');
$t->refused(patch($order->{id}, { advertiser_id => $globex->{id} }), 409, qr/^advertiser_id: cannot change/,
        'moving an order to another advertiser');
is(patch($order->{id}, { advertiser_id => $acme->{id} })->{status}, 200, 'repeating the same advertiser is fine');
$t->refused(patch($order->{id}, { id => Adserve::Test::uuid() }), 422, qr/^id: is read-only/, 'id read-only');

# ---- delete ------------------------------------------------------------------------------------
my $approved = order_in('APPROVED');
$t->refused($t->api('DELETE', "/api/orders/$approved->{id}"), 409, qr/only a DRAFT order can be deleted \(this one is APPROVED\)/,
        'an APPROVED order cannot be deleted');
$t->refused($t->api('DELETE', "/api/orders/$archived->{id}"), 409, qr/only a DRAFT order/, '... nor an ARCHIVED one');
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'LI', type => 'HOUSE', cost_type => 'CPM', rate => 0 });
$t->refused($t->api('DELETE', "/api/orders/$order->{id}"), 409, qr/has line items \(1\)/, 'a DRAFT order with a line item');
is($t->api('DELETE', "/api/line-items/$li->{id}")->{status}, 204, 'the line item deleted');
$rev = $t->revision;
is($t->api('DELETE', "/api/orders/$order->{id}")->{status}, 204, 'then the DRAFT order: 204');
is($t->redis('HEXISTS', 'adserve:orders', $order->{id}), '0', 'gone from adserve:orders');
is($t->revision, $rev + 1, 'the delete bumped the revision');
is($t->api('GET', "/api/orders/$order->{id}")->{status}, 404, 'GET: 404');
$t->refused($t->api('DELETE', '/api/orders/' . Adserve::Test::uuid()), 404, qr/order not found/, 'unknown id');

# ---- lists --------------------------------------------------------------------------------------
$t->created('/api/orders', { advertiser_id => $globex->{id}, name => "Globex $_" }) for 1 .. 3;
my $all = $t->api('GET', '/api/orders')->{json};
my $n_acme = grep { $_->{advertiser_id} eq $acme->{id} } @{ $all->{items} };
is($t->api('GET', "/api/orders?advertiser_id=$globex->{id}")->{json}{total}, 3, '?advertiser_id=');
is($t->api('GET', "/api/orders?advertiser_id=$acme->{id}")->{json}{total}, $n_acme, '... the other one');
is($t->api('GET', '/api/orders?status=ARCHIVED')->{json}{total},
   scalar(grep { $_->{status} eq 'ARCHIVED' } @{ $all->{items} }), '?status=');
is($t->api('GET', "/api/orders?advertiser_id=$globex->{id}&q=GLOBEX%202")->{json}{total}, 1, '?q= combined with a filter');
is($t->api('GET', '/api/orders?status=ARCHIVED&advertiser_id=' . $globex->{id})->{json}{total}, 0, 'filters combine');
$t->refused($t->api('GET', '/api/orders?status=LIVE'), 422, qr/^status: must be one of/, '?status= is the enum');
$t->refused($t->api('GET', '/api/orders?advertiser_id=x'), 422, qr/^advertiser_id: must be a UUID/, '?advertiser_id= a UUID');

done_testing;
