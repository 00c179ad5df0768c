package Adserve::Test;

# Black-box test harness: a real Redis, sidecar and nginx with the module,
# started by the project's own scripts/run on free ports in a temporary
# folder, so tests run beside a `make run` and exercise the real start path.
#
#   my $t = Adserve::Test->new;                 # the whole stack
#   my $res = $t->ad($tagid, {user => {id => 'u1'}});
#   $t->redis(qw(HSET adserve:ad_units), $id, $json);
#
# Set ADSERVE_TEST_KEEP=1 to keep the folder (logs, conf) after a run.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(basename dirname);
use File::Path qw(make_path);
use File::Temp qw(tempdir tempfile);
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Scalar::Util ();

our $ROOT = abs_path(dirname(__FILE__) . '/../../..');

# Every stack still up at exit (a global, a reference cycle) is stopped here:
# this END block runs before File::Temp's (defined earlier), which would
# remove the folder holding the pid files first.
my %live;
our $SANITIZER_REPORTS = 0;
END {
    my $status = $?;                   # stopping runs commands, which set $?
    $SANITIZER_REPORTS += grep { $_->shutdown } grep { defined } values %live;
    $? = $SANITIZER_REPORTS && !$status ? 1 : $status;
}
our $JSON = JSON::PP->new->canonical->allow_nonref;

# free_ports(N): N ports on 127.0.0.1 that nothing listens on now, distinct
# from each other and from every port this process was given before (a
# file may run several stacks and an SMTP sink). The sockets are held until
# all are chosen: one at a time, the kernel hands out the same port twice
# in about one stack of a thousand, and then Redis holds the sidecar's port.
my %given;
sub free_ports {
    my ($n) = @_;
    my (@held, @ports);
    while (@ports < $n) {
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                      LocalPort => 0, ReuseAddr => 1)
            or die "no free port: $!";
        push @held, $s;
        push @ports, $s->sockport unless $given{ $s->sockport }++;
    }
    close $_ for @held;
    return @ports;
}
sub free_port { (free_ports(1))[0] }

sub new {
    my ($class, %opt) = @_;
    my $var = tempdir('adserve-test-XXXXXX', TMPDIR => 1,
                      CLEANUP => !$ENV{ADSERVE_TEST_KEEP});
    # as make run's var/: nginx workers run as another user (secrets/ is 0700)
    chmod 0755, $var;
    my @ports = free_ports(4);
    my $self = bless {
        var   => $var,
        owner => $$,
        env   => {
            ADSERVE_VAR            => $var,
            ADSERVE_PORT           => $ports[0],
            ADSERVE_SIDECAR_PORT   => $ports[1],
            ADSERVE_REDIS_PORT     => $ports[2],
            ADSERVE_DEMO_PORT      => $ports[3],
            ADSERVE_WORKERS        => $opt{workers} // 2,
            ADSERVE_THREADS        => $opt{threads} // 1,
            # every test request comes from 127.0.0.1: the spec's 100
            # requests/s would throttle the load tests; 0 is no limit
            # (t/025 tests the limit)
            ADSERVE_RATE           => $opt{rate} // 0,
            ADSERVE_ADMIN_EMAIL    => 'admin@example.com',
            ADSERVE_ADMIN_PASSWORD => 'test-' . join('', map { int rand 10 } 1 .. 12),
            # every test runs the sidecar under AddressSanitizer + UBSan;
            # a report in its log fails the test file (see shutdown)
            ADSERVE_SIDECAR_BIN    => "$ROOT/build/sidecar-asan/adserve-sidecar",
            ASAN_OPTIONS           => 'detect_leaks=1:abort_on_error=0',
            UBSAN_OPTIONS          => 'print_stacktrace=1',
        },
        http  => HTTP::Tiny->new(timeout => 10, keep_alive => 0),
        # for a redirect itself (clicks), not where it leads
        http_noredirect => HTTP::Tiny->new(timeout => 10, keep_alive => 0,
                                           max_redirect => 0),
    }, $class;
    $self->{env}{ADSERVE_NGINX_TEMPLATE} = $opt{template} if $opt{template};
    # pacing read often, so tests need not wait; X-Adserve-Clock sets a
    # request's time (adserve_test_clock on)
    $self->{env}{ADSERVE_PACING_INTERVAL} = $opt{pacing} // '500ms';
    $self->{env}{ADSERVE_TEST_CLOCK} = 'on' if $opt{test_clock} || $opt{clock};
    $self->{env}{ADSERVE_EVENT_BUFFER} = $opt{event_buffer} if $opt{event_buffer};
    $self->{env}{ADSERVE_CAP_TIMEOUT} = $opt{cap_timeout} if $opt{cap_timeout};
    # the loopback the sidecar and nginx reach Redis on: 127.0.0.1 or ::1
    $self->{env}{ADSERVE_REDIS_HOST} = $opt{redis_host} if $opt{redis_host};
    # another node of a stack (README "Many nodes"): node_of => its first
    # node, whose Redis it writes (and reads, unless redis_read_port names a
    # replica) and whose secrets it shares (a token one node seals, any
    # node opens); start it with components => ['nginx']
    if (my $first = $opt{node_of}) {
        $self->{env}{ADSERVE_REDIS_PORT} = $first->env->{ADSERVE_REDIS_PORT};
        $self->{env}{$_} = $first->env->{$_} for qw(ADSERVE_ADMIN_EMAIL ADSERVE_ADMIN_PASSWORD);
        mkdir "$var/secrets", 0700 or die "mkdir: $!";
        system('cp', '-p', glob($first->var . '/secrets/*'), "$var/secrets/") == 0 or die 'cp secrets';
    }
    $self->{env}{ADSERVE_REDIS_READ_PORT} = $opt{redis_read_port} if $opt{redis_read_port};
    $live{"$self"} = $self;
    Scalar::Util::weaken($live{"$self"});

    $self->start(@{ $opt{components} // [qw(redis sidecar nginx)] });
    return $self;
}

sub var    { $_[0]{var} }
sub port   { $_[0]{env}{ADSERVE_PORT} }
sub env    { $_[0]{env} }
sub base   { 'http://127.0.0.1:' . $_[0]->port }
sub demo_base { 'http://127.0.0.1:' . $_[0]{env}{ADSERVE_DEMO_PORT} }
sub admin  { ($_[0]{env}{ADSERVE_ADMIN_EMAIL}, $_[0]{env}{ADSERVE_ADMIN_PASSWORD}) }

# script NAME ARGS: runs scripts/NAME with this stack's environment
sub script {
    my ($self, $name, @args) = @_;
    local %ENV = (%ENV, %{ $self->{env} });
    my $out = qx{"$ROOT/scripts/$name" @{[ map { quotemeta } @args ]} 2>&1};
    die "scripts/$name @args failed:\n$out" if $?;
    return $out;
}

# marked running first: a start that fails half-way (nginx does not come up)
# leaves the rest running, and shutdown must stop it
sub start { my ($self, @c) = @_; $self->{running}{$_} = 1 for @c; $self->script('run', @c) }
sub stop  { my ($self, @c) = @_; $self->script('stop', @c); delete $self->{running}{$_} for @c }

sub nginx {
    my ($self, @args) = @_;
    my $v = $self->{var};
    local %ENV = (%ENV, %{ $self->{env} });
    return system('/usr/sbin/nginx', '-p', "$v/nginx/", '-c', "$v/nginx/nginx.conf",
                  '-e', "$v/log/nginx-error.log", @args);
}

sub nginx_pid {
    my ($self) = @_;
    open my $fh, '<', "$self->{var}/nginx/nginx.pid" or return;
    chomp(my $pid = <$fh>);
    return $pid;
}

# the pids of the master's worker processes
sub workers {
    my ($self) = @_;
    my $master = $self->nginx_pid or return ();
    my @pids;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $stat or next;
        my $line = <$fh> // next;
        my ($pid, $name, $ppid) = $line =~ /^(\d+) \((.*)\) \S (\d+)/ or next;
        push @pids, $pid if $ppid == $master && $name eq 'nginx';
    }
    return sort @pids;
}

sub log_text {
    my ($self, $name) = @_;
    open my $fh, '<', "$self->{var}/log/$name" or return '';
    local $/;
    return <$fh>;
}

# ---- HTTP ---------------------------------------------------------------

# request METHOD PATH [json => DATA | body => RAW] [headers => {...}]
#         [redirect => 0]: a 3xx is returned, not followed
sub request {
    my ($self, $method, $path, %o) = @_;
    my %headers = %{ $o{headers} // {} };
    my %args = (headers => \%headers);
    if (exists $o{json}) {
        $args{content} = $JSON->encode($o{json});
        $headers{'content-type'} //= 'application/json';
    } elsif (exists $o{body}) {
        $args{content} = $o{body};
    }
    my $http = $o{via} // (exists $o{redirect} && !$o{redirect} ? $self->{http_noredirect} : $self->{http});
    my $res = $http->request($method, $self->base . $path, \%args);
    if (($res->{headers}{'content-type'} // '') =~ m{^application/json}
        && length $res->{content})
    {
        $res->{json} = eval { $JSON->decode($res->{content}) };
    }
    return $res;
}

# ad TAGID [BODY [OPTIONS]]: the serving request, with the spec's request by
# default; OPTIONS as request's (via => a connection of worker_connections)
sub ad {
    my ($self, $tagid, $body, %o) = @_;
    $body //= { version => '0.1.0', user => { id => 'u1' }, device => { ua => 'Mozilla/5.0' } };
    return $self->request('POST', "/app/v0/ad/$tagid",
                          ref $body ? (json => $body) : (body => $body), %o);
}

# ads_pipelined TAGID BODIES: the serving request of each body, pipelined on
# one connection (HTTP/1.1, in batches of 100), and each answer as request's
# ({status, content, json}), in order. For tests that need thousands of
# answers: HTTP::Tiny writes a request's head and body apart, and the second
# write waits for the delayed ACK of the first (40 ms an answer).
sub ads_pipelined {
    my ($self, $tagid, $bodies) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->port, Proto => 'tcp')
        or die "connect: $!";
    binmode $sock;
    my (@out, $buf);
    $buf = '';
    for (my $at = 0; $at < @$bodies; $at += 100) {
        my @batch = @$bodies[$at .. ($at + 99 < $#$bodies ? $at + 99 : $#$bodies)];
        my $req = join '', map {
            my $json = $JSON->encode($_);
            "POST /app/v0/ad/$tagid HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            . "Content-Length: " . length($json) . "\r\n\r\n$json"
        } @batch;
        print {$sock} $req or die "write: $!";
        for (1 .. @batch) {
            my ($status, $len);
            until (defined $len) {
                if ($buf =~ s/\AHTTP\/1\.1 (\d+)[^\r]*\r\n(.*?)\r\n\r\n//s) {
                    $status = $1;
                    my $head = $2;
                    $len = $head =~ /^content-length:\s*(\d+)/mi ? $1 : 0;
                    last;
                }
                sysread($sock, $buf, 65536, length $buf) or die "read: $!";
            }
            while (length $buf < $len) {
                sysread($sock, $buf, 65536, length $buf) or die "read: $!";
            }
            my $content = substr($buf, 0, $len, '');
            push @out, { status => $status, content => $content,
                         json => $len ? eval { $JSON->decode($content) } : undef };
        }
    }
    close $sock;
    return @out;
}

# ads_concurrent(TAGID, [BODY, ...], headers => {...}): the ad requests all
# in flight at once, one connection each (spread over the workers), every
# one written before any answer is read: as the slots of one page ask. The
# answers, in order, as ads_pipelined's.
sub ads_concurrent {
    my ($self, $tagid, $bodies, %opt) = @_;
    my $extra = join '', map { "$_: $opt{headers}{$_}\r\n" } sort keys %{ $opt{headers} // {} };
    my @socks = map {
        my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->port, Proto => 'tcp')
            or die "connect: $!";
        binmode $sock;
        $sock
    } @$bodies;
    for my $i (0 .. $#socks) {
        my $json = $JSON->encode($bodies->[$i]);
        print { $socks[$i] } "POST /app/v0/ad/$tagid HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            . "Content-Type: application/json\r\nConnection: close\r\n$extra"
            . "Content-Length: " . length($json) . "\r\n\r\n$json" or die "write: $!";
    }
    # a request that never ends fails the test rather than hanging it
    local $SIG{ALRM} = sub { die "ads_concurrent: no answer in 10 s\n" };
    alarm 10;
    my @out = map {
        my ($sock, $buf) = ($_, '');
        1 while sysread($sock, $buf, 65536, length $buf);
        close $sock;
        my ($status, $content) = $buf =~ /\AHTTP\/1\.1 (\d+)[^\r]*\r\n.*?\r\n\r\n(.*)\z/s
            or die "not an HTTP answer: $buf";
        { status => $status, content => $content,
          json => length $content ? eval { $JSON->decode($content) } : undef }
    } @socks;
    alarm 0;
    return @out;
}

# Adserve::Test->plot_ok(PNG, OUTPUT): a simulator's plot, written as a PNG beside its data
# (the same name, .dat), and its path printed in OUTPUT
sub plot_ok {
    my ($self, $png, $output) = @_;
    (my $dat = $png) =~ s/\.png$/.dat/;
    Test::More::ok((-s $png // 0) > 10_000, 'the plot was written');
    open my $fh, '<', $png or die "$png: $!";
    read $fh, my $magic, 8;
    Test::More::is($magic, "\x89PNG\r\n\x1a\n", '... as a PNG');
    Test::More::ok(-s $dat, '... with its data');
    Test::More::like($output, qr{^Plot: \Q$png\E$}m, '... and its path printed');
}

# One keep-alive connection on each worker: [HTTP::Tiny, ...]. nginx gives a
# connection to one worker for its life, and fresh ones to a worker in runs,
# so only these reach every worker for sure: each worker reloads its
# snapshot and reads pacing on its own timer. Idle for nginx's
# keepalive_timeout (75 s), a connection is closed and HTTP::Tiny's next one
# may reach another worker: take them where they are used.
sub worker_connections {
    my ($self) = @_;
    my @workers = $self->workers;
    my %by_pid;
    for (1 .. 100 * @workers) {
        my $http = HTTP::Tiny->new(keep_alive => 1, timeout => 10);
        my $res = $self->request('GET', '/app/v0/status', via => $http);
        my $pid = $res->{json} && $res->{json}{pid} or next;
        $by_pid{$pid} //= $http;
        return [ @by_pid{ sort keys %by_pid } ] if keys %by_pid == @workers;
    }
    die 'no connection reached every worker (' . scalar(@workers) . ')';
}

# login EMAIL PASSWORD: the token response (dies unless 200); with no
# arguments, the first admin's
sub login {
    my ($self, $email, $password) = @_;
    ($email, $password) = $self->admin unless defined $email;
    my $res = $self->request('POST', '/api/auth/login',
                             json => { email => $email, password => $password });
    die "login as $email: $res->{status} $res->{content}" unless $res->{status} == 200;
    return $res->{json};
}

# token [EMAIL PASSWORD]: an access token (the first admin's by default),
# kept per user for the life of the stack
sub token {
    my ($self, $email, $password) = @_;
    my $key = $email // '';
    return $self->{tokens}{$key} //= $self->login($email, $password)->{access_token};
}

# api METHOD PATH [token => T | as => [EMAIL, PASSWORD]] [json => ...]: an
# API request with a bearer token, the first admin's unless told otherwise
sub api {
    my ($self, $method, $path, %o) = @_;
    my $token = exists $o{token} ? delete $o{token}
              : $self->token(@{ delete $o{as} // [] });
    my %headers = %{ delete $o{headers} // {} };
    $headers{Authorization} = "Bearer $token" if defined $token;
    return $self->request($method, $path, %o, headers => \%headers);
}

# created PATH BODY [api options]: a POST that must answer 201; the record
sub created {
    my ($self, $path, $body, %o) = @_;
    my $res = $self->api('POST', $path, json => $body, %o);
    Test::More::is($res->{status}, 201, "POST $path: 201") or Test::More::diag($res->{content});
    return $res->{json} // {};
}

# refused RES STATUS LIKE NAME: the status, and a {detail} that says why
sub refused {
    my ($self, $res, $status, $like, $name) = @_;
    Test::More::is($res->{status}, $status, "$name: $status") or Test::More::diag($res->{content});
    Test::More::like($res->{json} && $res->{json}{detail} // '', $like, "$name: the detail says why");
}

# in_state(PATH, MAKE, ROUTE, STATE): a new record of the resource at PATH
# ("/api/orders"), made by MAKE and PATCHed along ROUTE->{STATE} (the states
# that lead there); the record as the last answer shows it
sub in_state {
    my ($self, $path, $make, $route, $state) = @_;
    my $record = $make->();
    for my $s (@{ $route->{$state} }) {
        my $res = $self->api('PATCH', "$path/$record->{id}", json => { status => $s });
        Test::More::is($res->{status}, 200, "to $s") or Test::More::diag($res->{content});
        $record = $res->{json};
    }
    return $record;
}

# transitions_ok(PATH, MAKE, ROUTE, STATES, ALLOWED): every change between
# two STATES, each on a fresh record (in_state): an ALLOWED "FROM TO" answers
# 200 with the new status and one revision; any other 409 with the reason,
# no revision, and the record unchanged
sub transitions_ok {
    my ($self, $path, $make, $route, $states, $allowed) = @_;
    for my $from (@$states) {
        for my $to (grep { $_ ne $from } @$states) {
            my $record = $self->in_state($path, $make, $route, $from);
            my $r0 = $self->revision;
            my $res = $self->api('PATCH', "$path/$record->{id}", json => { status => $to });
            if ($allowed->{"$from $to"}) {
                Test::More::is($res->{status}, 200, "$from -> $to: allowed") or Test::More::diag($res->{content});
                Test::More::is($res->{json}{status}, $to, "$from -> $to: the new status");
                Test::More::is($self->revision, $r0 + 1, "$from -> $to: one revision");
            } else {
                my $why = $from eq 'ARCHIVED' ? qr/is ARCHIVED: it can no longer change/
                                              : qr/^status: cannot go from $from to $to/;
                $self->refused($res, 409, $why, "$from -> $to: refused");
                Test::More::is($self->api('GET', "$path/$record->{id}")->{json}{status}, $from,
                               "$from -> $to: unchanged");
                Test::More::is($self->revision, $r0, "$from -> $to: no revision");
            }
        }
    }
}

sub revision { $_[0]->redis('GET', 'adserve:rev') || 0 }

# ---- events -------------------------------------------------------------

# event TYPE TOKEN [headers => {...}]: GET .../impression or .../click (the
# redirect not followed); TYPE conversion POSTs {ad_log, type, value?}
sub event {
    my ($self, $type, $token, %o) = @_;
    if ($type eq 'conversion') {
        my %body = (ad_log => $token, type => 'conversion');
        $body{value} = $o{value} if exists $o{value};
        return $self->request('POST', '/app/v0/event', json => \%body, headers => $o{headers} // {});
    }
    return $self->request($o{method} // 'GET', "/app/v0/event/$type?ad_log=$token",
                          headers => $o{headers} // {}, redirect => 0);
}

# stat_sum FIELD: the sum of FIELD over every hour's adserve:stats:{YYYYMMDDHH}
# (a test may straddle an hour, or set the clock); 0 when absent
sub stat_sum {
    my ($self, $field) = @_;
    my $sum = 0;
    for my $key (grep { length } split /\n/, $self->redis('--scan', '--pattern', 'adserve:stats:*')) {
        $sum += $self->redis('HGET', $key, $field) || 0;
    }
    return $sum;
}

# stats FIELD => WANT, ...: true when every sum is what is wanted
sub stats_are {
    my ($self, %want) = @_;
    return !grep { $self->stat_sum($_) != $want{$_} } keys %want;
}

sub delivery { $_[0]->redis('HGET', 'adserve:delivery', $_[1]) || 0 }

# the id of an advertiser made through the API (one per stack), for users
# of the advertiser role, which must belong to one that exists
sub advertiser_id {
    my ($self) = @_;
    return $self->{advertiser_id} //= do {
        my $res = $self->api('POST', '/api/advertisers', json => { name => 'Test advertiser' });
        die "POST /api/advertisers: $res->{status} $res->{content}" unless $res->{status} == 201;
        $res->{json}{id};
    };
}

# the status of whichever worker answers
sub status {
    my ($self) = @_;
    my $res = $self->request('GET', '/app/v0/status');
    return $res->{json};
}

# ---- Prometheus -----------------------------------------------------------

# prom_samples TEXT: {'name{labels}' => value} of a document in Prometheus's
# text format; dies on a line that is no sample, or on a series twice
sub prom_samples {
    my ($text) = @_;
    my %v;
    for (split /\n/, $text) {
        next if /^#/ || !/\S/;
        my ($series, $value) = /^(\S+(?:\{[^}]*\})?) (\S+)$/ or die "not a sample: $_";
        die "$series twice" if exists $v{$series};
        $v{$series} = $value;
    }
    return \%v;
}

# prom_delta BEFORE AFTER SERIES: how far a series moved (an absent one is 0)
sub prom_delta {
    my ($before, $after, $series) = @_;
    return ($after->{$series} // 0) - ($before->{$series} // 0);
}

# ---- Redis --------------------------------------------------------------

sub redis {
    my ($self, @cmd) = @_;
    # a stalled Redis fails the test in 10 s rather than hanging it
    open my $fh, '-|', 'timeout', '10', 'redis-cli', '-p', $self->{env}{ADSERVE_REDIS_PORT}, @cmd
        or die "redis-cli: $!";
    my $out = do { local $/; <$fh> } // '';
    close $fh;
    $out =~ s/\n\z//;          # chomp would not, with $/ undefined
    return $out;
}

# monitored MATCH CODE: the arguments (the command's name first) of the
# first command Redis runs while CODE runs whose MONITOR line MATCH (a
# regex) matches; () when none comes within 10 s
sub monitored {
    my ($self, $match, $code) = @_;
    my $pid = open(my $mon, '-|', 'timeout', '10', 'redis-cli', '-p',
                   $self->{env}{ADSERVE_REDIS_PORT}, 'MONITOR')
        or die "redis-cli: $!";
    my $first = <$mon>;                         # "OK": monitoring from now on
    $code->();
    my @args;
    while (my $line = <$mon>) {
        next unless $line =~ $match;
        @args = $line =~ /"((?:[^"\\]|\\.)*)"/g;
        last;
    }
    kill 'TERM', $pid;
    close $mon;
    return @args;
}

# ---- the recommendation history (src/adserve_contract.h: ADSERVE_KEY_HISTORY,
# adserve_history_put and _get): its key, and its 8-byte entries, each a
# little-endian word of the item hash's low 40 bits, the kind (1 viewed) and
# the unix minute modulo 2^23

sub history_key { "adserve:rh2:$_[0]" }

# the contract's hash of an item id (FNV-1a, 64 bits) as a history keeps it,
# as hex
sub history_hash {
    my ($s) = @_;
    no warnings 'portable';
    my $h = 0xcbf29ce484222325;
    { use integer; for (unpack 'C*', $s) { $h ^= $_; $h *= 0x100000001b3 } }
    return sprintf "%010x", $h & ((1 << 40) - 1);
}

# one entry's bytes: ITEM id, KIND ('s' or 'v'), unix TIME
sub history_entry {
    my ($item, $kind, $time) = @_;
    no warnings 'portable';
    return pack 'Q<', hex(history_hash($item)) | ($kind eq 'v' ? 1 << 40 : 0)
                      | ((int($time / 60) % (1 << 23)) << 41);
}

# USER's history in Redis: [hash hex, unix time (the minute's first second),
# kind] each, oldest first; the minute taken nearest to now, as a reader does
sub history {
    my ($self, $user) = @_;
    my $hex = $self->redis('EVAL', "local v = redis.call('GET', KEYS[1]) or '' "
                           . "return (v:gsub('.', function(c) return string.format('%02x', c:byte()) end))",
                           1, history_key($user));
    my $now = int(time / 60);
    return map {
        my $w = unpack 'Q<', pack 'H*', $_;
        my $ago = ($now - ($w >> 41)) % (1 << 23);
        $ago -= 1 << 23 if $ago >= 1 << 22;
        [ sprintf('%010x', $w & ((1 << 40) - 1)), ($now - $ago) * 60, ($w >> 40) & 1 ? 'v' : 's' ]
    } unpack '(A16)*', $hex;
}

# the number of entries in USER's history in Redis
sub history_len { int($_[0]->redis('STRLEN', history_key($_[1])) / 8) }

# ENTRIES (history_entry's) appended to USER's history, as another node would
sub history_append {
    my ($self, $user, @entries) = @_;
    $self->redis('EVAL', "return redis.call('APPEND', KEYS[1], (ARGV[1]:gsub('..', function(h) "
                 . "return string.char(tonumber(h, 16)) end)))", 1, history_key($user),
                 join '', map { unpack 'H*', $_ } @entries);
}

# true while Redis answers no PING within 0.1 s (a script holds it)
sub redis_stalled {
    my ($self) = @_;
    return system('timeout', '0.1', 'redis-cli', '-p', $self->{env}{ADSERVE_REDIS_PORT}, 'PING') != 0;
}

my %KIND = map { $_ => "adserve:$_" }
    qw(ad_units placements orders line_items creatives licas coview_pools);

# put KIND => {record}, ...: writes records, their change log entries and
# the revision bump in one transaction, as the sidecar does (README, Redis
# data contract); returns the new revision
sub put {
    my ($self, @pairs) = @_;
    my @cmds;
    while (my ($kind, $rec) = splice @pairs, 0, 2) {
        die "unknown kind $kind" unless $KIND{$kind};
        push @cmds, ['HSET', $KIND{$kind}, $rec->{id}, $JSON->encode($rec)], _logged($kind, $rec->{id});
    }
    return $self->transaction(@cmds);
}

sub del {
    my ($self, @pairs) = @_;
    my @cmds;
    while (my ($kind, $id) = splice @pairs, 0, 2) {
        push @cmds, ['HDEL', $KIND{$kind}, $id], _logged($kind, $id);
    }
    return $self->transaction(@cmds);
}

sub _logged {
    my ($kind, $id) = @_;
    return ['XADD', 'adserve:changes', 'MAXLEN', '~', '100000', '*', kind => $kind, id => $id];
}

sub transaction {
    my ($self, @cmds) = @_;
    my $in = join '', map { _resp(@$_) } ['MULTI'], @cmds, ['INCR', 'adserve:rev'], ['EXEC'];
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $self->{env}{ADSERVE_REDIS_PORT}, Timeout => 10)
        or die "redis: $!";
    print $sock $in;
    shutdown $sock, 1;
    IO::Select->new($sock)->can_read(10) or die 'redis transaction: no answer in 10 s';
    local $/;
    my $out = <$sock>;
    die "redis transaction failed: $out" if $out =~ /^-/m;
    my ($rev) = $out =~ /:(\d+)\r\n\z/;
    return $rev;
}

sub _resp {
    my @a = @_;
    return "*" . @a . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @a);
}

sub uuid {
    my @h = map { sprintf '%04x', int rand 65536 } 1 .. 8;
    $h[3] = sprintf '4%03x', hex($h[3]) & 0xfff;
    $h[4] = sprintf '%04x', (hex($h[4]) & 0x3fff) | 0x8000;
    return "$h[0]$h[1]-$h[2]-$h[3]-$h[4]-$h[5]$h[6]$h[7]";
}

# chain(unit => {...}, order => {...}, line_item => {...}, creative => {...},
#       lica => {...}): writes one servable chain, ad unit <- line item of an
# APPROVED order <- ACTIVE LICA -> APPROVED creative; the hashes override
# fields. Returns the ids and the revision.
sub chain {
    my ($self, %o) = @_;
    my ($id, $rec) = chain_records(%o);
    my %skip = map { $_ => 1 } @{ $o{skip} // [] };
    $id->{rev} = $self->put(map { $skip{$_} ? () : ($_ => $rec->{$_}) }
                            qw(ad_units orders line_items creatives licas));
    $id->{records} = $rec;
    return $id;
}

# chain_records(%o): chain's ids and records, unwritten
sub chain_records {
    my (%o) = @_;
    my %id = map { $_ => $o{$_}{id} // uuid() } qw(unit order line_item creative lica);
    my %rec = (
        ad_units => { id => $id{unit}, status => 'ACTIVE',
                      display => { w => 300, h => 250 }, %{ $o{unit} // {} } },
        orders => { id => $id{order}, status => 'APPROVED', %{ $o{order} // {} } },
        line_items => { id => $id{line_item}, order_id => $id{order}, status => 'ACTIVE',
                        type => 'STANDARD', cost_type => 'CPM', rate => 1.5, priority => 8,
                        targeting => { ad_units => { include => [ $id{unit} ] } },
                        %{ $o{line_item} // {} } },
        creatives => { id => $id{creative}, approval => 'APPROVED', type => 'IMAGE',
                       w => 300, h => 250, image_url => "https://cdn.example/$id{creative}.png",
                       landing_url => 'https://advertiser.example/landing',
                       %{ $o{creative} // {} } },
        licas => { id => $id{lica}, line_item_id => $id{line_item},
                   creative_id => $id{creative}, status => 'ACTIVE', weight => 1,
                   %{ $o{lica} // {} } },
    );
    return (\%id, \%rec);
}

# unlogged_chains(N): N chains as a writer outside the contract writes them
# (HSETs, no change log entries: only a full load finds them). Returns the
# chains' ids and the commands, for transaction().
sub unlogged_chains {
    my ($self, $n) = @_;
    my (@ids, @cmds);
    for (1 .. $n) {
        my ($id, $rec) = chain_records();
        push @ids, $id;
        push @cmds, map { ['HSET', "adserve:$_", $rec->{$_}{id}, $JSON->encode($rec->{$_})] }
                    qw(ad_units orders line_items creatives licas);
    }
    return (\@ids, @cmds);
}

# own_creative_misses(CHAINS, N): of N chains drawn at random, how many do
# not serve their own creative (chain's image URL)
sub own_creative_misses {
    my ($self, $chains, $n) = @_;
    return scalar grep {
        my $img = $self->ad($_->{unit})->{json}{ad}{display}{banner}{img} // '';
        $img ne "https://cdn.example/$_->{creative}.png"
    } @$chains[map { int rand @$chains } 1 .. $n];
}

# the node's builder's status (undef while a worker does not answer)
sub builder {
    my ($self) = @_;
    my $all = $self->worker_status or return undef;
    my @b = grep { $_->{zone}{role} eq 'builder' } values %$all;
    return @b == 1 ? $b[0] : undef;
}

# ---- waiting ------------------------------------------------------------

sub wait_until {
    my ($self, $secs, $cond) = @_;
    my $end = time + $secs;
    while (time < $end) {
        return 1 if $cond->();
        sleep 0.02;
    }
    return $cond->();
}

# pid => status of every worker (each status request is a new connection,
# so over a few tries every worker answers); undef if one never did
sub worker_status {
    my ($self) = @_;
    my %seen;
    my @workers = $self->workers;
    for (1 .. 20 * @workers) {
        my $s = $self->status or next;
        $seen{ $s->{pid} } = $s;
        return \%seen if @workers == grep { $seen{$_} } @workers;
    }
    return undef;
}

# true when every worker is on revision REV or later
sub workers_at {
    my ($self, $rev) = @_;
    my $all = $self->worker_status or return 0;
    return !grep { $_->{rev} < $rev } values %$all;
}

# true when every worker has its Redis connection up
sub workers_connected {
    my ($self) = @_;
    my $all = $self->worker_status or return 0;
    return !grep { $_->{redis} ne 'up' } values %$all;
}

# Stops the stack; true when the sidecar's sanitizers reported anything, or
# a rule it accepted does not compile.
# redis_server NAME [args => [...]] [conf => TEXT] [sentinel => 1]: one
# more Redis of this stack (a replica, a sentinel), daemonized on a free
# port in $var/NAME, with the extra arguments (or a config file of TEXT,
# and --sentinel); its port. Killed when the stack shuts down: with KILL,
# since a Redis told to stop saves first, and with the stack's folder gone
# by then it would refuse to exit.
sub redis_server {
    my ($self, $name, %o) = @_;
    my $dir = "$self->{var}/$name";
    my $port = free_port();
    mkdir $dir or die "mkdir $dir: $!";
    my @conf;
    if (defined $o{conf}) {
        open my $fh, '>', "$dir/redis.conf" or die "$dir/redis.conf: $!";
        print $fh $o{conf};
        close $fh;
        @conf = ("$dir/redis.conf", $o{sentinel} ? '--sentinel' : ());
    }
    system('redis-server', @conf, '--port', $port, '--bind', '127.0.0.1', '--dir', $dir,
           '--daemonize', 'yes', '--pidfile', "$dir/redis.pid", '--logfile', "$dir/redis.log",
           @{ $o{args} // [] }) == 0 or die "redis-server ($name)";
    push @{ $self->{extra_pidfiles} }, "$dir/redis.pid";
    return $port;
}

sub shutdown {
    my ($self) = @_;
    return 0 if $$ != $self->{owner};
    for my $file (@{ delete $self->{extra_pidfiles} // [] }) {
        open my $fh, '<', $file or next;
        chomp(my $pid = <$fh> // '');
        kill 'KILL', $pid if $pid;
    }
    return 0 if !%{ $self->{running} // {} };
    my $refused = $self->{running}{redis} ? $self->targeting_report : 0;
    eval { $self->script('stop') };
    delete $self->{running};
    return $self->sanitizer_report + $refused;
}

# Every line item the API wrote in this stack (it has created_by; fixtures
# put straight into Redis do not) goes through serving's own targeting
# compiler (build/t/tools/targeting-check): a rule the sidecar accepts
# must always compile. True, with the refusals printed, when one did not.
sub targeting_report {
    my ($self) = @_;
    my $tool = "$ROOT/build/t/tools/targeting-check";
    my @rules;
    for my $rec (split /\n/, $self->redis('HVALS', 'adserve:line_items')) {
        my $li = eval { $JSON->decode($rec) } or next;
        push @rules, $JSON->encode($li->{targeting}) if $li->{created_by} && exists $li->{targeting};
    }
    return 0 unless @rules;
    my $in = $self->var . '/accepted-targeting.jsonl';
    open my $fh, '>', $in or die "$in: $!";
    print $fh "$_\n" for @rules;
    close $fh;
    my $out = -x $tool ? qx{"$tool" < "$in" 2>&1} : "not ok - $tool is not built\n";
    my @bad = grep { /^not ok/ } split /\n/, $out;
    return 0 unless @bad || $? != 0;
    print STDERR "# rules the sidecar accepted that serving's compiler refuses:\n",
        map { "#   $_\n" } @bad[0 .. ($#bad < 20 ? $#bad : 20)];
    return 1;
}

# ---- browser tests -------------------------------------------------------

# seed_demo: scripts/demo on this stack (the demo publisher, made through the
# API); the demo page's URL
sub seed_demo {
    my ($self) = @_;
    my $url = (split /\n/, $self->script('demo'))[-1];
    # scripts/demo saw one worker serve it; the browser may reach the other
    $self->wait_until(10, sub { $self->workers_at($self->revision) })
        or die 'the demo is not loaded by every worker';
    return $url;
}

# answering(TAGID => [STATUS, BODY], ...): a copy of nginx.conf.in whose
# ad server answers these serving requests itself, with CORS as the module
# does: answers the module never gives (a fault to inject), for
# new(template => ...)
sub answering {
    my (%answer) = @_;
    return with_locations(join '', map { <<"NGINX" } sort keys %answer);
        location = /app/v0/ad/$_ {
            default_type application/json;
            add_header Access-Control-Allow-Origin * always;
            return $answer{$_}[0] '$answer{$_}[1]';
        }
NGINX
}

# with_locations(TEXT): a copy of nginx.conf.in whose ad server has the
# locations of TEXT too
sub with_locations {
    my ($text) = @_;
    return conf_edited(sub {
        $_[0] =~ s{(include \@CONF\@/adserve-locations\.conf;\n)}{$1$text\n}
            or die 'nginx.conf.in has no include of adserve-locations.conf';
    });
}

# with_directive(NAME, VALUE): a copy of nginx.conf.in whose directive NAME
# (there already) has VALUE
sub with_directive {
    my ($name, $value) = @_;
    return conf_edited(sub {
        $_[0] =~ s/^(\s*\Q$name\E) [^;]+;/$1 $value;/m or die "nginx.conf.in has no $name line";
    });
}

# conf_edited(CODE): a copy of nginx.conf.in, its text edited in place by
# CODE (given it as $_[0]), for new(template => ...)
sub conf_edited {
    my ($edit) = @_;
    open my $in, '<', "$ROOT/lua-free-conf/nginx.conf.in" or die "nginx.conf.in: $!";
    my $conf = do { local $/; <$in> };
    $edit->($conf);
    my ($fh, $path) = tempfile('adserve-conf-XXXXXX', TMPDIR => 1, UNLINK => 1);
    print $fh $conf;
    close $fh or die "$path: $!";
    return $path;
}

# browser(SCRIPT, NAME => VALUE...): runs t/js/SCRIPT, Playwright driving
# Debian's chromium against this stack, with the stack's addresses and first
# admin in its environment. Its TAP is the test file's. Screenshots go to
# build/test-output/<test file>/, kept after the run. Returns node's exit
# status, for exit().
sub browser {
    my ($self, $script, %env) = @_;
    (my $name = basename($0)) =~ s/\.t$//;
    my $out = "$ROOT/build/test-output/$name";
    make_path($out);
    my ($email, $password) = $self->admin;
    my @workers = $self->workers;
    local %ENV = (%ENV, ADSERVE_BASE => $self->base, ADSERVE_VAR => $self->var,
                  ADSERVE_ADMIN_EMAIL => $email, ADSERVE_ADMIN_PASSWORD => $password,
                  ADSERVE_REDIS_PORT => $self->{env}{ADSERVE_REDIS_PORT},
                  ADSERVE_WORKERS => scalar @workers, TEST_OUT => $out, %env);
    system 'node', "$ROOT/t/js/$script";
    return $? == -1 ? 255 : $? & 127 ? 128 + ($? & 127) : $? >> 8;
}

# After the sidecar stopped (LeakSanitizer reports at exit): any sanitizer
# report in its log fails the test file, whatever the tests said.
sub sanitizer_report {
    my ($self) = @_;
    my $log = $self->log_text('sidecar.log');
    return 0 unless $log =~ /==\d+==ERROR: \w+Sanitizer|runtime error: /;
    print STDERR "# the sidecar's sanitizers reported:\n",
        map { "#   $_\n" } grep { defined && length } (split /\n/, $log)[0 .. 40];
    print STDERR "# (whole log: ", $self->var, "/log/sidecar.log; ADSERVE_TEST_KEEP=1 keeps it)\n";
    return 1;
}

# A test file's `my $t` is destroyed when the main program ends, before the
# END blocks, and perl resets $? in between: the report is counted here and
# turned into a failing exit status by the END block above.
sub DESTROY {
    local $?;
    $SANITIZER_REPORTS += $_[0]->shutdown;
}

1;
