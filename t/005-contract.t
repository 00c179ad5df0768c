# The Redis contract is spelled once (src/adserve_contract.h): no other C
# file of the module or the sidecar writes a key of ours or a vocabulary
# word of a record field as a string literal, and both programs are built
# from the contract library. Reads the sources; no stack.
use strict;
use warnings;
use FindBin;
use Test::More;

my $root = "$FindBin::Bin/..";
my $contract = "$root/src/adserve_contract.h";

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    return <$fh>;
}

# string literals of C text, comments dropped
sub literals {
    my ($text) = @_;
    $text =~ s{/\*.*?\*/}{ }gs;
    $text =~ s{//[^\n]*}{ }g;
    my @s;
    push @s, $1 while $text =~ /"((?:[^"\\\n]|\\.)*)"/g;
    return @s;
}

my $h = slurp($contract);
# Vocabulary words of the contract, by value: the words of record fields
# (upper case) and the counters' dimensions ("li:"). The counters' metric
# names ("spend") are also the API's field names, so only their tables
# are checked: by both programs linking them.
my %word;
while ($h =~ /#define\s+(ADSERVE_V_\w+)\s+"([^"]+)"/g) {
    my ($name, $value) = ($1, $2);
    $word{$value} = $name if $value =~ /^[A-Z_]+$|:$/;
}
ok(keys %word >= 20, scalar(keys %word) . ' vocabulary words in the contract')
    or diag 'the contract header was not read as expected';

# Other vocabularies that happen to share a word with ours, each with its
# reason. Nothing else may repeat one.
my %elsewhere = (
    'sidecar/schema_ad_unit.c HTML' => "VAST's CompanionType (Static, HTML, IFrame)",
);

my @files = (glob("$root/src/*.[ch]"), glob("$root/sidecar/*.[ch]"),
             "$root/ngx_adserve_module.c");
@files = grep { !m{/src/adserve_contract\.[ch]$} } @files;
ok(@files > 50, scalar(@files) . ' C files checked');

my (@keys, @words);
for my $f (@files) {
    (my $rel = $f) =~ s{^\Q$root\E/}{};
    for my $lit (literals(slurp($f))) {
        # a key: "adserve:" and a name ("adserve: ..." is a log line)
        push @keys, "$rel: \"$lit\"" if $lit =~ /^adserve:[a-z_{%]/;
        push @words, "$rel: \"$lit\""
            if exists $word{$lit} && !exists $elsewhere{"$rel $lit"};
    }
}
is(scalar @keys, 0, 'no Redis key spelled outside the contract')
    or diag join "\n", @keys;
is(scalar @words, 0, 'no vocabulary word spelled outside the contract')
    or diag join "\n", map { "$_ (the contract's $word{(/\"(.*)\"$/)[0]})" } @words;

# the change log's kinds and the counters' grammar come from tables that
# both builds link: the module's config and the sidecar's Makefile
like(slurp("$root/config"), qr{src/adserve_contract\.c}, 'the module is built with the contract');
like(slurp("$root/sidecar/Makefile"), qr{^SHARED := .*\badserve_contract\b.*\badserve_target\b}m,
     'the sidecar is built with the contract and serving\'s targeting compiler');

# the check itself sees a key and a word when they are there
my @probe = literals(qq{x = "adserve:rev"; /* "ACTIVE" */ y = "ACTIVE";});
is_deeply(\@probe, ['adserve:rev', 'ACTIVE'], 'literals are found, comments skipped');

done_testing();
