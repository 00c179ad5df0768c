# Bad input everywhere gets a clear answer (issue 18, point 5): every
# operation of the OpenAPI document that takes a body is sent a generated
# set of bad bodies (not JSON, truncated, not an object, deeply nested,
# oversized, the wrong Content-Type, control characters, and each of its
# documented fields with a value of the wrong type), as the admin. Each
# answer must be one the operation documents, below 500, with a JSON
# detail; and none may write: the revision and the audit stream stay as they
# were. Path ids are real where a resource of the kind exists (a made-up id
# meets the 404 before the body is read), so the body's checks are reached.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Adserve::Test;

my $t = Adserve::Test->new;
my $JSON = JSON::PP->new->canonical;
my $doc = $t->request('GET', '/api/openapi.json')->{json} or BAIL_OUT('no OpenAPI document');

# real ids for the path parameters: one resource of each kind
my $adv = $t->created('/api/advertisers', { name => 'Walk' });
my $order = $t->created('/api/orders', { advertiser_id => $adv->{id}, name => 'Walk' });
my $unit = $t->created('/api/ad-units', { code => "walk-$$", name => 'Walk' });
my %ids = (
    advertisers => $adv->{id}, orders => $order->{id}, 'ad-units' => $unit->{id},
    'line-items' => $t->created('/api/line-items', { order_id => $order->{id}, name => 'Walk', type => 'STANDARD',
                                                     cost_type => 'CPM', rate => 1 })->{id},
    creatives => $t->created('/api/creatives', { advertiser_id => $adv->{id}, name => 'Walk', type => 'IMAGE', w => 1, h => 1,
                                                 image_url => 'https://cdn.example/w.png',
                                                 landing_url => 'https://w.example/' })->{id},
    placements => $t->created('/api/placements', { name => 'Walk' })->{id},
    keys => $t->created('/api/custom-targeting/keys', { name => 'walk' })->{id},
    'catalog-items' => $t->created('/api/catalog-items', { item_id => 'walk:1', title => 'W', url => 'https://w.example/1' })->{id},
    users => $t->api('GET', '/api/auth/me')->{json}{id},
);
# a path's ids: the resource that each {param} follows
sub fill {
    my ($path) = @_;
    $path =~ s{/([a-z-]+)/\{[a-z_]+\}}{ "/$1/" . ($ids{$1} // Adserve::Test::uuid()) }ge;
    $path =~ s{\{[a-z_]+\}}{Adserve::Test::uuid()}ge;
    return $path;
}

# the body's documented fields, to send each with a value of the wrong type
sub fields {
    my ($schema) = @_;
    $schema = $doc->{components}{schemas}{ $1 } if ($schema->{'$ref'} // '') =~ m{/([^/]+)$};
    return %{ $schema->{properties} // {} };
}
sub wrong_for {
    my ($prop) = @_;
    $prop = $doc->{components}{schemas}{ $1 } if ($prop->{'$ref'} // '') =~ m{/([^/]+)$};
    my @types = ref $prop->{type} ? @{ $prop->{type} } : ($prop->{type} // ());
    return ({}) if grep { $_ eq 'string' || $_ eq 'integer' || $_ eq 'number' || $_ eq 'boolean' } @types;
    return ('not an object') if grep { $_ eq 'object' } @types;
    return (12345) if grep { $_ eq 'array' } @types;
    return ();
}

my @bad = (
    [ 'not JSON',             'application/json', 'this is not json' ],
    [ 'truncated',            'application/json', '{"name": "x", ' ],
    [ 'an array',             'application/json', '[1, 2, 3]' ],
    [ 'a number',             'application/json', '42' ],
    [ 'deeply nested',        'application/json', ('[' x 20000) . (']' x 20000) ],
    [ 'a NUL escape',         'application/json', '{"name": "a\u0000b"}' ],
    [ 'a raw control byte',   'application/json', "{\"name\": \"a\x01b\"}" ],
    [ 'invalid UTF-8',        'application/json', "{\"name\": \"\xff\xfe\"}" ],
    [ 'a huge number',        'application/json', '{"name": 1e999999}' ],
    [ 'text/plain',           'text/plain',       '{"name": "x"}' ],
    [ 'no Content-Type',      undef,              '{"name": "x"}' ],
    [ 'over the body limit',  'application/json', '{"name": "' . ('x' x (1024 * 1024 + 16)) . '"}' ],
);

my $token = $t->token;
my ($rev, $audit) = ($t->revision, $t->redis('XLEN', 'adserve:audit'));
my ($sent, @problems) = (0);
for my $path (sort keys %{ $doc->{paths} }) {
    for my $method (sort keys %{ $doc->{paths}{$path} }) {
        my $op = $doc->{paths}{$path}{$method};
        my $body = $op->{requestBody} or next;
        my %documented = map { $_ => 1 } keys %{ $op->{responses} // {} };
        my $schema = $body->{content}{'application/json'}{schema} // {};
        my %props = fields($schema);
        my @cases = @bad;
        for my $name (sort keys %props) {
            push @cases, map { [ "$name: " . $JSON->encode([$_]), 'application/json', $JSON->encode({ $name => $_ }) ] }
                         wrong_for($props{$name});
        }
        my $url = fill($path);
        for my $case (@cases) {
            my ($what, $type, $content) = @$case;
            my %headers = (authorization => "Bearer $token");
            $headers{'content-type'} = $type if defined $type;
            my $res = $t->request(uc $method, $url, headers => \%headers, body => $content);
            $sent++;
            my $st = $res->{status};
            my $why = $st >= 500 ? 'a 5xx'
                    : !$documented{$st} ? "an undocumented $st"
                    : $st < 400 ? "a success ($st)"
                    : !defined(($res->{json} // {})->{detail}) ? 'no JSON detail'
                    : undef;
            push @problems, sprintf('%s %s, %s: %s: %.200s', uc $method, $path, $what, $why, $res->{content}) if $why;
        }
    }
}
ok($sent > 500, "$sent bad bodies sent to every operation that takes a body");
is_deeply(\@problems, [], 'each answered with a documented 4xx and a JSON detail') or diag join "\n", @problems;
is($t->revision, $rev, 'not one of them changed the data (the revision)');
is($t->redis('XLEN', 'adserve:audit'), $audit, '... nor wrote an audit record');
is($t->request('GET', '/api/health')->{status}, 200, 'the sidecar is well afterwards');

done_testing;
