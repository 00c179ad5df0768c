# The manager group (README "Account managers"): an advertiser's
# manager_id names its account manager, an admin or an operator. GET
# /api/manager/advertisers is a manager's book (an operator's own; an admin
# may name any manager), by name, with each advertiser's orders and
# creatives counted; GET /api/manager/managers lists every manager with the
# size of its book. A manager with advertisers can be neither deleted nor
# made an advertiser user until they have another.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my %user;
for my $u ([ 'ann@example.com', 'operator' ], [ 'bob@example.com', 'operator' ]) {
    $user{ $u->[0] } = $t->created('/api/users', { email => $u->[0], password => 'a-good-password', role => $u->[1] });
}
my $ann = $user{'ann@example.com'}{id};
my $bob = $user{'bob@example.com'}{id};
my @ann = (as => [ 'ann@example.com', 'a-good-password' ]);
my @bob = (as => [ 'bob@example.com', 'a-good-password' ]);
my $admin_id = $t->api('GET', '/api/auth/me')->{json}{id};

my %adv = map { $_ => $t->created('/api/advertisers', { name => $_ }) } qw(Zeta Acme Globex);
is($adv{Acme}{manager_id}, undef, 'an advertiser has no manager by default');
my $buyer = $t->created('/api/users', { email => 'buyer@acme.example', password => 'a-good-password',
                                        role => 'advertiser', advertiser_id => $adv{Acme}{id} });
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);

# ---- assigning ---------------------------------------------------------------
for my $name ('Zeta', 'Acme') {
    my $res = $t->api('PATCH', "/api/advertisers/$adv{$name}{id}", json => { manager_id => $ann });
    is($res->{status}, 200, "$name: Ann manages it");
    is($res->{json}{manager_id}, $ann, '... as the record says');
}
is($t->api('PATCH', "/api/advertisers/$adv{Globex}{id}", @ann, json => { manager_id => $bob })->{status},
   200, 'an operator assigns Globex to Bob');
$t->refused($t->api('PATCH', "/api/advertisers/$adv{Globex}{id}", json => { manager_id => $buyer->{id} }),
            422, qr/^manager_id: no admin or operator/, 'an advertiser user as manager');
$t->refused($t->api('PATCH', "/api/advertisers/$adv{Globex}{id}", json => { manager_id => Adserve::Test::uuid() }),
            422, qr/^manager_id: /, 'an unknown user as manager');
$t->refused($t->api('PATCH', "/api/advertisers/$adv{Globex}{id}", json => { manager_id => 'ann' }),
            422, qr/^manager_id: /, 'a manager_id that is no UUID');
my $new = $t->created('/api/advertisers', { name => 'Initech', manager_id => $bob });
is($new->{manager_id}, $bob, 'a new advertiser may name its manager');
is($t->api('GET', "/api/advertisers/$adv{Acme}{id}", @buyer)->{json}{manager_id}, $ann,
   'an advertiser user sees who manages its account');

# ---- books ---------------------------------------------------------------------
$t->created('/api/orders', { advertiser_id => $adv{Acme}{id}, name => "Acme order $_" }) for 1 .. 2;
$t->created('/api/creatives', { advertiser_id => $adv{Acme}{id}, name => 'Acme banner', type => 'IMAGE', w => 300, h => 250,
                                image_url => 'https://cdn.example/a.png', landing_url => 'https://acme.example/' });

my $res = $t->api('GET', '/api/manager/advertisers', @ann);
is($res->{status}, 200, 'Ann reads her book');
my $book = $res->{json};
is($book->{manager}{id}, $ann, '... hers');
is($book->{manager}{role}, 'operator', '... an operator');
is($book->{total}, 2, '... two advertisers');
is_deeply([ map { $_->{advertiser}{name} } @{ $book->{items} } ], [ 'Acme', 'Zeta' ], '... by name');
is_deeply([ map { [ $_->{orders}, $_->{creatives} ] } @{ $book->{items} } ], [ [ 2, 1 ], [ 0, 0 ] ],
          '... with their orders and creatives counted');
is($t->api('GET', '/api/manager/advertisers?limit=1&offset=1', @ann)->{json}{items}[0]{advertiser}{name}, 'Zeta',
   '... in pages');

is($t->api('GET', "/api/manager/advertisers?manager_id=$bob", @ann)->{status}, 403, "an operator may not read another's book");
is($t->api('GET', "/api/manager/advertisers?manager_id=$ann", @ann)->{json}{total}, 2, '... but may name herself');
$res = $t->api('GET', "/api/manager/advertisers?manager_id=$bob");
is($res->{status}, 200, "an admin reads Bob's book");
is_deeply([ map { $_->{advertiser}{name} } @{ $res->{json}{items} } ], [ 'Globex', 'Initech' ], '... Globex and Initech');
is($t->api('GET', '/api/manager/advertisers')->{json}{total}, 0, "an admin's own book: empty");
is($t->api('GET', "/api/manager/advertisers?manager_id=$buyer->{id}")->{status}, 404, 'an advertiser user has no book: 404');
is($t->api('GET', '/api/manager/advertisers?manager_id=x')->{status}, 422, 'a manager_id that is no UUID: 422');
is($t->api('GET', '/api/manager/advertisers?team=1')->{status}, 422, 'an unknown parameter: 422');
is($t->api('GET', '/api/manager/advertisers', @buyer)->{status}, 403, 'an advertiser user: 403');
is($t->api('GET', '/api/manager/advertisers', token => undef)->{status}, 401, 'no token: 401');

is($t->api('GET', "/api/advertisers?manager_id=$ann")->{json}{total}, 2, '/api/advertisers filters by manager too');

$res = $t->api('GET', '/api/manager/managers');
is($res->{status}, 200, 'the admin lists the managers');
my %size = map { $_->{id} => $_->{advertisers} } @{ $res->{json}{items} };
is_deeply(\%size, { $ann => 2, $bob => 2, $admin_id => 0 }, '... every admin and operator, with the size of its book');
is($t->api('GET', '/api/manager/managers', @ann)->{status}, 403, 'an operator may not');

# ---- reassigning; a manager stays one while it has advertisers --------------------
$t->api('PATCH', "/api/advertisers/$adv{Zeta}{id}", json => { manager_id => $bob });
is($t->api('GET', '/api/manager/advertisers', @ann)->{json}{total}, 1, 'Zeta moved: Ann has one left');
$res = $t->api('GET', '/api/manager/advertisers', @bob);
is($res->{json}{total}, 3, '... Bob three') or diag $res->{status}, $res->{content};
$t->refused($t->api('DELETE', "/api/users/$ann"), 409, qr/manages 1 advertisers/, 'deleting a manager with advertisers');
$t->refused($t->api('PATCH', "/api/users/$ann", json => { role => 'advertiser', advertiser_id => $adv{Acme}{id} }),
            409, qr/manages 1 advertisers/, 'making her an advertiser user');
is($t->api('PATCH', "/api/users/$ann", json => { role => 'admin' })->{status}, 200, 'making her an admin is fine');
$t->api('PATCH', "/api/advertisers/$adv{Acme}{id}", json => { manager_id => undef });
is($t->api('DELETE', "/api/users/$ann")->{status}, 204, 'with no advertisers left, she can go');

my ($audit) = grep { ($_->{after}{manager_id} // '') eq $bob && $_->{id} eq $adv{Zeta}{id} }
              @{ $t->api('GET', '/api/audit-logs?resource=advertiser&action=update')->{json}{items} };
is($audit->{before}{manager_id}, $ann, 'the audit log has the reassignment, from Ann to Bob');

done_testing;
