# Passback (issue 15, point 5; README "Passback"): an ad unit whose
# ext.passback has display markup answers a request nothing fills with that
# markup for the client to render, instead of a bare 204; a unit without one
# still says 204. The answer carries no ad_log and no event URL (the tag is
# another network's), is counted as the unit's passback in /api/metrics, and
# follows an edit of the unit within the usual second. Markup of another
# kind or over 16 KiB is kept by the API (the spec: any JSON) and not served.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;
my $TAG = qq{<script src="https://passback.example/tag.js?a=1&b=2"></script>\n<div class='x'>"quoted" \\ é</div>};

sub unit {
    my (%o) = @_;
    return $t->created('/api/ad-units', { code => "pb-$o{code}-$$", name => "Passback $o{code}", status => 'ACTIVE',
                                          ad_unit_sizes => $o{sizes} // [ { w => 300, h => 250 } ],
                                          exists $o{ext} ? (ext => $o{ext}) : () });
}
# every passback answer each unit got, to check the counters against
my %passbacks;
sub ad {
    my ($id) = @_;
    my $res = $t->ad($id);
    $passbacks{$id}++ if $res->{status} == 200 && $res->{json} && $res->{json}{ad}{passback};
    return $res;
}
sub answered {
    my ($id, $want) = @_;
    my $res;
    $t->wait_until(5, sub { $res = ad($id); $res->{status} == $want });
    return $res;
}

# ---- served when nothing fills ----------------------------------------------------
my $unit = unit(code => 'a', ext => { passback => { display => $TAG, video => 'https://vast.example/tag.xml' } });
my $res = answered($unit->{id}, 200);
is($res->{status}, 200, 'nothing fills a unit with ext.passback.display: 200, not 204');
like($res->{headers}{'content-type'}, qr{^application/json}, '... JSON');
is_deeply($res->{json}, { version => '0.1.0',
                          ad => { id => $unit->{id}, passback => { w => 300, h => 250, adm => $TAG } },
                          ext => { message => 'passback' } },
          '... ad.passback: the markup byte for byte (JSON-escaped), at the unit\'s first size; no ad_log, no event URL');
is($res->{headers}{'cache-control'}, 'no-store', '... never cached, as any serving answer');

my $sized = unit(code => 'nosize', sizes => [], ext => { passback => { display => '<b>tag</b>' } });
is_deeply(answered($sized->{id}, 200)->{json}{ad}{passback}, { adm => '<b>tag</b>' },
          'a unit without sizes: the markup alone (the client uses its slot\'s)');

# ---- not served --------------------------------------------------------------------------
my $plain = unit(code => 'plain');
my $big = unit(code => 'big', ext => { passback => { display => 'x' x 16385 } });
my $odd = unit(code => 'odd', ext => { passback => { display => { html => '<b>x</b>' }, '300x250' => '<b>y</b>' } });
my $edge = unit(code => 'edge', ext => { passback => { display => 'y' x 16384 } });
# every worker at the revision of these units: a worker behind would say 404
ok($t->wait_until(10, sub { $t->workers_at($t->revision) }), 'every worker serves the new units');
is(answered($edge->{id}, 200)->{status}, 200, 'markup of 16 KiB exactly: served');
is(answered($plain->{id}, 204)->{status}, 204, 'a unit without passback: 204');
is($t->ad($big->{id})->{status}, 204, 'markup over 16 KiB: kept by the API, not served (204)');
is($t->api('GET', "/api/ad-units/$big->{id}")->{json}{ext}{passback}{display}, 'x' x 16385, '... kept');
is($t->ad($odd->{id})->{status}, 204, 'passback JSON of another shape (the spec allows any): 204');

# ---- direct demand first -----------------------------------------------------------------------
my $c = $t->chain(unit => { id => $unit->{id}, code => "pb-a-$$", name => 'Passback a', ad_unit_sizes => [ { w => 300, h => 250 } ],
                            ext => { passback => { display => $TAG } } });
$res = answered($unit->{id}, 200);
$t->wait_until(5, sub { $res = ad($unit->{id}); $res->{json} && $res->{json}{ad}{display} });
ok($res->{json}{ad}{display} && !$res->{json}{ad}{passback}, 'a line item fills it: the ad, not the passback');
ok($res->{json}{ext}{ad_log}, '... with its ad_log');
$t->api('PATCH', "/api/line-items/$c->{line_item}", json => { status => 'PAUSED' });
ok($t->wait_until(5, sub { (ad($unit->{id})->{json} // {})->{ad}{passback} }),
   'the line item paused: the passback again');

# ---- an edit serves within the second ------------------------------------------------------------
$t->api('PATCH', "/api/ad-units/$plain->{id}", json => { ext => { passback => { display => '<i>now</i>' } } });
is_deeply(answered($plain->{id}, 200)->{json}{ad}{passback}{adm}, '<i>now</i>', 'a passback added: served');
$t->api('PATCH', "/api/ad-units/$plain->{id}", json => { ext => { passback => undef } });
is(answered($plain->{id}, 204)->{status}, 204, '... and removed: 204 again');

# ---- counted ---------------------------------------------------------------------------------
ad($sized->{id}) for 1 .. 5;
ok($t->wait_until(5, sub { $t->stat_sum("u:$sized->{id}:passback") == $passbacks{ $sized->{id} } }),
   "each passback answer counted once, as the unit's \"passback\" in its hour ($passbacks{ $sized->{id} })")
    or diag $t->stat_sum("u:$sized->{id}:passback");
my $rows = $t->api('GET', "/api/metrics?group_by=ad_unit&ad_unit_id=$sized->{id}")->{json}{rows};
is($rows->[0]{passbacks}, $passbacks{ $sized->{id} }, '/api/metrics shows them as the row\'s passbacks');
is($rows->[0]{ads}, 0, '... and no ad served');
is($t->api('GET', "/api/metrics?group_by=line_item")->{json}{rows}[0]{passbacks}, undef,
   '... passbacks are ad units\' only (null for other groups)');

# ---- GET /app/v0/vast: no passback of this kind ---------------------------------------------------
$res = $t->request('GET', "/app/v0/vast/$sized->{id}");
is($res->{content}, '<VAST version="4.2"/>', 'a player\'s VAST request: no fill stays the empty VAST');

done_testing();
