# The shipped configuration passes `nginx -t`, and the module refuses
# configurations that could not work, with a message that says why.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new(components => ['conf']);
my $conf = $t->var . '/nginx/nginx.conf';
my $v = $t->var;

sub nginx_t {
    my ($file) = @_;
    my $out = qx{/usr/sbin/nginx -t -p $v/nginx/ -c $file -e $v/log/nginx-t.log 2>&1};
    return ($? == 0, $out);
}

sub variant {
    my ($name, $edit) = @_;
    open my $in, '<', $conf or die;
    local $_ = do { local $/; <$in> };
    $edit->();
    my $file = "$v/nginx/$name.conf";
    open my $out, '>', $file or die;
    print $out $_;
    close $out;
    return $file;
}

mkdir "$v/$_" for qw(redis);
system('mkdir', '-p', map { "$v/nginx/$_" } qw(body proxy fastcgi uwsgi scgi));
system('mkdir', '-p', "$v/secrets");
open my $k, '>', "$v/secrets/ad_log.keys" or die;
print $k "1 " . ('ab' x 32) . "\n";
close $k;

my ($ok, $out) = nginx_t($conf);
ok($ok, 'nginx -t passes on the shipped configuration') or diag $out;
like($out, qr/syntax is ok/, 'nginx says the syntax is ok');

($ok, $out) = nginx_t(variant('hostname', sub { s/adserve_redis 127\.0\.0\.1:\d+/adserve_redis localhost:6379/ }));
ok(!$ok, 'a host name for Redis is refused (hiredis would resolve it blocking)');
like($out, qr/a name, not an address \(it would need a blocking lookup\); it takes "IP:port", "\[IPv6\]:port" or "unix:\/path"/,
     '... with a message that says why');

like(do { open my $fh, '<', $conf or die; local $/; <$fh> }, qr/^\s*adserve_redis_write 127\.0\.0\.1:\d+;/m, 'the shipped configuration names the primary (adserve_redis_write)');
($ok, $out) = nginx_t(variant('writename', sub { s/adserve_redis_write 127\.0\.0\.1:\d+/adserve_redis_write redis-primary:6379/ }));
ok(!$ok, 'a host name for the primary (adserve_redis_write) is refused too');
like($out, qr/adserve_redis_write: "redis-primary:6379": a name/, '... naming the directive');

($ok, $out) = nginx_t(variant('write', sub { s/adserve_redis_write 127\.0\.0\.1:(\d+)/adserve_redis_write [::1]:$1/ }));
ok($ok, 'an IPv6 address for the primary is accepted') or diag $out;

# /metrics counts what serving and tracking locations do
($ok, $out) = nginx_t(variant('metricsonly', sub { s{include \S+/adserve-locations\.conf;}{location = /metrics { adserve_metrics; }} or die }));
ok(!$ok, 'adserve_metrics without a serving or tracking location is refused');
like($out, qr/"adserve_metrics" counts what "adserve_ad" and "adserve_event" locations do: there is none/, '... saying why') or diag $out;

# the primary named by Redis Sentinels instead (README "Many nodes")
($ok, $out) = nginx_t(variant('sentinel', sub { s/adserve_redis_write 127\.0\.0\.1:\d+/adserve_redis_sentinel adserve 127.0.0.1:26379 [::1]:26380/ }));
ok($ok, 'adserve_redis_sentinel with two sentinels is accepted') or diag $out;
($ok, $out) = nginx_t(variant('sentinelonly', sub { s/adserve_redis 127\.0\.0\.1:\d+;\n//; s/adserve_redis_write 127\.0\.0\.1:\d+/adserve_redis_sentinel adserve 127.0.0.1:26379/ }));
ok(!$ok, '... but not alone: the snapshot is read from adserve_redis (a replica near the node)');
like($out, qr/need "adserve_redis" in the http block/, '... saying so') or diag $out;
($ok, $out) = nginx_t(variant('sentinelboth', sub { s/^(\s*adserve_redis_write \S+;)/$1\n    adserve_redis_sentinel adserve 127.0.0.1:26379;/m }));
ok(!$ok, 'adserve_redis_write and adserve_redis_sentinel together are refused');
like($out, qr/"adserve_redis_write" and "adserve_redis_sentinel" both name the primary/, '... saying why') or diag $out;
($ok, $out) = nginx_t(variant('sentinelname', sub { s/adserve_redis_write 127\.0\.0\.1:\d+/adserve_redis_sentinel adserve sentinel-1:26379/ }));
ok(!$ok, 'a host name for a sentinel is refused');
like($out, qr/adserve_redis_sentinel: "sentinel-1:26379": a name, not an address/, '... naming the sentinel') or diag $out;
($ok, $out) = nginx_t(variant('sentinelnone', sub { s/adserve_redis_write 127\.0\.0\.1:\d+/adserve_redis_sentinel adserve/ }));
ok(!$ok, 'adserve_redis_sentinel without a sentinel is refused');
like($out, qr/invalid number of arguments in "adserve_redis_sentinel"/, '... saying why') or diag $out;

($ok, $out) = nginx_t(variant('unix', sub { s/adserve_redis 127\.0\.0\.1:\d+/adserve_redis unix:\/run\/redis.sock/ }));
ok($ok, 'a unix socket for Redis is accepted') or diag $out;

# addresses as nginx reads them (ngx_parse_url): IPv6 in brackets
for my $addr ('[::1]:6379', '[2001:db8::7]:6380') {
    ($ok, $out) = nginx_t(variant('v6', sub { s/adserve_redis 127\.0\.0\.1:\d+/adserve_redis $addr/ }));
    ok($ok, "adserve_redis $addr is accepted") or diag $out;
}
for (['127.0.0.1', qr/: no port;/], ['[::1]', qr/: no port;/], ['[::1:6379', qr/invalid host/],
     ['127.0.0.1:0', qr/invalid port/], ['127.0.0.1:65536', qr/invalid port/],
     ['127.0.0.1:6379/db', qr/invalid host/], ['unix:', qr/no path in the unix domain socket/])
{
    my ($addr, $why) = @$_;
    ($ok, $out) = nginx_t(variant('bad', sub { s/adserve_redis 127\.0\.0\.1:\d+/adserve_redis $addr/ }));
    ok(!$ok, "adserve_redis $addr is refused");
    like($out, $why, '... saying why') or diag $out;
}

# the node's snapshot zone: a size, 8m at least
($ok, $out) = nginx_t(variant('zone', sub { s/^(\s*adserve_redis \S+;)/$1\n    adserve_snapshot_zone 1024m;/m }));
ok($ok, 'adserve_snapshot_zone 1024m is accepted') or diag $out;
($ok, $out) = nginx_t(variant('smallzone', sub { s/^(\s*adserve_redis \S+;)/$1\n    adserve_snapshot_zone 4m;/m }));
ok(!$ok, 'adserve_snapshot_zone 4m is refused');
like($out, qr/adserve_snapshot_zone.*must be 8m or more/, '... saying why') or diag $out;
($ok, $out) = nginx_t(variant('badzone', sub { s/^(\s*adserve_redis \S+;)/$1\n    adserve_snapshot_zone lots;/m }));
ok(!$ok, 'adserve_snapshot_zone lots is refused') or diag $out;

# the node's copy of histories: room for one user at least, a refresh up to an hour
($ok, $out) = nginx_t(variant('hzone', sub { s/^(\s*adserve_history_zone) .*$/$1 0;/m }));
ok($ok, 'adserve_history_zone 0 (no copy) is accepted') or diag $out;
($ok, $out) = nginx_t(variant('smallhzone', sub { s/^(\s*adserve_history_zone) .*$/$1 4k;/m }));
ok(!$ok, 'adserve_history_zone 4k is refused');
like($out, qr/adserve_history_zone: 4096 bytes hold no user's history/, '... saying why') or diag $out;
($ok, $out) = nginx_t(variant('longrefresh', sub { s/^(\s*adserve_history_refresh) .*$/$1 2h;/m }));
ok(!$ok, 'adserve_history_refresh 2h is refused');
like($out, qr/adserve_history_refresh must be between 0 \(off\) and 1h/, '... saying why') or diag $out;
($ok, $out) = nginx_t(variant('longdelay', sub { s/^(\s*adserve_history_delay) .*$/$1 11s;/m }));
ok(!$ok, 'adserve_history_delay 11s is refused');
like($out, qr/adserve_history_delay must be between 0 \(off\) and 10s/, '... saying why') or diag $out;
($ok, $out) = nginx_t(variant('nodelay', sub { s/^(\s*adserve_history_delay) .*$/$1 0;/m }));
ok($ok, 'adserve_history_delay 0 (each answer written at once) is accepted') or diag $out;

($ok, $out) = nginx_t(variant('noredis', sub { s/^\s*adserve_redis .*$//m }));
ok(!$ok, 'adserve_ad without adserve_redis is refused');
like($out, qr/need "adserve_redis"/, '... naming the missing directive');

($ok, $out) = nginx_t(variant('nokey', sub { s/^\s*adserve_ad_log_key .*$//m }));
ok(!$ok, 'adserve_ad without an ad_log key is refused');
like($out, qr/need "adserve_ad_log_key"/, '... naming the missing directive');

($ok, $out) = nginx_t(variant('nopublic', sub { s/^\s*adserve_public_url .*$//m }));
ok(!$ok, 'adserve_ad without adserve_public_url is refused');
like($out, qr/needs "adserve_public_url"/, '... naming the missing directive');

($ok, $out) = nginx_t(variant('badpublic', sub { s/^(\s*adserve_public_url) .*$/$1 ftp:\/\/x\/;/m }));
ok(!$ok, 'a public URL that is not http(s) is refused');
like($out, qr/is not an http\(s\) URL/, '... saying why');

($ok, $out) = nginx_t(variant('slowpacing', sub { s/^(\s*adserve_pacing_interval) .*$/$1 30s;/m }));
ok(!$ok, 'pacing recomputed less often than every 10 s is refused');
like($out, qr/adserve_pacing_interval must be between/, '... saying why');

open $k, '>', "$v/secrets/bad.keys" or die;
print $k "1 not-hex\n";
close $k;
($ok, $out) = nginx_t(variant('badkey', sub { s/ad_log\.keys/bad.keys/ }));
ok(!$ok, 'a malformed key file is refused');
like($out, qr/line 1 is not/, '... naming the line');

open my $loc, '<', "$Adserve::Test::ROOT/lua-free-conf/adserve-locations.conf" or die;
my $locations = do { local $/; <$loc> };
$locations =~ s{location /app/v0/ad/ \{}{location ~ ^/app/v0/ad/ \{} or die;
open my $rl, '>', "$v/nginx/regex-locations.conf" or die;
print $rl $locations;
close $rl;
($ok, $out) = nginx_t(variant('regex', sub { s{include \S+/adserve-locations\.conf}{include $v/nginx/regex-locations.conf} }));
ok(!$ok, 'adserve_ad in a regex location is refused (the tagid follows a prefix)');

# The Debian site (adserve-web's /etc/nginx/sites-available/adserve, README
# "Debian packages") in an nginx.conf like Debian's, whose http block
# includes it: its absolute paths moved into this test's folder, and the
# module built here loaded
{
    my $text = do { open my $fh, '<', $conf or die; local $/; <$fh> };
    my ($module) = $text =~ /^load_module (\S+);/m or die;
    my @temp = $text =~ /^\s*(\w+_temp_path \S+;)/mg;
    open my $in, '<', "$Adserve::Test::ROOT/lua-free-conf/debian-site.conf" or die;
    my $site = do { local $/; <$in> };
    $site =~ s{/etc/adserve/secrets/ad_log\.keys}{$v/secrets/ad_log.keys} or die;
    $site =~ s{/etc/adserve/secrets/nginx-proxy-token\.conf}{$v/nginx/proxy-token.conf} or die;
    $site =~ s{/usr/share/adserve/nginx/}{$Adserve::Test::ROOT/lua-free-conf/} or die;
    $site =~ s{/var/lib/adserve/rec-snapshots}{$v/rec-snapshots} or die;
    mkdir "$v/rec-snapshots";
    my %files = (
        'proxy-token.conf' => 'map "" $adserve_proxy_token { default "' . ('ab' x 24) . "\"; }\n",
        'debian-site.conf' => $site,
        'debian.conf' => "load_module $module;\nevents {}\nhttp {\n    @temp\n"
            . "    access_log off;\n    include $v/nginx/debian-site.conf;\n}\n",
    );
    for my $name (keys %files) {
        open my $out, '>', "$v/nginx/$name" or die;
        print $out $files{$name};
        close $out;
    }
    ($ok, $out) = nginx_t("$v/nginx/debian.conf");
    ok($ok, 'nginx -t passes on the Debian site, included in an http block') or diag $out;
}

done_testing;
