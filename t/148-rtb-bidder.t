# The reference OpenRTB 2.6 bidder (scripts/rtb-bidder), which the external
# demand's tests and bench call: what it answers in each behaviour, the
# markup it bids for each kind of imp, the floor, its latency, and what it
# keeps of what it saw (bid requests, notices), on keep-alive connections.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Time::HiRes qw(time sleep);
use Adserve::Test;

my $port = Adserve::Test::free_port();
my $pid = fork // die "fork: $!";
if (!$pid) {
    exec "$FindBin::Bin/../scripts/rtb-bidder", '--port', $port, '--quiet', '--price', '2.5';
    die "exec: $!";
}
END { kill 'TERM', $pid if $pid }

my $base = "http://127.0.0.1:$port";
my $http = HTTP::Tiny->new(timeout => 5, keep_alive => 1);
my $J = JSON::PP->new->canonical;
sub call {
    my ($method, $path, $body) = @_;
    my $res = $http->request($method, "$base$path", defined $body ? { content => ref $body ? $J->encode($body) : $body } : {});
    $res->{json} = eval { $J->decode($res->{content}) } if length($res->{content} // '');
    return $res;
}
my $up;
for (1 .. 100) { last if ($up = $http->get("$base/requests")->{status} == 200); sleep 0.05 }
ok($up, 'the bidder listens');

my $req = { id => 'auction-1', tmax => 120,
            imp => [ { id => 'd', banner => { format => [ { w => 728, h => 90 } ] }, bidfloor => 1 },
                     { id => 'v', video => { w => 640, h => 360, mimes => ['video/mp4'] } },
                     { id => 'n', native => { ver => '1.2', request => $J->encode({ ver => '1.2', assets => [
                         { id => 1, required => 1, title => { len => 90 } }, { id => 3, img => { type => 1 } },
                         { id => 4, data => { type => 2 } }, { id => 7, video => { mimes => ['video/mp4'] } } ] }) } },
                     { id => 'f', banner => { w => 300, h => 250 }, bidfloor => 3 } ] };
my $res = call('POST', '/openrtb2/auction', $req);
is($res->{status}, 200, 'a bid request: 200');
my @bids = @{ $res->{json}{seatbid}[0]{bid} };
is($res->{json}{id}, 'auction-1', '... a BidResponse for the request\'s id');
is_deeply([ map { $_->{impid} } @bids ], [qw(d v n)], '... a bid per imp, none under the floor above the price (f)');
is_deeply([ map { $_->{mtype} } @bids ], [ 1, 2, 4 ], '... mtype: banner, video, native');
is_deeply([ @{ $bids[0] }{qw(w h price crid)} ], [ 728, 90, 2.5, 'rtb-creative-1' ], '... the banner at the imp\'s format');
like($bids[1]{adm}, qr{^<VAST version="4\.2">.*<InLine>}s, '... a VAST 4.2 InLine for the video');
my $nat = $J->decode($bids[2]{adm});
is($nat->{ver}, '1.2', '... a Native 1.2 response for the native imp');
is_deeply([ map { [ $_->{id}, grep { $_ ne 'id' } sort keys %$_ ] } @{ $nat->{assets} } ],
          [ [ 1, 'title' ], [ 3, 'img' ], [ 4, 'data' ], [ 7, 'video' ] ], '... each asset asked for answered, by its id and kind');
is_deeply([ @{ $nat->{assets}[1]{img} }{qw(type w h)} ], [ 1, 80, 80 ], '... an icon for an icon');
is($nat->{assets}[2]{data}{type}, 2, '... data of the type asked');
like($nat->{assets}[3]{video}{vasttag}, qr{^<VAST version="4\.2">}, '... a VAST tag for a video');
is($nat->{link}{url}, 'https://bidder.example/landing', '... its landing page');
like($nat->{link}{clicktrackers}[0], qr{/notice/native-click\?.*PRICE=\$\{AUCTION_PRICE\}}, '... a click tracker');
like($nat->{imptrackers}[0], qr{/notice/native-imp\?}, '... an impression tracker');
is_deeply([ @{ $nat->{eventtrackers}[0] }{qw(event method)} ], [ 1, 1 ], '... an image event tracker');
like($bids[0]{nurl}, qr{/notice/win\?.*PRICE=\$\{AUCTION_PRICE\}}, '... nurl with the macros left to fill');
like($bids[0]{lurl}, qr{LOSS=\$\{AUCTION_LOSS\}}, '... lurl with the loss reason\'s');
is_deeply(call('GET', '/requests')->{json}, [ $req ], 'GET /requests: what it received, as sent');

is(call('GET', '/notice/win?PRICE=1.75&IMP_ID=d')->{status}, 200, 'a notice called: 200');
is_deeply(call('GET', '/notices')->{json}, [ { kind => 'win', query => { PRICE => '1.75', IMP_ID => 'd' } } ],
          'GET /notices: its kind and query');

for my $mode ([ nobid => 204 ], [ error => 500 ]) {
    call('POST', '/behaviour', { mode => $mode->[0] });
    is(call('POST', '/openrtb2/auction', $req)->{status}, $mode->[1], "mode $mode->[0]: $mode->[1]");
}
call('POST', '/behaviour', { mode => 'malformed' });
$res = call('POST', '/openrtb2/auction', $req);
ok($res->{status} == 200 && !defined $res->{json}, 'mode malformed: 200 with a body that is not JSON');
is(call('POST', '/behaviour', { colour => 'red' })->{status}, 400, 'an unknown behaviour member: 400');
call('POST', '/behaviour', { mode => 'bid', latency_ms => 150, price => 0.5 });
my $t0 = time;
$res = call('POST', '/openrtb2/auction', $req);
cmp_ok(time - $t0, '>=', 0.15, 'latency_ms holds the answer that long');
is_deeply([ map { $_->{impid} } @{ $res->{json}{seatbid}[0]{bid} } ], [qw(v n)],
          '... and at a price of 0.5, only the imps whose floor it meets get a bid');
call('POST', '/behaviour', { mode => 'hang', latency_ms => 0 });
$res = HTTP::Tiny->new(timeout => 0.5)->post("$base/openrtb2/auction", { content => '{}' });
is($res->{status}, 599, 'mode hang: no answer');
is(call('POST', '/reset')->{status}, 204, 'POST /reset');
is_deeply([ call('GET', '/requests')->{json}, call('GET', '/notices')->{json} ], [ [], [] ], '... empties both');

done_testing();
