# Video on the real stack: an ad unit with ext.video.enabled serves VIDEO
# creatives as ad.video {w, h, vast}; the VAST 4.2 document is well-formed
# (xmllint), escapes what it carries, and its URLs reach our endpoints with
# the response's ad_log. Each eligibility rule of a video placement, and
# display and video apart (README "Video").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempfile);
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
sub loaded { my ($rev) = @_; ok($t->wait_until(5, sub { $t->workers_at($rev) }), "workers at revision $rev") }

my $player = { w => 640, h => 360, mindur => 5, maxdur => 30, mime => ['video/mp4'], skip => 1 };
my $vunit = { ext => { video => { enabled => 1 } }, video => $player };
my $file = { url => 'https://cdn.example/spot.mp4?a=1&b=2', mime => 'video/mp4', w => 640, h => 360,
             bitrate => 500, delivery => 'progressive' };
sub vcreative { my (%v) = @_; return { type => 'VIDEO', image_url => undef, w => 640, h => 360,
                                       name => 'Spot </AdTitle><script>x</script>',
                                       video => { duration => 15, skip_offset => 5, media_files => [ $file ],
                                                  companions => [], vast_tag_url => undef, %v } } }

# the creative served on a unit: its id, '' for 204
sub served { my $res = $t->ad($_[0]); $res->{status} == 200 ? $res->{json}{ad}{id} : $res->{status} == 204 ? '' : "status $res->{status}" }

sub well_formed {
    my ($xml) = @_;
    my ($fh, $path) = tempfile(UNLINK => 1);
    print $fh $xml;
    close $fh;
    my $out = `xmllint --noout '$path' 2>&1`;
    return $? == 0 ? '' : $out;
}

# ---- the response -------------------------------------------------------------------------
my $v = $t->chain(unit => $vunit, creative => vcreative());
loaded($v->{rev});
my $res = $t->ad($v->{unit});
is($res->{status}, 200, 'a video unit serves its video creative') or diag $res->{content};
my $ad = $res->{json}{ad};
is_deeply([ sort keys %$ad ], [ qw(click_url id impression_url video) ], 'ad: id, impression_url, click_url and video, no display');
is_deeply([ @{ $ad->{video} }{qw(w h)} ], [ 640, 360 ], 'video: the creative\'s w and h');
my $vast = $ad->{video}{vast};
is(well_formed($vast), '', 'the VAST is well-formed XML (xmllint)');
like($vast, qr{^<VAST version="4\.2" xmlns="http://www\.iab\.com/VAST"><Ad id="\Q$v->{creative}\E"><InLine>}, 'VAST 4.2, one InLine ad');
like($vast, qr{<Duration>00:00:15</Duration>}, 'its duration');
like($vast, qr{<Linear skipoffset="00:00:05">}, 'its skip offset');
like($vast, qr{<MediaFile delivery="progressive" type="video/mp4" width="640" height="360" bitrate="500">https://cdn\.example/spot\.mp4\?a=1&amp;b=2</MediaFile>},
     'its media file, the & of its URL an entity');
like($vast, qr{<AdTitle>Spot &lt;/AdTitle&gt;&lt;script&gt;x&lt;/script&gt;</AdTitle>}, 'a name cannot add markup');
unlike($vast, qr{\x01}, 'no splice left unfilled');

my $log = $res->{json}{ext}{ad_log};
my $base = $t->base;
my ($imp) = $vast =~ m{<Impression id="adserve">([^<]+)</Impression>};
is($imp, "$base/app/v0/event/impression?ad_log=$log", 'Impression: the impression URL, with the ad_log');
is($imp, $ad->{impression_url}, '... the same as ad.impression_url');
my ($click) = $vast =~ m{<ClickThrough>([^<]+)</ClickThrough>};
is($click, $ad->{click_url}, 'ClickThrough: the click URL');
my ($err) = $vast =~ m{<Error>([^<]+)</Error>};
is($err, "$base/app/v0/event/video/error?code=[ERRORCODE]&amp;ad_log=$log", 'Error: our endpoint, with the [ERRORCODE] macro');
my %tracking = $vast =~ m{<Tracking event="(\w+)"(?: offset="[^"]*")?>([^<]+)</Tracking>}g;
is_deeply([ sort keys %tracking ], [ sort qw(start firstQuartile midpoint thirdQuartile complete skip mute pause progress) ],
          'TrackingEvents: start, the quartiles, complete, skip, mute, pause and progress');
is_deeply([ grep { $tracking{$_} ne "$base/app/v0/event/video/$_?ad_log=$log" } sort keys %tracking ], [],
          '... each through /app/v0/event/video/{event} with the same ad_log');
like($vast, qr{<Tracking event="progress" offset="00:00:05">}, 'progress at 5 seconds');

my $got = $t->request('GET', $imp =~ s{^\Q$base\E}{}r);
is($got->{status}, 204, "the VAST's impression URL reaches our event endpoint (204)");
ok($t->wait_until(10, sub { $t->stat_sum("cr:$v->{creative}:imp") == 1 }), '... and counts the impression');
$got = $t->request('GET', $click =~ s{^\Q$base\E}{}r, redirect => 0);
is($got->{status}, 302, "the VAST's ClickThrough redirects (a click)");
is($got->{headers}{location}, 'https://advertiser.example/landing', '... to the landing page');

# ---- the events: a player plays it through, twice over -------------------------------------
for my $pass (1, 2) {
    for my $e (qw(start firstQuartile midpoint thirdQuartile complete)) {
        my $r = $t->request('GET', $tracking{$e} =~ s{^\Q$base\E}{}r);
        is($r->{status}, 204, "$e: 204 (pass $pass)") if $pass == 1;
    }
}
(my $error = $err) =~ s/\[ERRORCODE\]/405/;
$error =~ s/&amp;/&/;
is($t->request('GET', $error =~ s{^\Q$base\E}{}r)->{status}, 204, 'a VAST error (code 405): 204');
my %want = map { ("li:$v->{line_item}:$_" => 1, "cr:$v->{creative}:$_" => 1) }
           qw(start firstQuartile midpoint thirdQuartile complete error);
my $counted = $t->wait_until(10, sub { $t->stats_are(%want) });
ok($counted, 'each event counted once per line item and creative, however often the player sends it')
    or diag explain { map { $_ => $t->stat_sum($_) } sort keys %want };
is($t->stat_sum("li:$v->{line_item}:skip"), 0, '... and none it did not send');
my $m = $t->api('GET', "/api/metrics?group_by=creative&granularity=day&creative_id=$v->{creative}");
my ($mrow) = @{ $m->{json}{rows} // [] };
is_deeply([ @{ $mrow // {} }{qw(video_starts video_completes video_errors video_completion_rate)} ], [ 1, 1, 1, 1 ],
          '/api/metrics: the creative\'s video starts, completes, errors and completion rate') or diag $m->{content};
is_deeply($mrow && $mrow->{video_error_codes}, { 405 => 1 }, '... and its errors by VAST code');
is($t->stat_sum("cr:$v->{creative}:error:405"), 1, 'the code counted apart, as error:405');
my $dash = $t->api('GET', '/api/dashboard');
ok(($dash->{json}{today}{video_starts} // 0) >= 1 && defined $dash->{json}{today}{video_completion_rate},
   '/api/dashboard: today\'s video starts and completion rate') or diag $dash->{content};
is($t->request('GET', "/app/v0/event/video/rewind?ad_log=$log")->{status}, 404, 'an unknown video event: 404');
is($t->request('GET', "/app/v0/event/video/start?ad_log=x$log")->{status}, 400, 'a forged ad_log: 400');

# ---- a VAST tag: a Wrapper ---------------------------------------------------------------
my $w = $t->chain(unit => $vunit, creative => vcreative(media_files => [], skip_offset => undef,
                                                       vast_tag_url => 'https://dsp.example/vast?id=7&x=<1>'));
loaded($w->{rev});
$res = $t->ad($w->{unit});
$vast = $res->{json}{ad}{video}{vast} // '';
is(well_formed($vast), '', 'a VAST-tag creative: well-formed');
like($vast, qr{<Wrapper>.*<VASTAdTagURI>https://dsp\.example/vast\?id=7&amp;x=&lt;1&gt;</VASTAdTagURI>}s, 'a Wrapper of its tag, escaped');
like($vast, qr{<VideoClicks><ClickTracking>\Q$res->{json}{ad}{click_url}\E</ClickTracking></VideoClicks>}, 'our click as ClickTracking');
unlike($vast, qr{<MediaFiles>}, 'no media files of its own');
my ($werr) = $vast =~ m{<Error>([^<]+)</Error>};
$werr =~ s/&amp;/&/;
is($t->request('GET', $werr =~ s{^\Q$base\E}{}r)->{status}, 204, 'an error whose [ERRORCODE] the player left unfilled: 204');
ok($t->wait_until(10, sub { $t->stat_sum("cr:$w->{creative}:error:900") == 1 }), '... counted as 900, undefined');

# ---- GET /app/v0/vast/{tagid}: the VAST for players ------------------------------------------
$res = $t->request('GET', "/app/v0/vast/$v->{unit}?uid=viewer%201&ua=Mozilla%2F5.0");
is($res->{status}, 200, 'GET /app/v0/vast: 200');
like($res->{headers}{'content-type'}, qr{^application/xml}, '... application/xml');
is(well_formed($res->{content}), '', '... well-formed');
like($res->{content}, qr{^<VAST version="4\.2" xmlns="http://www\.iab\.com/VAST"><Ad id="\Q$v->{creative}\E"><InLine>},
     '... the same InLine ad');
my ($vimp) = $res->{content} =~ m{<Impression id="adserve">([^<]+)</Impression>};
my ($vlog) = ($vimp // '') =~ /ad_log=([\w-]+)$/;
ok($vlog && $vlog ne $log, '... with an ad_log of its own');
is($t->request('GET', $vimp =~ s{^\Q$base\E}{}r)->{status}, 204, '... its impression URL counts');
my ($vclick) = $res->{content} =~ m{<ClickThrough>([^<]+)</ClickThrough>};
is($t->request('GET', $vclick =~ s{^\Q$base\E}{}r, redirect => 0)->{headers}{location},
   'https://advertiser.example/landing', '... and its click lands');
is($t->request('GET', "/app/v0/vast/$v->{unit}")->{status}, 200, 'no query at all: 200');
like($t->request('GET', "/app/v0/vast/$v->{unit}?uid=" . ('u' x 300))->{content}, qr{<InLine>},
     'a uid over 256 bytes is ignored, as in a body');
is($t->request('POST', "/app/v0/vast/$v->{unit}", json => {})->{status}, 405, 'POST: 405');
is($t->request('GET', '/app/v0/vast/' . Adserve::Test::uuid())->{status}, 404, 'an unknown tag: 404');

# ---- a player's library: DailyMotion's vast-client reads GET /app/v0/vast ----------------------
my $pv = $t->chain(unit => $vunit, creative => vcreative(
    companions => [ { w => 300, h => 250, image_url => 'https://cdn.example/c.png' } ]));
loaded($pv->{rev});
my $url = "$base/app/v0/vast/$pv->{unit}?uid=library-viewer";
my $parsed = eval { JSON::PP->new->decode(scalar `node '$FindBin::Bin/js/vast-parse.mjs' '$url'`) } // {};
my $lib = $parsed->{ads} && $parsed->{ads}[0] // {};
is($lib->{id}, $pv->{creative}, 'vast-client (npm) reads one ad: the creative') or diag explain $parsed;
is_deeply([ @{ $lib->{linear} // {} }{qw(duration skipDelay)} ], [ 15, 5 ], '... its duration and skip delay');
is_deeply($lib->{linear}{mediaFiles}, [ { url => 'https://cdn.example/spot.mp4?a=1&b=2', mime => 'video/mp4', w => 640,
                                          h => 360, bitrate => 500, delivery => 'progressive' } ],
          '... its media file, the URL unescaped as a player sees it');
is_deeply($lib->{companions}, [ { w => 300, h => 250, img => [ 'https://cdn.example/c.png' ] } ], '... its companion');
my $ltrack = $lib->{linear}{tracking} // {};
is_deeply([ sort keys %$ltrack ],
          [ sort qw(start firstQuartile midpoint thirdQuartile complete skip mute pause progress-5) ],
          '... every tracking event (progress at 5 s)');
my @fired = ($lib->{impressions}[0], map { $ltrack->{$_}[0] } qw(start firstQuartile midpoint thirdQuartile complete));
is_deeply([ map { $t->request('GET', ($_ // '') =~ s{^\Q$base\E}{}r)->{status} } @fired ], [ (204) x 6 ],
          'the impression and the events as the library found them: 204 each');
is($t->request('GET', ($lib->{linear}{clickThrough} // '') =~ s{^\Q$base\E}{}r, redirect => 0)->{headers}{location},
   'https://advertiser.example/landing', '... its click-through lands');
my %lwant = map { ("cr:$pv->{creative}:$_" => 1) } qw(imp start firstQuartile midpoint thirdQuartile complete clk);
ok($t->wait_until(10, sub { $t->stats_are(%lwant) }), '... and each is counted for the creative')
    or diag explain { map { $_ => $t->stat_sum($_) } sort keys %lwant };

# ---- eligibility, one rule at a time -------------------------------------------------------
my @cases = (
    [ 'a fitting video', {}, {}, 1 ],
    [ 'longer than maxdur', {}, { duration => 60 }, 0 ],
    [ 'shorter than mindur', {}, { duration => 2 }, 0 ],
    [ 'among rqddurs', { rqddurs => [ 15, 30 ] }, {}, 1 ],
    [ 'not among rqddurs', { rqddurs => [ 30 ] }, {}, 0 ],
    [ 'no media file of an accepted mime', { mime => [ 'video/webm' ] }, {}, 0 ],
    [ 'skippable where the player offers no skip', { skip => 0 }, {}, 0 ],
    [ 'not skippable where it offers one', {}, { skip_offset => undef }, 1 ],
    [ 'a non-linear placement', { linear => 2 }, {}, 0 ],
    [ 'the same shape, larger', { w => 1280, h => 720 }, {}, 1 ],
    [ 'another shape (4:3)', { w => 640, h => 480 }, {}, 0 ],
);
my @chains = map { [ $_->[0], $t->chain(unit => { %$vunit, video => { %$player, %{ $_->[1] } } },
                                       creative => vcreative(%{ $_->[2] })), $_->[3] ] } @cases;
my $display_on_video = $t->chain(unit => $vunit);
my $video_on_display = $t->chain(creative => vcreative());
my $both = { ext => { video => { enabled => 1 }, display => { enabled => 1 } }, video => $player };
my $both_display = $t->chain(unit => $both);
my $both_video = $t->chain(unit => $both, creative => vcreative());
loaded($both_video->{rev});
for (@chains) {
    my ($name, $c, $serves) = @$_;
    is(served($c->{unit}), $serves ? $c->{creative} : '', "$name: " . ($serves ? 'serves' : 'no ad (204)'));
}
is(served($display_on_video->{unit}), '', 'a banner on a video-only unit: no ad');
is(served($video_on_display->{unit}), '', 'a video on a unit with no format on (display): no ad');
is(served($both_display->{unit}), $both_display->{creative}, 'display and video on: a banner serves');
is(served($both_video->{unit}), $both_video->{creative}, '... and a video');

my $empty = $t->request('GET', "/app/v0/vast/$both_display->{unit}");
is_deeply([ $empty->{status}, $empty->{content} ], [ 200, '<VAST version="4.2"/>' ],
          'GET /app/v0/vast where only a banner could serve: the empty VAST of no fill');
like($t->request('GET', "/app/v0/vast/$both_video->{unit}")->{content}, qr{<Ad id="\Q$both_video->{creative}\E">},
     '... and the video where there is one');
# a capped line item: the query's uid is the user whose caps are read
my $capped = $t->chain(unit => $vunit, creative => vcreative(),
                       line_item => { frequency_caps => [ { max => 1, seconds => 3600 } ] });
loaded($capped->{rev});
like($t->request('GET', "/app/v0/vast/$capped->{unit}?uid=capped-viewer")->{content}, qr{<InLine>},
     'a line item capped at 1 an hour: the first VAST for a viewer');
ok($t->wait_until(5, sub { $t->request('GET', "/app/v0/vast/$capped->{unit}?uid=capped-viewer")->{content}
                              eq '<VAST version="4.2"/>' }),
   '... then none for that viewer (the caps read, as for POST)');
like($t->request('GET', "/app/v0/vast/$capped->{unit}?uid=another-viewer")->{content}, qr{<InLine>},
     '... while another viewer still gets it');

my $inactive = $t->chain(unit => { %$vunit, status => 'INACTIVE' }, creative => vcreative());
loaded($inactive->{rev});
is($t->request('GET', "/app/v0/vast/$inactive->{unit}")->{status}, 404, 'an INACTIVE unit: 404');

# the explainer names why
my $x = $t->api('POST', "/api/explain/$chains[1][1]{unit}", json => { version => '0.1.0' });
is(($x->{json}{excluded} // [])->[0]{reason}, 'duration', 'the explainer: excluded for its duration');

done_testing;
