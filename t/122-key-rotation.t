# ad_log key rotation on the real stack: a new key put first in the key
# file and nginx reloaded seals new tokens with it, while tokens issued
# under the old key (kept listed) still count; once the old key is dropped
# from the file, its tokens are refused (400) and counted invalid.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(decode_base64);
use Adserve::Test;

my $t = Adserve::Test->new;
my $keys = $t->var . '/secrets/ad_log.keys';
my $c = $t->chain;
ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), 'a servable chain');

# the key id: the first byte of the token
sub kid {
    (my $b64 = $_[0]) =~ tr{-_}{+/};
    return ord decode_base64($b64 . '=' x (-length($b64) % 4));
}
sub token { $t->ad($c->{unit})->{json}{ext}{ad_log} }
sub reload_with {
    my ($text) = @_;
    open my $fh, '>', $keys or die "$keys: $!";
    print $fh $text;
    close $fh;
    my @old = $t->workers;
    is($t->nginx('-s', 'reload'), 0, 'reload with the new key file');
    ok($t->wait_until(10, sub { !grep { kill 0, $_ } @old }), '... the old workers are gone');
    ok($t->wait_until(5, sub { $t->workers_at($c->{rev}) }), '... the new ones loaded');
}

open my $fh, '<', $keys or die;
my ($old_line) = grep { /^\d+ [0-9a-f]{64}$/ } <$fh>;
close $fh;
chomp $old_line;
my ($old_kid) = $old_line =~ /^(\d+)/;
my $new_kid = $old_kid == 7 ? 8 : 7;
my $new_line = "$new_kid " . join('', map { sprintf '%02x', int rand 256 } 1 .. 32);

my $before = token();
is(kid($before), $old_kid, "a token sealed under key $old_kid");

reload_with("$new_line\n$old_line\n");
my $after = token();
is(kid($after), $new_kid, "after the rotation new tokens are sealed under key $new_kid");
is($t->event(impression => $before)->{status}, 204, 'a token of the old key still counts (204)');
is($t->event(impression => $after)->{status}, 204, 'a token of the new key counts');

reload_with("$new_line\n");
my $res = $t->event(impression => $before);
is($res->{status}, 400, 'the old key dropped: its tokens are refused (400)');
is($t->event(impression => $after)->{status}, 204, '... the new key\'s still count');

ok($t->wait_until(10, sub { $t->stat_sum("u:$c->{unit}:imp") == 2 && $t->stat_sum('invalid:imp') == 1 }),
   'two impressions counted, the refused one as invalid')
    or diag 'imp ' . $t->stat_sum("u:$c->{unit}:imp") . ', invalid ' . $t->stat_sum('invalid:imp');

done_testing;
