# GET /api/audit-logs: admin only, newest first, filters, time windows and
# paging over the audit stream. Records are written straight into the
# stream here (its entries are the contract: txn.h), at known times.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
$t->redis('DEL', 'adserve:audit');        # whatever start-up wrote

# 30 records, one a minute from 2026-01-01T00:00:00Z, alternating resources
my $t0 = 1767225600;                       # 2026-01-01T00:00:00Z
for my $i (0 .. 29) {
    my $res = $i % 3 == 0 ? 'user' : 'ad_unit';
    $t->redis('XADD', 'adserve:audit', ($t0 + 60 * $i) * 1000 . '-0',
              at => "minute $i", actor => $i % 2 ? 'alice' : 'bob', role => 'admin',
              action => $i == 29 ? 'delete' : 'update', resource => $res, id => "r$i",
              before => 'null', after => encode_json({ n => $i }));
}

my $res = $t->api('GET', '/api/audit-logs');
is($res->{status}, 200, 'the admin reads the audit log');
is($res->{json}{total}, 30, 'total counts every record');
is(scalar @{ $res->{json}{items} }, 30, 'all fit the default page');
is($res->{json}{items}[0]{id}, 'r29', 'newest first');
is_deeply($res->{json}{items}[0]{after}, { n => 29 }, 'before/after come back as JSON');
is($res->{json}{items}[0]{before}, undef, '... null as null');
is($res->{json}{items}[0]{seq}, ($t0 + 60 * 29) * 1000 . '-0', 'seq is the stream id');

$res = $t->api('GET', '/api/audit-logs?limit=5&offset=5');
is_deeply([ map { $_->{id} } @{ $res->{json}{items} } ], [ map { "r$_" } reverse 20 .. 24 ],
          'limit and offset page through, newest first');
is($res->{json}{total}, 30, '... with the total of all matches');

$res = $t->api('GET', '/api/audit-logs?resource=user');
is($res->{json}{total}, 10, 'filter by resource');
ok(!grep({ $_->{resource} ne 'user' } @{ $res->{json}{items} }), '... only users');
is($t->api('GET', '/api/audit-logs?actor=alice&resource=ad_unit')->{json}{total}, 10,
   'filters combine');
is($t->api('GET', '/api/audit-logs?action=delete')->{json}{items}[0]{id}, 'r29', 'filter by action');
is($t->api('GET', '/api/audit-logs?id=r7')->{json}{total}, 1, 'filter by resource id');

$res = $t->api('GET', '/api/audit-logs?from=2026-01-01T00:10:00Z&to=2026-01-01T00:19:00Z');
is($res->{json}{total}, 10, 'a time window, both ends inclusive');
is_deeply([ map { $_->{id} } @{ $res->{json}{items} }[0, -1] ], ['r19', 'r10'], '... the right ten');
is($t->api('GET', '/api/audit-logs?from=2026-01-01T01:10:00%2B01:00&to=2026-01-01T00:10:59Z')->{json}{total},
   1, 'offsets count, and the end of the window takes its whole second');

# batches: more records than one read of the stream
$t->redis('XADD', 'adserve:audit', '*', at => 'now', actor => 'bulk', role => 'admin',
          action => 'update', resource => 'bulk', id => "b$_", before => 'null', after => 'null')
    for 1 .. 1200;
is($t->api('GET', '/api/audit-logs?resource=bulk&limit=1')->{json}{total}, 1200,
   'a scan over more than one batch counts every match');
is($t->api('GET', '/api/audit-logs?resource=user')->{json}{total}, 10,
   '... and finds old ones behind many new ones');

for my $bad ('limit=0', 'limit=501', 'limit=x', 'offset=-1', 'from=yesterday', 'to=2026-02-30T00:00:00Z') {
    $res = $t->api('GET', "/api/audit-logs?$bad");
    is($res->{status}, 422, "422 for $bad");
    like($res->{json}{detail} // '', qr/^(limit|offset|from|to):/, '... naming the parameter');
}

is($t->api('GET', '/api/audit-logs', token => undef)->{status}, 401, 'no token: 401');

is($t->api('POST', '/api/users', json => { email => 'op@example.com',
                                           password => 'operator-password', role => 'operator' })->{status},
   201, 'an operator is made');
is($t->api('GET', '/api/audit-logs', as => ['op@example.com', 'operator-password'])->{status},
   403, 'an operator: 403');
my $op_made = $t->api('GET', '/api/audit-logs?resource=user&action=create');
is($op_made->{json}{items}[0]{after}{email}, 'op@example.com', 'the user write is in the audit log');
ok(!grep({ /password/ } keys %{ $op_made->{json}{items}[0]{after} }), '... with no password in it');

done_testing;
