# /api/creatives: fields and validation (IMAGE has image_url, HTML has
# html; landing_url absolute http(s)), approval (admins and operators
# review; an advertiser's new or changed creative is PENDING; an
# advertiser cannot set it), the immutable advertiser, sizes that must
# keep fitting the LICAs' line items, the delete rule (409 while any LICA
# exists, the spec), lists with filters, and Redis.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;

my $acme = $t->created('/api/advertisers', { name => 'Acme' });
my $globex = $t->created('/api/advertisers', { name => 'Globex' });
for my $u ([ 'buyer@acme.example', 'advertiser', $acme->{id} ], [ 'ops@example.com', 'operator', undef ]) {
    is($t->api('POST', '/api/users', json => { email => $u->[0], password => 'a-good-password', role => $u->[1],
                                               ($u->[2] ? (advertiser_id => $u->[2]) : ()) })->{status}, 201, "user $u->[0]");
}
my @buyer = (as => [ 'buyer@acme.example', 'a-good-password' ]);
my @ops = (as => [ 'ops@example.com', 'a-good-password' ]);

my $seq = 0;
sub body { return { advertiser_id => $acme->{id}, name => 'Creative ' . ++$seq, type => 'IMAGE', w => 300, h => 250,
                    image_url => 'https://cdn.example/a.png', landing_url => 'https://acme.example/landing?x=1', @_ } }
sub post { my (%o) = @_; my $as = delete $o{as}; $t->api('POST', '/api/creatives', json => body(%o), $as ? (as => $as) : ()) }
sub patch { my ($id, $b, @as) = @_; $t->api('PATCH', "/api/creatives/$id", json => $b, @as) }

# ---- create -------------------------------------------------------------------------------
my $rev = $t->revision;
my $image = $t->created('/api/creatives', body(categories => ['IAB22']));
is_deeply({ map { $_ => $image->{$_} } qw(type w h image_url html categories approval) }, {
    type => 'IMAGE', w => 300, h => 250, image_url => 'https://cdn.example/a.png', html => undef,
    categories => ['IAB22'], approval => 'APPROVED',
}, 'an IMAGE creative an admin makes: APPROVED, html null');
is_deeply($JSON->decode($t->redis('HGET', 'adserve:creatives', $image->{id})), $image, 'adserve:creatives holds it');
is($t->revision, $rev + 1, 'one revision');
our $video = { duration => 15, skip_offset => 5,
               media_files => [ { url => 'https://cdn.example/v.mp4', mime => 'video/mp4', w => 640, h => 360, bitrate => 500 } ],
               companions => [ { w => 300, h => 250, image_url => 'https://cdn.example/c.png' } ] };
my $vid = $t->created('/api/creatives', body(type => 'VIDEO', image_url => undef, w => 640, h => 360, video => $video));
is_deeply($vid->{video}, { %$video, vast_tag_url => undef,
                           media_files => [ { %{ $video->{media_files}[0] }, delivery => 'progressive' } ] },
          'a VIDEO creative: its video with the defaults (progressive delivery, no VAST tag)');
is($vid->{image_url}, undef, '... and no image');
my $wrap = $t->created('/api/creatives', body(type => 'VIDEO', image_url => undef, w => 640, h => 360,
                                             video => { duration => 30, vast_tag_url => 'https://dsp.example/vast?id=7' }));
is_deeply([ @{ $wrap->{video} }{qw(media_files skip_offset vast_tag_url)} ], [ [], undef, 'https://dsp.example/vast?id=7' ],
          'a VIDEO creative wrapping a third-party VAST tag');
my $html = $t->created('/api/creatives', body(type => 'HTML', image_url => undef, html => '<a href="#">Buy</a>', w => 728, h => 90));
is_deeply([ @$html{qw(type html image_url)} ], [ 'HTML', '<a href="#">Buy</a>', undef ], 'an HTML creative');
is($t->created('/api/creatives', body(approval => 'PENDING'))->{approval}, 'PENDING', 'an admin may make one PENDING');
is($t->created('/api/creatives', body(), @ops)->{approval}, 'APPROVED', 'an operator\'s: APPROVED');

for my $case (
    [ { type => 'AUDIO' }, 422, qr/^type: must be one of IMAGE, HTML, VIDEO/, 'type' ],
    [ { type => 'VIDEO', image_url => undef }, 422, qr/^video: required for a VIDEO creative/, 'VIDEO without video' ],
    [ { type => 'VIDEO', video => $video }, 422, qr/^image_url: must be null for a VIDEO creative/, 'VIDEO with image_url' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, media_files => [] } }, 422,
      qr/^video\.media_files: at least one, or a vast_tag_url/, 'VIDEO with nothing to play' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, vast_tag_url => 'https://dsp.example/vast' } }, 422,
      qr/^video\.media_files: must be empty with a vast_tag_url/, 'VIDEO with files and a tag' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, duration => -1 } }, 422,
      qr/^video\.duration: must be between 0 and 3600/, 'a negative duration' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, media_files => [ { %{ $video->{media_files}[0] }, bitrate => -5 } ] } },
      422, qr/^video\.media_files\[0\]\.bitrate: must be between 0/, 'a negative bitrate' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, media_files => [ { %{ $video->{media_files}[0] }, url => '/v.mp4' } ] } },
      422, qr/^video\.media_files\[0\]\.url: must be an absolute http/, 'a relative media URL' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, media_files => [ { %{ $video->{media_files}[0] }, w => -1 } ] } },
      422, qr/^video\.media_files\[0\]\.w: must be between 0/, 'a negative media width' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, media_files => [ { %{ $video->{media_files}[0] }, delivery => 'carrier pigeon' } ] } },
      422, qr/^video\.media_files\[0\]\.delivery: must be one of progressive, streaming/, 'delivery enum' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, skip_offset => 3601 } }, 422,
      qr/^video\.skip_offset: must be between 0 and 3600/, 'a skip offset past an hour' ],
    [ { image_url => undef, type => 'VIDEO', video => { %$video, loop => 1 } }, 422,
      qr/^video\.loop: unknown property/, 'an unknown video field' ],
    [ { image_url => undef }, 422, qr/^image_url: required for an IMAGE creative/, 'IMAGE without image_url' ],
    [ { html => '<b>x</b>' }, 422, qr/^html: must be null for an IMAGE creative/, 'IMAGE with html' ],
    [ { type => 'HTML', image_url => undef }, 422, qr/^html: required for an HTML creative/, 'HTML without html' ],
    [ { type => 'HTML', html => '<b>x</b>' }, 422, qr/^image_url: must be null for an HTML creative/, 'HTML with image_url' ],
    [ { landing_url => '/landing' }, 422, qr/^landing_url: must be an absolute http or https URL/, 'a relative landing URL' ],
    [ { landing_url => 'ftp://acme.example/' }, 422, qr/^landing_url: must be an absolute http/, 'an ftp landing URL' ],
    [ { landing_url => 'javascript:alert(1)' }, 422, qr/^landing_url: must be an absolute http/, 'a javascript: URL' ],
    [ { image_url => 'https://cdn example/a.png' }, 422, qr/^image_url: must be an absolute http/, 'a space in the image URL' ],
    [ { w => 0 }, 422, qr/^w: must be between 1 and 10000/, 'width 0' ],
    [ { h => 10001 }, 422, qr/^h: must be between 1 and 10000/, 'height 10001' ],
    [ { w => 300.5 }, 422, qr/^w: must be an integer/, 'fractional width' ],
    [ { categories => [ 7 ] }, 422, qr/^categories\[0\]: must be a string/, 'a category not a string' ],
    [ { approval => 'MAYBE' }, 422, qr/^approval: must be one of PENDING, APPROVED, REJECTED/, 'approval enum' ],
    [ { advertiser_id => Adserve::Test::uuid() }, 422, qr/^advertiser_id: no such advertiser/, 'unknown advertiser' ],
    [ { landing_url => undef }, 422, qr/^landing_url: must not be null/, 'no landing URL' ],
) {
    $t->refused($t->api('POST', '/api/creatives', json => body(%{ $case->[0] })), $case->[1], $case->[2], $case->[3]);
}
$t->refused(patch($image->{id}, { type => 'HTML', html => '<p>x</p>' }), 422, qr/^image_url: must be null for an HTML/,
        'a switch to HTML keeping the image');
my $res = patch($image->{id}, { type => 'HTML', html => '<p>x</p>', image_url => undef });
is($res->{status}, 200, 'a switch to HTML with image_url null') or diag $res->{content};
is($res->{json}{approval}, 'APPROVED', 'an admin\'s change keeps the approval');
$t->refused(patch($image->{id}, { advertiser_id => $globex->{id} }), 409, qr/^advertiser_id: cannot change/, 'advertiser_id is immutable');

# ---- approval --------------------------------------------------------------------------------
$t->refused(post(approval => 'APPROVED', as => $buyer[1]), 403, qr/^approval: only admins and operators review/,
        'an advertiser cannot approve its new creative');
my $own = $t->created('/api/creatives', body(), @buyer);
is($own->{approval}, 'PENDING', 'an advertiser\'s new creative: PENDING');
$t->refused(patch($own->{id}, { approval => 'APPROVED' }, @buyer), 403, qr/only admins and operators/, 'nor later');
is(patch($own->{id}, { approval => 'PENDING' }, @buyer)->{status}, 200, 'repeating its approval changes nothing: 200');
$res = patch($own->{id}, { approval => 'APPROVED' }, @ops);
is($res->{status}, 200, 'an operator approves it');
is($res->{json}{approval}, 'APPROVED', '... APPROVED');
$t->refused(patch($own->{id}, { approval => 'PENDING' }, @buyer), 403, qr/only admins and operators/,
        'the advertiser cannot take the review back either');
$rev = $t->revision;
$res = patch($own->{id}, { name => 'Renamed' }, @buyer);
is($res->{json}{approval}, 'APPROVED', 'the advertiser renames it: still APPROVED (a name is not shown)');
$res = patch($own->{id}, { image_url => 'https://cdn.example/b.png' }, @buyer);
is($res->{json}{approval}, 'PENDING', 'the advertiser changes the image: PENDING again');
is($t->revision, $rev + 2, 'each change bumps the revision (serving drops it until approved)');
is(patch($own->{id}, { approval => 'REJECTED' })->{json}{approval}, 'REJECTED', 'an admin rejects it');
is(patch($own->{id}, { landing_url => 'https://acme.example/new' }, @buyer)->{json}{approval}, 'PENDING',
   'the advertiser fixes it: PENDING for a new review');
is(patch($own->{id}, { image_url => 'https://cdn.example/b.png' }, @buyer)->{json}{approval}, 'PENDING',
   'a PATCH with nothing new: unchanged');

# ---- sizes and LICAs ------------------------------------------------------------------------------
my $order = $t->created('/api/orders', { advertiser_id => $acme->{id}, name => 'Order' });
my $li = $t->created('/api/line-items', { order_id => $order->{id}, name => 'Sized', type => 'HOUSE', cost_type => 'CPM', rate => 0,
                                      targeting => { sizes => [ { w => 300, h => 250 }, { w => 320, h => 50 } ] } });
my $c = $t->created('/api/creatives', body());
my $lica = $t->created('/api/licas', { line_item_id => $li->{id}, creative_id => $c->{id} });
$t->refused(patch($c->{id}, { w => 728, h => 90 }), 409, qr/^w, h: would no longer fit the sizes that line item $li->{id} of LICA $lica->{id}/,
        'a new size the LICA\'s line item does not target');
is(patch($c->{id}, { w => 320, h => 50 })->{status}, 200, 'another size it targets');
$t->refused($t->api('DELETE', "/api/creatives/$c->{id}"), 409, qr/^the creative has LICAs \(1\)/, 'delete with a LICA: 409 (the spec)');
is($t->api('GET', "/api/creatives/$c->{id}")->{status}, 200, '... still there');
is($t->api('DELETE', "/api/licas/$lica->{id}")->{status}, 204, 'the LICA deleted');
is($t->api('DELETE', "/api/creatives/$c->{id}")->{status}, 204, 'then the creative: 204');
is($t->redis('HEXISTS', 'adserve:creatives', $c->{id}), '0', 'gone from adserve:creatives');

# ---- lists ---------------------------------------------------------------------------------------
my $all = $t->api('GET', '/api/creatives?limit=500')->{json};
is($t->api('GET', '/api/creatives?approval=PENDING')->{json}{total},
   scalar(grep { $_->{approval} eq 'PENDING' } @{ $all->{items} }), '?approval=');
is($t->api('GET', '/api/creatives?type=HTML')->{json}{total},
   scalar(grep { $_->{type} eq 'HTML' } @{ $all->{items} }), '?type=');
is($t->api('GET', "/api/creatives?advertiser_id=$globex->{id}")->{json}{total}, 0, '?advertiser_id=');
is($t->api('GET', '/api/creatives?q=renamed')->{json}{total}, 1, '?q=');
$t->refused($t->api('GET', '/api/creatives?approval=yes'), 422, qr/^approval: must be one of/, '?approval= is the enum');

done_testing;
