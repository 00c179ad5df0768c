# Native on the real stack (README "Native"): the four groups through the
# API (formats, style templates, styles, ad unit styles: CRUD, roles, audit,
# their rules), NATIVE creatives and their checks, and serving in both
# render modes: asset mode's OpenRTB Native 1.2 object under the
# placement's asset ids, html mode's creative through the unit's style,
# every value escaped. Each eligibility rule of a native placement.
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
sub served { my $res = $t->ad($_[0]); $res->{status} == 200 ? $res->{json}{ad}{id} : $res->{status} == 204 ? '' : "status $res->{status}" }
sub audit_count { my ($id) = @_; scalar grep { /^\Q$id\E$/ } split /\n/, $t->redis('XRANGE', 'adserve:audit', '-', '+') }

my $assets = [ { id => 1, required => 1, title => { len => 90 } },
               { id => 2, required => 1, img => { type => 3, wmin => 600, hmin => 300 } },
               { id => 3, img => { type => 1 } },
               { id => 4, data => { type => 2, len => 140 } },
               { id => 5, required => 1, data => { type => 1 } },
               { id => 6, data => { type => 12 } } ];
my %native = (title => 'Crisp <b>salads</b> & more',
              images => [ { type => 'main', url => 'https://cdn.example/m.jpg?a=1&b=2', w => 1200, h => 627,
                            mime => 'image/jpeg' },
                          { type => 'icon', url => 'https://cdn.example/i.png', w => 80, h => 80, mime => undef } ],
              data => [ { type => 'sponsored', value => 'Greens & Co' },
                        { type => 'desc', value => '</p><script>alert(1)</script>' } ]);
sub ncreative { my (%n) = @_; return { type => 'NATIVE', image_url => undef, w => 1200, h => 627,
                                       native => { %native, video => undef, %n } } }
sub nunit { my ($mode, %o) = @_; return { ext => { native => { enabled => 1, render_mode => $mode } },
                                         native => { assets => $assets }, %o } }

# ---- native formats -----------------------------------------------------------------------------
my $F = '/api/native-formats';
my $format = $t->created($F, { name => 'In-feed', assets => $assets });
is_deeply($format->{assets}[0], { id => 1, required => 1, title => { len => 90 } }, 'a format: its assets as sent');
is(audit_count($format->{id}), 1, '... one audit record');
is($t->api('GET', "$F/$format->{id}")->{json}{name}, 'In-feed', 'GET it');
is($t->api('PATCH', "$F/$format->{id}", json => { name => 'In-feed card' })->{json}{name}, 'In-feed card', 'PATCH it');
ok((grep { $_->{id} eq $format->{id} } @{ $t->api('GET', "$F?q=card")->{json}{items} // [] }), 'list it by name');
$t->refused($t->api('POST', $F, json => { name => 'x', assets => [] }), 422, qr/^assets: at least one/, 'no asset');
$t->refused($t->api('POST', $F, json => { name => 'x', assets => [ { id => 1, title => { len => 9 } },
                                                                       { id => 1, data => { type => 2 } } ] }),
            422, qr/^assets\[0\]\.id: 1 is used twice/, 'an asset id twice');
$t->refused($t->api('POST', $F, json => { name => 'x', assets => [ { id => 1 } ] }), 422, qr/^assets\[0\]/,
            'an asset request with no member');

my $acme = $t->created('/api/advertisers', { name => 'Acme native' });
is($t->api('POST', '/api/users', json => { email => 'native@acme.example', password => 'a-good-password',
                                           role => 'advertiser', advertiser_id => $acme->{id} })->{status}, 201,
   'an advertiser user');
my @buyer = (as => [ 'native@acme.example', 'a-good-password' ]);
$t->refused($t->api('GET', $F, @buyer), 403, qr/role/, 'advertiser: formats list 403');
$t->refused($t->api('GET', "$F/$format->{id}", @buyer), 404, qr/not found/, 'advertiser: a format 404');
$t->refused($t->api('POST', '/api/native-styles', json => { name => 'x', html => '<p></p>' }, @buyer), 403,
            qr/role/, 'advertiser: style create 403');

# ---- NATIVE creatives ----------------------------------------------------------------------------
my $C = '/api/creatives';
my %cbase = (advertiser_id => $acme->{id}, name => 'Salad native', landing_url => 'https://advertiser.example/landing');
my $nc = $t->created($C, { %cbase, %{ ncreative() }, native_format_id => $format->{id} });
is($nc->{native}{images}[0]{type}, 'main', 'a NATIVE creative of the format: its assets');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative(data => [ { type => 'desc', value => 'x' } ]) },
                                          native_format_id => $format->{id} }),
            422, qr/^native: lacks the data asset \(id 5\)/, 'lacking a required asset of its format');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative(title => 'x' x 91) }, native_format_id => $format->{id} }),
            422, qr/^native: lacks the title asset \(id 1\).*bounds/, 'a title longer than the format allows');
$t->refused($t->api('POST', $C, json => { %cbase, type => 'NATIVE', w => 1, h => 1 }), 422,
            qr/^native: required for a NATIVE creative/, 'NATIVE without native');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative() }, image_url => 'https://cdn.example/x.png' }), 422,
            qr/^image_url: must be null for a NATIVE creative/, 'NATIVE with an image_url');
$t->refused($t->api('POST', $C, json => { %cbase, type => 'NATIVE', w => 1, h => 1,
                                          native => { title => undef, images => [], data => [] } }),
            422, qr/^native: a title, an image/, 'NATIVE with no asset');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative(data => [ { type => 'desc', value => 'a' },
                                                                          { type => 'desc', value => 'b' } ]) } }),
            422, qr/^native\.data: one desc at most/, 'two data assets of a type');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative(video => { duration => 10, media_files => [] }) } }),
            422, qr/^native\.video\.media_files: at least one/, 'a video asset with nothing to play');
$t->refused($t->api('POST', $C, json => { %cbase, %{ ncreative(images => [ { type => 'banner', url => 'https://x.example/a', w => 1, h => 1 } ]) } }),
            422, qr/^native\.images\[0\]\.type: must be one of icon, main/, 'an unknown image type');
$t->refused($t->api('POST', $C, json => { %cbase, type => 'IMAGE', w => 300, h => 250,
                                          image_url => 'https://cdn.example/x.png', native_format_id => $format->{id} }),
            422, qr/^native_format_id: must be null for an IMAGE creative/, 'a format on an IMAGE');
$t->refused($t->api('DELETE', "$F/$format->{id}"), 409, qr/creatives/, 'a format a creative names: delete 409');

# ---- style templates, styles, ad unit styles ------------------------------------------------------------
my $card = '<div class="ad"><a href="{{click_url}}"><img src="{{img.main}}" alt=""><h3>{{title}}</h3></a>'
         . '<p>{{data.desc}}</p><small>{{data.sponsored}}</small></div>';
my $T = '/api/native-style-templates';
my $tpl = $t->created($T, { name => 'Card', html => $card, css => '.ad h3 { font: 16px sans-serif }' });
$t->refused($t->api('POST', $T, json => { name => 'x', html => '<a href={{click_url}}>x</a>' }), 422,
            qr/^html: a URL placeholder stands in a quoted attribute value \(at byte 8\)/, 'an unquoted URL placeholder');
$t->refused($t->api('POST', $T, json => { name => 'x', html => '<a title="{{title}}">x</a>' }), 422,
            qr/^html: a text placeholder stands between tags/, 'a text placeholder in an attribute');
$t->refused($t->api('POST', $T, json => { name => 'x', html => '<script>var t = "{{title}}"</script>' }), 422,
            qr/inside <script>/, 'a placeholder in a script');
$t->refused($t->api('POST', $T, json => { name => 'x', html => '<p>{{price}}</p>' }), 422,
            qr/^html: an unknown placeholder/, 'an unknown placeholder');
$t->refused($t->api('POST', $T, json => { name => 'x', html => "<p>\x{1}x\x{1}x</p>" }), 422,
            qr/^field 'html' holds a control character/, 'a control character (the build\'s splice byte)');
$t->refused($t->api('POST', $T, json => { name => 'x', html => '<p></p>', css => 'p{}</style><script>' }), 422,
            qr/^css: /, 'css that would end its element');

my $S = '/api/native-styles';
my $style = $t->created($S, { name => 'Card style', native_format_id => $format->{id}, native_style_template_id => $tpl->{id} });
is_deeply([ @$style{qw(html css)} ], [ @$tpl{qw(html css)} ], 'a style made from a template copies its html and css');
$t->refused($t->api('POST', $S, json => { name => 'x' }), 422, qr/^html: required, or a native_style_template_id/,
            'a style without html or template');
$t->refused($t->api('POST', $S, json => { name => 'x', html => '<p>{{nope}}</p>' }), 422, qr/^html: an unknown/,
            'a style is checked as a template is');
$t->refused($t->api('POST', $S, json => { name => 'x', html => '<p></p>', native_format_id => Adserve::Test::uuid() }),
            422, qr/^native_format_id/, 'an unknown format');
is(scalar @{ $t->api('GET', "$S?native_format_id=$format->{id}")->{json}{items} }, 1, 'styles by format');
$t->refused($t->api('DELETE', "$F/$format->{id}"), 409, qr/native styles|creatives/, 'a format a style names: delete 409');
is($t->api('PATCH', "$T/$tpl->{id}", json => { css => '.ad { color: red }' })->{status}, 200, 'a template changes');
is($t->api('GET', "$S/$style->{id}")->{json}{css}, $tpl->{css}, '... its styles keep their copy');

my $hunit = $t->created('/api/ad-units', { code => "native-html-$$", name => 'Native html', status => 'ACTIVE',
                                           %{ nunit('html') } });
my $L = '/api/ad-unit-native-styles';
my $link = $t->created($L, { ad_unit_id => $hunit->{id}, native_style_id => $style->{id} });
$t->refused($t->api('POST', $L, json => { ad_unit_id => $hunit->{id}, native_style_id => $style->{id} }), 409,
            qr/^ad_unit_id: the ad unit has a native style already/, 'a second style for a unit');
$t->refused($t->api('PATCH', "$L/$link->{id}", json => { ad_unit_id => $format->{id} }), 409, qr/ad_unit_id/,
            'a link\'s ad unit cannot change');
$t->refused($t->api('POST', $L, json => { ad_unit_id => Adserve::Test::uuid(), native_style_id => $style->{id} }), 422,
            qr/^ad_unit_id/, 'an unknown ad unit');
$t->refused($t->api('DELETE', "$S/$style->{id}"), 409, qr/ad units using it/, 'a style in use: delete 409');
is(audit_count($link->{id}), 1, 'the link: one audit record');

# ---- serving, html mode: the creative through the unit's style ----------------------------------------
my $h = $t->chain(unit => { id => $hunit->{id}, %$hunit }, creative => ncreative());
loaded($h->{rev});
my $res = $t->ad($hunit->{id});
is($res->{status}, 200, 'html mode: 200') or diag $res->{content};
my $ad = $res->{json}{ad};
is_deeply([ sort keys %$ad ], [ qw(click_url display id impression_url) ], 'ad: display, no native member');
is_deeply([ @{ $ad->{display} }{qw(w h)} ], [ 300, 250 ], 'display: the unit\'s size');
my $adm = $ad->{display}{adm} // '';
like($adm, qr{^<style>\.ad h3 \{ font: 16px sans-serif \}</style><div class="ad">}, 'the style\'s css, then its html');
like($adm, qr{<a href="\Q$ad->{click_url}\E">}, '{{click_url}}: the response\'s click URL');
like($adm, qr{<img src="https://cdn\.example/m\.jpg\?a=1&amp;b=2" alt="">}, '{{img.main}}: the main image, & an entity');
like($adm, qr{<h3>Crisp &lt;b&gt;salads&lt;/b&gt; &amp; more</h3>}, '{{title}}: markup in the title is text');
like($adm, qr{<p>&lt;/p&gt;&lt;script&gt;alert\(1\)&lt;/script&gt;</p>}, '{{data.desc}}: a <script> in a value renders inert');
unlike($adm, qr{<script|\x01}, 'no script element, no splice left');
is($t->request('GET', $ad->{click_url} =~ s{^\Q${\ $t->base }\E}{}r, redirect => 0)->{headers}{location},
   'https://advertiser.example/landing', 'its click lands');

# a style change serves within a second or so, through the API
my $r0 = $t->revision;
is($t->api('PATCH', "$S/$style->{id}", json => { html => '<p class="v2">{{title}}</p>' })->{status}, 200, 'the style changes');
loaded($r0 + 1);
like($t->ad($hunit->{id})->{json}{ad}{display}{adm} // '', qr{^<style>[^<]*</style><p class="v2">Crisp}, '... and serves');

# no style: no native ad in html mode, and the explainer says why
$r0 = $t->revision;
is($t->api('DELETE', "$L/$link->{id}")->{status}, 204, 'the unit\'s style link goes');
loaded($r0 + 1);
is(served($hunit->{id}), '', 'html mode without a style: no ad');
my $x = $t->api('POST', "/api/explain/$hunit->{id}", json => { version => '0.1.0' });
is(($x->{json}{excluded} // [])->[0]{reason}, 'style', '... the explainer: excluded, style');

# ---- serving, asset mode: OpenRTB Native 1.2 ---------------------------------------------------------
my $as = $t->chain(unit => nunit("asset"), creative => ncreative());
loaded($as->{rev});
$res = $t->ad($as->{unit});
is($res->{status}, 200, 'asset mode: 200') or diag $res->{content};
$ad = $res->{json}{ad};
is_deeply([ sort keys %$ad ], [ qw(click_url id impression_url native) ], 'ad: native, no display');
my $n = $ad->{native};
is($n->{ver}, '1.2', 'native.ver 1.2');
my %by_id = map { $_->{id} => $_ } @{ $n->{assets} };
is_deeply([ sort { $a <=> $b } keys %by_id ], [ 1, 2, 3, 4, 5 ], 'the placement\'s asset ids, the ones filled (no ctatext: 6)');
is_deeply($by_id{1}{title}, { text => 'Crisp <b>salads</b> & more' }, 'title: the text, as JSON says it');
is_deeply($by_id{2}{img}, { type => 3, url => 'https://cdn.example/m.jpg?a=1&b=2', w => 1200, h => 627 }, 'img main: type 3');
is_deeply($by_id{3}{img}, { type => 1, url => 'https://cdn.example/i.png', w => 80, h => 80 }, 'img icon: type 1');
is_deeply($by_id{4}{data}, { type => 2, value => '</p><script>alert(1)</script>' }, 'data desc: type 2');
is_deeply($by_id{5}{data}, { type => 1, value => 'Greens & Co' }, 'data sponsored: type 1');
is($n->{link}{url}, $ad->{click_url}, 'link.url: the click URL');
is_deeply($n->{eventtrackers}, [ { event => 1, method => 1, url => $ad->{impression_url} } ],
          'eventtrackers: the impression URL (event 1, method img)');
my $base = $t->base;
is($t->request('GET', $n->{eventtrackers}[0]{url} =~ s{^\Q$base\E}{}r)->{status}, 204, 'the tracker: 204');
is($t->request('GET', $n->{link}{url} =~ s{^\Q$base\E}{}r, redirect => 0)->{status}, 302, 'the link: a click');
ok($t->wait_until(10, sub { $t->stats_are("cr:$as->{creative}:imp" => 1, "cr:$as->{creative}:clk" => 1) }),
   'a native impression and click count as display\'s do');

# a video asset: a VAST 4.2 tag of our own, with our trackers
my $vassets = [ @$assets, { id => 7, required => 1, video => { minduration => 5, maxduration => 30,
                                                               mimes => [ 'video/webm' ], protocols => [ 7, 13 ] } } ];
my $vfile = { url => 'https://cdn.example/v.webm', mime => 'video/webm', w => 640, h => 360, bitrate => undef,
              delivery => 'progressive' };
my $av = $t->chain(unit => nunit('asset', native => { assets => $vassets }),
                   creative => ncreative(video => { duration => 15, media_files => [ $vfile ], skip_offset => undef,
                                                    companions => [], vast_tag_url => undef }));
loaded($av->{rev});
$res = $t->ad($av->{unit});
my ($va) = grep { $_->{id} == 7 } @{ $res->{json}{ad}{native}{assets} // [] };
my $vast = $va->{video}{vasttag} // '';
my ($fh, $path) = tempfile(UNLINK => 1);
print $fh $vast;
close $fh;
is(`xmllint --noout '$path' 2>&1`, '', 'the video asset: a well-formed VAST (xmllint)');
my $log = $res->{json}{ext}{ad_log} // '';
like($vast, qr{<Impression id="adserve">\Q$base\E/app/v0/event/impression\?ad_log=\Q$log\E</Impression>},
     '... its impression with the response\'s ad_log');
like($vast, qr{<Tracking event="complete">\Q$base\E/app/v0/event/video/complete\?ad_log=\Q$log\E</Tracking>},
     '... its tracking events');
like($vast, qr{<MediaFile delivery="progressive" type="video/webm" width="640" height="360">https://cdn\.example/v\.webm</MediaFile>},
     '... its media file');

# ---- eligibility, one rule at a time ----------------------------------------------------------------
my @cases = (
    [ 'a fitting creative', {}, {}, 1 ],
    [ 'lacking a required asset (sponsored)', {}, { data => [ $native{data}[1] ] }, 0 ],
    [ 'a title over len', {}, { title => 'x' x 91 }, 0 ],
    [ 'a main image under wmin', {}, { images => [ { %{ $native{images}[0] }, w => 500 } ] }, 0 ],
    [ 'lacking an optional asset (icon)', {}, { images => [ $native{images}[0] ] }, 1 ],
    [ 'an image mime the placement does not take',
      { native => { assets => [ { id => 2, required => 1, img => { type => 3, mimes => [ 'image/png' ] } } ] } }, {}, 0 ],
    [ 'a video asset shorter than minduration',
      { native => { assets => $vassets } }, { video => { duration => 3, media_files => [ $vfile ] } }, 0 ],
    [ 'a video asset of a mime the player lacks',
      { native => { assets => $vassets } }, { video => { duration => 15, media_files => [ { %$vfile, mime => 'video/mp4' } ] } }, 0 ],
    [ 'a VAST 4 video for a VAST 2/3 player',
      { native => { assets => [ { id => 7, required => 1, video => { minduration => 0, maxduration => 60,
                                                                     mimes => [], protocols => [ 2, 3 ] } } ] } },
      { video => { duration => 15, media_files => [ $vfile ] } }, 0 ],
    [ 'asset mode, no asset asked for', { native => { assets => [] } }, {}, 0 ],
    [ 'an interstitial unit, a creative not made for one', { instl => 1 }, {}, 0 ],
);
my @chains = map { [ $_->[0], $t->chain(unit => nunit('asset', %{ $_->[1] }), creative => ncreative(%{ $_->[2] })), $_->[3] ] }
             @cases;
my $instl = $t->chain(unit => nunit('asset', instl => 1), creative => { %{ ncreative() }, interstitial => JSON::PP::true });
my $native_on_display = $t->chain(creative => ncreative());
my $display_on_native = $t->chain(unit => nunit('asset'));
loaded($display_on_native->{rev});
for (@chains) {
    my ($name, $c, $serves) = @$_;
    is(served($c->{unit}), $serves ? $c->{creative} : '', "$name: " . ($serves ? 'serves' : 'no ad (204)'));
}
is(served($instl->{unit}), $instl->{creative}, 'an interstitial unit, an interstitial creative: serves');
is(served($native_on_display->{unit}), '', 'a native creative on a display unit: no ad');
is(served($display_on_native->{unit}), '', 'a banner on a native-only unit: no ad');
$x = $t->api('POST', "/api/explain/$chains[1][1]{unit}", json => { version => '0.1.0' });
is(($x->{json}{excluded} // [])->[0]{reason}, 'assets', 'the explainer: excluded, assets');

# ---- the rest of CRUD, then the deletes the rules allow ---------------------------------------------------
is($t->api('DELETE', "$S/$style->{id}")->{status}, 204, 'a style no unit uses: deleted');
is($t->api('DELETE', "$T/$tpl->{id}")->{status}, 204, 'a template: deleted');
is($t->api('DELETE', "$C/$nc->{id}")->{status}, 204, 'the creative of the format: deleted');
is($t->api('DELETE', "$F/$format->{id}")->{status}, 204, 'then the format');
is($t->api('GET', "$F/$format->{id}")->{status}, 404, '... gone');

done_testing;
