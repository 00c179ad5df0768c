# Roles on every route of the route table: each route is called as admin,
# operator, advertiser and anonymous, and the status must be what the
# route's roles say (listed role: through to the handler; other roles: 403;
# no token: 401; public: never 401/403). The route list and roles come from
# /api/openapi.json, generated from the route table itself; the routes of
# API.md whose roles this file knows are checked against a fixed table too,
# so that a wrong roles column cannot pass by agreeing with itself.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Adserve::Test;

my $t = Adserve::Test->new;

my %token = (admin => $t->token, anonymous => undef);
for my $role (qw(operator advertiser)) {
    my $res = $t->api('POST', '/api/users', json => {
        email => "$role\@example.com", password => 'a-good-password', role => $role,
        ($role eq 'advertiser' ? (advertiser_id => $t->advertiser_id) : ()) });
    is($res->{status}, 201, "a $role to call with") or diag $res->{content};
    $token{$role} = $t->token("$role\@example.com", 'a-good-password');
}
my @callers = qw(admin operator advertiser anonymous);

# Exact answers for the routes whose roles API.md fixes. A body of {} and
# unknown ids make every call harmless: 422 / 404 past the role check.
my %fixed = (
    'POST /api/auth/login'           => [422, 422, 422, 422],
    'POST /api/auth/refresh'         => [422, 422, 422, 422],
    'POST /api/auth/forgot-password' => [422, 422, 422, 422],
    'POST /api/auth/reset-password'  => [422, 422, 422, 422],
    'GET /api/auth/me'               => [200, 200, 200, 401],
    'POST /api/settings/api-token'   => [200, 200, 200, 401],
    'GET /api/users'                 => [200, 403, 403, 401],
    'POST /api/users'                => [422, 403, 403, 401],
    'GET /api/users/{id}'            => [404, 403, 403, 401],
    'PATCH /api/users/{id}'          => [404, 403, 403, 401],
    'DELETE /api/users/{id}'         => [404, 403, 403, 401],
    # the ad-unit routes (another issue), when present
    'GET /api/ad-units'              => [200, 200, 403, 401],
    'PATCH /api/developer/control/ad-units/{ad_unit_id}/ext' => ['ok', 403, 403, 401],
    # the demand routes: advertisers get 403 on inventory collections, 404 on any id
    'GET /api/advertisers' => [200, 200, 403, 401],
    'POST /api/advertisers' => [422, 422, 403, 401],
    'GET /api/advertisers/{id}' => [404, 404, 404, 401],
    'PATCH /api/advertisers/{id}' => [404, 404, 404, 401],
    'DELETE /api/advertisers/{id}' => [404, 404, 404, 401],
    'GET /api/placements' => [200, 200, 403, 401],
    'POST /api/placements' => [422, 422, 403, 401],
    'GET /api/placements/{id}' => [404, 404, 404, 401],
    'PATCH /api/placements/{id}' => [404, 404, 404, 401],
    'DELETE /api/placements/{id}' => [404, 404, 404, 401],
    'GET /api/custom-targeting/keys' => [200, 200, 403, 401],
    'POST /api/custom-targeting/keys' => [422, 422, 403, 401],
    'GET /api/custom-targeting/keys/{id}' => [404, 404, 404, 401],
    'PATCH /api/custom-targeting/keys/{id}' => [404, 404, 404, 401],
    'DELETE /api/custom-targeting/keys/{id}' => [404, 404, 404, 401],
    'GET /api/custom-targeting/keys/{key_id}/values' => [404, 404, 403, 401],
    'POST /api/custom-targeting/keys/{key_id}/values' => [422, 422, 403, 401],
    'GET /api/custom-targeting/keys/{key_id}/values/{id}' => [404, 404, 404, 401],
    'PATCH /api/custom-targeting/keys/{key_id}/values/{id}' => [404, 404, 404, 401],
    'DELETE /api/custom-targeting/keys/{key_id}/values/{id}' => [404, 404, 404, 401],
    'GET /api/orders' => [200, 200, 200, 401],
    'POST /api/orders' => [422, 422, 422, 401],
    'GET /api/orders/{id}' => [404, 404, 404, 401],
    'PATCH /api/orders/{id}' => [404, 404, 404, 401],
    'DELETE /api/orders/{id}' => [404, 404, 404, 401],
    'GET /api/line-items' => [200, 200, 200, 401],
    'POST /api/line-items' => [422, 422, 422, 401],
    'GET /api/line-items/{id}' => [404, 404, 404, 401],
    'PATCH /api/line-items/{id}' => [404, 404, 404, 401],
    'DELETE /api/line-items/{id}' => [404, 404, 404, 401],
    'GET /api/creatives' => [200, 200, 200, 401],
    'POST /api/creatives' => [422, 422, 422, 401],
    'GET /api/creatives/{id}' => [404, 404, 404, 401],
    'PATCH /api/creatives/{id}' => [404, 404, 404, 401],
    'DELETE /api/creatives/{id}' => [404, 404, 404, 401],
    'GET /api/licas' => [200, 200, 200, 401],
    'POST /api/licas' => [422, 422, 422, 401],
    'GET /api/licas/{id}' => [404, 404, 404, 401],
    'PATCH /api/licas/{id}' => [404, 404, 404, 401],
    'DELETE /api/licas/{id}' => [404, 404, 404, 401],
    'POST /api/orders/batch' => [422, 422, 422, 401],
    'POST /api/line-items/batch' => [422, 422, 422, 401],
    'POST /api/licas/batch' => [422, 422, 422, 401],
);
my %mine = map { $_ => 1 } grep { !m{ad-units} } keys %fixed;

# ---- the route table, as the OpenAPI document shows it -----------------------------------
my $res = $t->request('GET', '/api/openapi.json');
my %routes;     # "METHOD /path" => {public => 1} | {roles => {admin => 1, ...}}
if ($res->{status} == 200 && ref $res->{json}{paths} eq 'HASH') {
    my $paths = $res->{json}{paths};
    for my $p (keys %$paths) {
        for my $m (grep { /^(get|post|put|patch|delete)$/ } keys %{ $paths->{$p} }) {
            my $d = $paths->{$p}{$m}{description} // '';
            my $r = "\U$m\E $p";
            if ($d =~ /^Public/) {
                $routes{$r} = { public => 1 };
            } elsif ($d =~ /^The service credential only/) {
                $routes{$r} = { service => 1 };     # the internal group: no user passes
            } elsif ($d =~ /^Roles: ([a-z, ]+)\./) {
                $routes{$r} = { roles => { map { $_ => 1 } split /, /, $1 } };
            } else {
                fail("$r: the OpenAPI description names its roles") or diag $d;
            }
        }
    }
    ok(exists $routes{$_}, "$_ is in the route table") for sort keys %mine;
} else {
    diag 'no /api/openapi.json yet: the fixed table only';
    $routes{$_} = { fixed_only => 1 } for keys %mine;
}
delete $fixed{$_} for grep { !exists $routes{$_} } keys %fixed;     # routes not built yet

# ---- call each route as each caller ----------------------------------------------------------
sub call {
    my ($route, $caller) = @_;
    my ($method, $path) = split / /, $route, 2;
    (my $url = $path) =~ s/\{[^}]+\}/Adserve::Test::uuid()/ge;
    my %o = (token => $token{$caller});
    $o{json} = {} if $method =~ /^(POST|PUT|PATCH)$/;
    return $t->api($method, $url, %o);
}

sub expect_class {
    my ($route, $caller) = @_;
    my $r = $routes{$route};
    return 'through' if $r->{public};
    return 401 if $r->{service};
    return $caller eq 'anonymous' ? 401 : $r->{roles}{$caller} ? 'through' : 403;
}

for my $route (sort keys %routes) {
    for my $i (0 .. $#callers) {
        my $caller = $callers[$i];
        my $status = call($route, $caller)->{status};
        my $fixed = $fixed{$route} ? $fixed{$route}[$i] : undef;
        if (!$routes{$route}{fixed_only}) {
            my $want = expect_class($route, $caller);
            if ($want eq 'through') {
                ok($status != 401 && $status != 403 && $status < 500,
                   "$route as $caller: past the role check ($status)");
            } else {
                is($status, $want, "$route as $caller: $want, as its roles say");
            }
        }
        next unless defined $fixed;
        if ($fixed eq 'ok') {
            ok($status != 401 && $status != 403 && $status < 500, "$route as $caller: allowed (API.md)");
        } else {
            is($status, $fixed, "$route as $caller: $fixed (API.md)");
        }
    }
}

# an API token carries its user's role, no more
my $api = $t->api('POST', '/api/settings/api-token', token => $token{advertiser})->{json}{api_token};
is($t->api('GET', '/api/users', token => $api)->{status}, 403, "an advertiser's API token: still 403 on users");
is($t->api('GET', '/api/auth/me', token => $api)->{status}, 200, '... and 200 on me');

done_testing;
