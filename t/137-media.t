# The media library (README "Media library"): uploads of real images and
# videos (made here by ffmpeg), raw and multipart, typed by their bytes (a
# renamed executable refused, a false claim ignored), bounded by kind (413),
# sized by their libraries, stored once under their SHA-256 and served by
# nginx with a year's cache; the same bytes again are the same item. Roles
# (advertisers see their own), bad input, audit, and creatives that use an
# item: its URL becomes theirs, and the item cannot go while one does.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Adserve::Test;

my $IMAGE_MAX = 50_000;
my $VIDEO_MAX = 200_000;
my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_MEDIA_IMAGE_MAX} = $IMAGE_MAX;
$t->env->{ADSERVE_MEDIA_VIDEO_MAX} = $VIDEO_MAX;
$t->start('sidecar', 'nginx');
my $dir = $t->var . '/media';

# ---- the files ----------------------------------------------------------------
my $tmp = tempdir(CLEANUP => 1);
sub ffmpeg {
    my ($name, @args) = @_;
    system('ffmpeg', '-nostdin', '-v', 'error', '-y', @args, "$tmp/$name") == 0
        or BAIL_OUT("ffmpeg cannot make $name (make deps installs it)");
    open my $fh, '<:raw', "$tmp/$name" or die "$name: $!";
    local $/;
    return scalar <$fh>;
}
sub slurp { open my $fh, '<:raw', $_[0] or die "$_[0]: $!"; local $/; scalar <$fh> }
my @still = ('-f', 'lavfi', '-i', 'testsrc=size=%s:rate=1', '-frames:v', 1);
sub still { my ($name, $size, @codec) = @_; ffmpeg($name, map({ (my $a = $_) =~ s{%s}{$size}; $a } @still), @codec) }
my %file = (
    png  => still('a.png', '32x24'),
    jpg  => still('a.jpg', '40x30'),
    gif  => still('a.gif', '16x12'),
    webp => still('a.webp', '20x10', '-c:v', 'libwebp'),
    mp4  => ffmpeg('a.mp4', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1', '-c:v', 'mpeg4'),
    webm => ffmpeg('a.webm', '-f', 'lavfi', '-i', 'testsrc=size=80x60:rate=10:duration=1.5', '-c:v', 'libvpx'),
);
my %want = (
    png  => [ 'image/png', 32, 24 ],  jpg => [ 'image/jpeg', 40, 30 ], gif => [ 'image/gif', 16, 12 ],
    webp => [ 'image/webp', 20, 10 ], mp4 => [ 'video/mp4', 64, 48, 1 ], webm => [ 'video/webm', 80, 60, 1.5 ],
);

sub upload {
    my ($body, %o) = @_;
    my %h = (defined $o{type} ? ('content-type' => $o{type}) : ());
    return $t->api('POST', '/api/media' . ($o{query} // ''), body => $body, headers => \%h,
                   exists $o{as} ? (as => $o{as}) : (), exists $o{token} ? (token => $o{token}) : ());
}
sub multipart {
    my (@parts) = @_;
    my $b = 'adserve-test-boundary-7d3f';
    my $body = join '', map {
        "--$b\r\nContent-Disposition: form-data; name=\"$_->{name}\""
            . (defined $_->{filename} ? "; filename=\"$_->{filename}\"" : '') . "\r\n"
            . ($_->{type} ? "Content-Type: $_->{type}\r\n" : '') . "\r\n$_->{data}\r\n"
    } @parts;
    return ("$body--$b--\r\n", "multipart/form-data; boundary=$b");
}
sub leftovers { opendir my $d, $dir or die "$dir: $!"; grep { /^\.upload-/ } readdir $d }

# ---- uploads of each type ---------------------------------------------------------
my %item;
for my $ext (qw(png jpg gif webp mp4 webm)) {
    my ($mime, $w, $h, $secs) = @{ $want{$ext} };
    my $res = upload($file{$ext}, type => $mime, query => "?name=banner.$ext");
    is($res->{status}, 201, "a $ext upload: 201") or diag $res->{content};
    my $m = $item{$ext} = $res->{json} // {};
    is_deeply([ @$m{qw(mime_type width height)} ], [ $mime, $w, $h ], "... $mime, ${w}x$h, read from its bytes");
    is($m->{kind}, $mime =~ /^video/ ? 'video' : 'image', "... kind $m->{kind}");
    is($m->{sha256}, sha256_hex($file{$ext}), '... its SHA-256');
    is($m->{bytes}, length $file{$ext}, '... its size');
    is($m->{name}, "banner.$ext", '... its display name');
    is($m->{advertiser_id}, undef, "... the house's (an admin's, no advertiser named)");
    is($m->{url}, $t->base . "/media/$m->{sha256}.$ext", '... its URL: the content\'s name, the type\'s extension');
    if (defined $secs) {
        cmp_ok(abs(($m->{duration} // -9) - $secs), '<', 0.2, "... lasts $secs s");
    } else {
        is($m->{duration}, undef, '... no duration');
    }
    ok(-f "$dir/$m->{sha256}.$ext", '... stored in the media folder under that name');
    is((stat "$dir/$m->{sha256}.$ext")[2] & 0777, 0644, '... readable by nginx\'s workers');

    my $got = $t->request('GET', "/media/$m->{sha256}.$ext");
    is($got->{status}, 200, '... nginx serves it');
    is($got->{headers}{'content-type'}, $mime, "... as $mime");
    is($got->{headers}{'cache-control'}, 'public, max-age=31536000, immutable', '... cached for a year, immutable');
    ok($got->{content} eq $file{$ext}, '... the same bytes');
}
is($t->api('GET', "/api/media/$item{png}{id}")->{json}{sha256}, $item{png}{sha256}, 'GET one');
my $videos = $t->api('GET', '/api/media?kind=video')->{json};
is_deeply([ sort map { $_->{id} } @{ $videos->{items} } ], [ sort map { $_->{id} } @item{qw(mp4 webm)} ],
          'a list: the kind filter');
my $page = $t->api('GET', '/api/media?kind=video&limit=1&offset=1')->{json};
is_deeply([ $page->{total}, scalar @{ $page->{items} } ], [ 2, 1 ], '... paged');
is($page->{items}[0]{id}, $videos->{items}[1]{id}, '... in one order (oldest first, then by id)');
is($t->api('GET', '/api/media?mime_type=image/webp')->{json}{items}[0]{id}, $item{webp}{id}, '... mime_type filter');
is($t->api('GET', '/api/media?q=BANNER.GI')->{json}{total}, 1, '... q: a name substring, any case');
$t->refused($t->api('GET', '/api/media?size=1'), 422, qr/size/, 'a list with an unknown parameter');

# ---- the same bytes again, and claims ---------------------------------------------
my $again = upload($file{png}, type => 'application/octet-stream', query => '?name=other.png');
is($again->{status}, 200, 'the same bytes again: 200');
is($again->{json}{id}, $item{png}{id}, '... the same item');
is($again->{json}{name}, 'banner.png', '... as it was (the first name kept)');
my $claim = upload($file{jpg}, type => 'image/png');
is($claim->{status}, 200, 'JPEG bytes claimed as image/png: the bytes decide');
is($claim->{json}{mime_type}, 'image/jpeg', '... image/jpeg, the item those bytes are');
is($t->api('GET', '/api/media')->{json}{total}, 6, 'six items, one per file');

# ---- refused: types by their bytes, sizes, bodies -----------------------------------------
my $exe = slurp('/bin/ls');
my $exe_type = qr{application/x-(?:pie-)?(?:executable|sharedlib)};
$t->refused(upload($exe, type => 'image/png', query => '?name=x.png'), 415, qr/$exe_type by its bytes; allowed: image\/png/,
            'a renamed executable sent as image/png');
my ($form, $ctype) = multipart({ name => 'file', filename => 'cat.png', type => 'image/png', data => $exe });
$t->refused(upload($form, type => $ctype), 415, $exe_type, '... and as the file cat.png of a form');
$t->refused(upload("<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>", type => 'image/png'), 415,
            qr/image\/svg\+xml/, 'an SVG (a document that runs script): not allowed');
my $zero_wide = substr($file{png}, 0, 16) . pack('N', 0) . substr($file{png}, 20);
$t->refused(upload($zero_wide, type => 'image/png'), 422, qr{not a image/png that can be read},
            'a PNG whose header says 0 pixels wide');
$t->refused(upload($file{png} . ("\0" x $IMAGE_MAX)), 413, qr/an image file may be at most $IMAGE_MAX bytes/,
            'an image over ADSERVE_MEDIA_IMAGE_MAX');
$t->refused(upload($file{mp4} . ("\0" x $VIDEO_MAX)), 413, qr/a video file may be at most $VIDEO_MAX bytes|exceeds/,
            'a video over ADSERVE_MEDIA_VIDEO_MAX');
$t->refused(upload('x' x ($VIDEO_MAX + 70_000), type => 'video/mp4'), 413, qr/exceeds/,
            'a body announced over every limit: refused before it is read');
$t->refused(upload('', type => 'image/png'), 400, qr/empty file/, 'an empty body');
# HTTP::Tiny always sends a type: curl, told to send none
open my $curl, '-|', 'curl', '-s', '-H', 'Authorization: Bearer ' . $t->token, '-H', 'Content-Type:',
    '--data-binary', "\@$tmp/a.png", $t->base . '/api/media' or die "curl: $!";
like(do { local $/; <$curl> }, qr/Content-Type must be one of image\/png/, 'no Content-Type: 415, which names the types');
$t->refused(upload($file{png}, type => 'text/plain'), 415, qr/Content-Type must be one of/, 'text/plain');
$t->refused(upload($file{png}, type => 'multipart/form-data'), 400, qr/boundary/, 'a form without its boundary');
($form, $ctype) = multipart({ name => 'image', filename => 'a.png', data => $file{png} });
$t->refused(upload($form, type => $ctype), 400, qr/named "file"/, 'a form whose part is not "file"');
($form, $ctype) = multipart({ name => 'file', filename => 'a.png', data => $file{png} },
                            { name => 'file', filename => 'b.gif', data => $file{gif} });
$t->refused(upload($form, type => $ctype), 400, qr/one file/, 'a form with two files');
($form, $ctype) = multipart({ name => 'file', filename => 'a.png', data => $file{png} });
$t->refused(upload(substr($form, 0, 200), type => $ctype), 400, qr/multipart/, 'a form cut short');
$t->refused(upload($file{png}, type => 'image/png', query => '?colour=red'), 422, qr/colour/, 'an unknown query parameter');
$t->refused(upload($file{png}, type => 'image/png', query => '?advertiser_id=' . Adserve::Test::uuid()), 422,
            qr/advertiser_id: no such advertiser/, 'an advertiser that does not exist');
is(upload($file{png}, type => 'image/png', token => undef)->{status}, 401, 'no token: 401');
# refused from its headers while its body still comes (nginx streams the
# upload routes' bodies): the sidecar reads a body of up to 8 MiB to its end
# before it answers, since closing on unread bytes resets the connection and
# the reset can overtake the answer (nginx then says 502). Straight to the
# sidecar, so the client's writes show it: none is cut off.
sub raw_upload {
    my ($announced, $sent) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->env->{ADSERVE_SIDECAR_PORT})
        or die "sidecar: $!";
    local $SIG{PIPE} = 'IGNORE';
    my $whole = print $s "POST /api/media HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${\ $t->token}\r\n"
                       . "Content-Type: application/json\r\nContent-Length: $announced\r\n\r\n";
    $whole &&= print $s ('x' x $sent) if $sent;
    return ($whole ? 'sent' : 'cut') . ' ' . ((<$s> // 'no answer') =~ s/\r\n//r);
}
my %raw;
$raw{ raw_upload(4 * 1024 * 1024, 4 * 1024 * 1024) }++ for 1 .. 10;
is_deeply(\%raw, { 'sent HTTP/1.1 415 Unsupported Media Type' => 10 },
          'a refused 4 MiB body: read to its end, then the 415 (10 of 10, no write cut off)');
is(raw_upload(64 * 1024 * 1024, 0), 'sent HTTP/1.1 415 Unsupported Media Type',
   '... one announced over 8 MiB: answered at once, before any of it comes');
is(scalar(leftovers()), 0, 'no refused upload left a file behind');

# a client that leaves mid-upload: its first bytes would pass for a WebP
# (the header says its size), but nothing of it is kept
my $total = $t->api('GET', '/api/media')->{json}{total};
{
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port, Timeout => 5) or die "connect: $!";
    print $s "POST /api/media HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " . $t->token
           . "\r\nContent-Type: image/webp\r\nContent-Length: " . length($file{webp})
           . "\r\n\r\n" . substr($file{webp}, 0, 200);
    $t->wait_until(5, sub { leftovers() == 1 });
    close $s;
}
ok($t->wait_until(5, sub { leftovers() == 0 }), 'an upload cut short: its temporary file goes');
is($t->api('GET', '/api/media')->{json}{total}, $total, '... and no item is made of it');

# ---- multipart ---------------------------------------------------------------------
my $gif2 = still('b.gif', '48x36');
($form, $ctype) = multipart({ name => 'file', filename => "C:\\fakepath\\..\\<b>cat\x01'.gif", type => 'image/png',
                              data => $gif2 });
my $mp = upload($form, type => $ctype);
is($mp->{status}, 201, 'a multipart upload: 201') or diag $mp->{content};
is_deeply([ @{ $mp->{json} }{qw(mime_type width height)} ], [ 'image/gif', 48, 36 ], '... a 48x36 GIF (whatever the part claimed)');
is($mp->{json}{name}, '_b_cat__.gif', "... its file name's last segment, made harmless, for display only");
ok(-f "$dir/" . sha256_hex($gif2) . '.gif', '... stored under its hash, not its name');

# ---- nginx serves only the library's names ---------------------------------------------------
is($t->request('GET', '/media/')->{status}, 404, 'GET /media/: no listing');
is($t->request('GET', '/media/' . ('0' x 64) . '.png')->{status}, 404, 'an unknown name: 404');
is($t->request('GET', "/media/$item{png}{sha256}.gif")->{status}, 404, '... or the wrong extension');
is($t->request('GET', '/media/../secrets/jwt.key')->{status} >= 400, 1, 'no way out of the folder');
is($t->request('POST', "/media/$item{png}{sha256}.png", body => 'x')->{status}, 403, 'GET and HEAD only');
is($t->request('HEAD', "/media/$item{mp4}{sha256}.mp4")->{headers}{'content-type'}, 'video/mp4', 'HEAD: its type');

# ---- roles ----------------------------------------------------------------------------------
my $acme = $t->advertiser_id;
my $other = $t->created('/api/advertisers', { name => 'Other' })->{id};
$t->api('POST', '/api/users', json => { email => 'ops@example.com', password => 'a-good-password', role => 'operator' });
$t->api('POST', '/api/users', json => { email => 'acme@example.com', password => 'a-good-password',
                                        role => 'advertiser', advertiser_id => $acme });
$t->api('POST', '/api/users', json => { email => 'other@example.com', password => 'a-good-password',
                                        role => 'advertiser', advertiser_id => $other });
my @ops = (as => [ 'ops@example.com', 'a-good-password' ]);
my @buyer = (as => [ 'acme@example.com', 'a-good-password' ]);
my @rival = (as => [ 'other@example.com', 'a-good-password' ]);

my $own = upload($file{png}, type => 'image/png', @buyer);
is($own->{status}, 201, "an advertiser uploads the house's bytes: a new item, its own");
is($own->{json}{advertiser_id}, $acme, '... for its advertiser');
isnt($own->{json}{id}, $item{png}{id}, '... not the house\'s item');
is($own->{json}{url}, $item{png}{url}, '... on the same file');
is(upload($file{png}, type => 'image/png', @buyer)->{json}{id}, $own->{json}{id}, '... and again: its same item');
$t->refused(upload($file{gif}, type => 'image/gif', query => "?advertiser_id=$other", @buyer), 422,
            qr/no such advertiser/, 'an advertiser naming another advertiser');
is_deeply([ map { $_->{id} } @{ $t->api('GET', '/api/media', @buyer)->{json}{items} } ], [ $own->{json}{id} ],
          'an advertiser lists only its own items');
is($t->api('GET', "/api/media/$own->{json}{id}", @rival)->{status}, 404, "another advertiser's item: 404");
is($t->api('GET', "/api/media/$item{png}{id}", @buyer)->{status}, 404, "... and the house's (admins' and operators')");
is($t->api('DELETE', "/api/media/$own->{json}{id}", @rival)->{status}, 404, '... nor can it delete one');
my $ops_item = upload($file{gif}, type => 'image/gif', query => "?advertiser_id=$other", @ops);
is($ops_item->{status}, 201, 'an operator uploads for an advertiser');
is($ops_item->{json}{advertiser_id}, $other, '... its item');
is($t->api('GET', '/api/media', @ops)->{json}{total}, 9, 'an operator lists every item');
is($t->api('GET', "/api/media?advertiser_id=$other")->{json}{total}, 1, '... filtered by advertiser');

# ---- creatives use items -----------------------------------------------------------------------
sub creative {
    my (%o) = @_;
    my $as = delete $o{as};
    return $t->api('POST', '/api/creatives', json => { advertiser_id => $acme, name => 'Banner', type => 'IMAGE',
                                                       w => 300, h => 250, landing_url => 'https://acme.example/', %o },
                   $as ? (as => $as) : ());
}
my $c1 = creative(media_id => $item{png}{id});
is($c1->{status}, 201, "an IMAGE creative of the house's item") or diag $c1->{content};
is($c1->{json}{image_url}, $item{png}{url}, '... its image_url is the item\'s URL');
is($c1->{json}{media_id}, $item{png}{id}, '... and names it');
my $c2 = creative(media_id => $own->{json}{id}, image_url => $own->{json}{url}, @buyer);
is($c2->{status}, 201, "an advertiser's creative of its own item (image_url repeated)") or diag $c2->{content};
my $vid = creative(type => 'VIDEO', media_id => $item{mp4}{id}, w => 640, h => 360, video => { duration => 1 });
is($vid->{status}, 201, 'a VIDEO creative of a video item') or diag $vid->{content};
is_deeply($vid->{json}{video}{media_files}, [ { url => $item{mp4}{url}, mime => 'video/mp4', w => 64, h => 48,
                                                 bitrate => undef, delivery => 'progressive' } ],
          '... its one media file is the item');
$t->refused(creative(media_id => $item{mp4}{id}), 422, qr/IMAGE creative takes an image item, not video/,
            'an IMAGE creative of a video item');
$t->refused(creative(media_id => $item{gif}{id}, image_url => 'https://cdn.example/x.png'), 422,
            qr/^image_url: set by media_id/, '... or with another image_url');
$t->refused(creative(type => 'HTML', html => '<b>x</b>', media_id => $item{gif}{id}), 422,
            qr/only an IMAGE or a VIDEO/, 'an HTML creative');
$t->refused(creative(media_id => $ops_item->{json}{id}), 422, qr/another advertiser's/,
            "a creative of another advertiser's item");
$t->refused(creative(media_id => $item{png}{id}, @buyer), 422, qr/media_id: no such media item/,
            "an advertiser's creative of an item it cannot see");
$t->refused(creative(media_id => Adserve::Test::uuid()), 422, qr/media_id: no such media item/, 'an unknown item');

my $users = sub { [ sort split /\n/, $t->redis('SMEMBERS', "adserve:media_creatives:$_[0]") ] };
is_deeply($users->($item{png}{id}), [ $c1->{json}{id} ], "the item's creatives are indexed");
my $del = $t->api('DELETE', "/api/media/$item{png}{id}");
$t->refused($del, 409, qr/used by 1 creative \($c1->{json}{id}\)/, 'deleting an item a creative uses');
is_deeply($del->{json}{creative_ids}, [ $c1->{json}{id} ], '... the creatives\' ids, to act on');
my $moved = $t->api('PATCH', "/api/creatives/$c1->{json}{id}", json => { media_id => $item{jpg}{id} });
is($moved->{json}{image_url}, $item{jpg}{url}, 'a creative moved to another item takes its URL');
is_deeply([ $users->($item{png}{id}), $users->($item{jpg}{id}) ], [ [], [ $c1->{json}{id} ] ], '... the index moves');
is($t->api('PATCH', "/api/creatives/$c1->{json}{id}", json => { name => 'Renamed' })->{json}{image_url},
   $item{jpg}{url}, '... and keeps it through other changes');
is($t->api('DELETE', "/api/media/$item{png}{id}")->{status}, 204, 'an item no creative uses: deleted');
ok(-f "$dir/$item{png}{sha256}.png", "... its file stays: the advertiser's item has the same bytes");
is($t->api('GET', "/api/media/$item{png}{id}")->{status}, 404, '... the item is gone');
$t->refused($t->api('DELETE', "/api/media/$item{mp4}{id}"), 409, qr/used by 1 creative/, 'the video item is used');
is($t->api('DELETE', "/api/creatives/$vid->{json}{id}")->{status}, 204, '... until its creative goes');
is_deeply($users->($item{mp4}{id}), [], '... which leaves the index');
is($t->api('DELETE', "/api/media/$item{mp4}{id}")->{status}, 204, '... then it goes');
ok(!-e "$dir/$item{mp4}{sha256}.mp4", '... with its file, the last item of those bytes');
is($t->request('GET', "/media/$item{mp4}{sha256}.mp4")->{status}, 404, '... which nginx no longer serves');
is($t->api('PATCH', "/api/creatives/$c2->{json}{id}", json => { media_id => undef, image_url => 'https://cdn.example/b.png' },
           @buyer)->{status}, 200, 'a creative lets go of its item');
is($t->api('DELETE', "/api/media/$own->{json}{id}", @buyer)->{status}, 204, 'an advertiser deletes its own item');
ok(!-e "$dir/$item{png}{sha256}.png", '... and the file, now that no item has those bytes');

# ---- audit -------------------------------------------------------------------------------------
my $log = $t->api('GET', "/api/audit-logs?resource=media_item&id=$item{mp4}{id}")->{json}{items} // [];
is_deeply([ map { $_->{action} } @$log ], [ 'delete', 'create' ], 'the audit log has the upload and the delete');
is($log->[1]{after}{sha256}, $item{mp4}{sha256}, '... with the item');
is($t->api('GET', '/api/audit-logs?resource=media_item&action=create')->{json}{total}, 9,
   '... one create per new item, none for the same bytes again');

done_testing();
