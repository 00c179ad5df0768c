package Adserve::Load;

# A small load generator that behaves like a browser: keep-alive
# connections, and one retry only when a reused connection turns out to be
# closed before any byte of the response came back (the race that HTTP/1.1
# keep-alive has by design, which browsers absorb the same way). Any other
# failure counts: a refused or reset fresh connection, a status other than
# the expected ones, a short read.
#
#   my $load = Adserve::Load->start(port => $p, path => ..., body => ...,
#                                   procs => 4, seconds => 4);
#   ... disturb the server ...
#   my $r = $load->finish;  # {requests, ok, failed, retried, statuses => {...}}

use strict;
use warnings;
use Errno ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(time);

sub start {
    my ($class, %o) = @_;
    my @kids;
    for my $n (1 .. ($o{procs} // 4)) {
        pipe my $r, my $w or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            close $r;
            my $res = _run(%o);
            print $w encode_json($res);
            close $w;
            exit 0;
        }
        close $w;
        push @kids, [$pid, $r];
    }
    return bless { kids => \@kids }, $class;
}

sub finish {
    my ($self) = @_;
    my %total = (requests => 0, ok => 0, failed => 0, retried => 0, statuses => {},
                 errors => []);
    for my $k (@{ $self->{kids} }) {
        my ($pid, $r) = @$k;
        my $json = do { local $/; <$r> };
        waitpid $pid, 0;
        my $res = eval { decode_json($json) } || { failed => 1, errors => ['a load process died'] };
        $total{$_} += $res->{$_} // 0 for qw(requests ok failed retried);
        $total{statuses}{$_} += $res->{statuses}{$_} for keys %{ $res->{statuses} // {} };
        push @{ $total{errors} }, @{ $res->{errors} // [] };
    }
    splice @{ $total{errors} }, 5 if @{ $total{errors} } > 5;
    return \%total;
}

sub _run {
    my %o = @_;
    my %ok = map { $_ => 1 } @{ $o{ok} // [200] };
    my $req = "POST $o{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            . "Content-Type: application/json\r\nContent-Length: " . length($o{body})
            . "\r\n\r\n$o{body}";
    my %res = (requests => 0, ok => 0, failed => 0, retried => 0, statuses => {}, errors => []);
    my $end = time + ($o{seconds} // 4);
    my ($sock, $used);

    while (time < $end) {
        my $retry = 0;
        ATTEMPT: {
            if (!$sock) {
                $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $o{port},
                                              Timeout => 5);
                $used = 0;
                if (!$sock) {
                    _fail(\%res, "connect: $!");
                    last ATTEMPT;
                }
            }
            my ($status, $err, $got_any) = _exchange($sock, $req);
            if (!defined $status) {
                close $sock;
                undef $sock;
                if ($used && !$got_any && !$retry) {
                    $retry = 1;
                    $res{retried}++;
                    redo ATTEMPT;
                }
                _fail(\%res, $err);
                last ATTEMPT;
            }
            $used = 1;
            $res{requests}++;
            $res{statuses}{$status}++;
            if ($ok{$status}) { $res{ok}++ } else { _fail(\%res, "status $status") }
        }
    }
    close $sock if $sock;
    return \%res;
}

sub _fail {
    my ($res, $why) = @_;
    $res->{failed}++;
    push @{ $res->{errors} }, $why if @{ $res->{errors} } < 5;
}

# sysread, but a server silent for 10 s is an error, not a hang
sub _read {
    my ($sock, undef, $len, $off) = @_;
    IO::Select->new($sock)->can_read(10) or do { $! = Errno::ETIMEDOUT; return undef };
    return sysread($sock, $_[1], $len, $off);
}

# one request/response; (status) or (undef, error, whether any byte came)
sub _exchange {
    my ($sock, $req) = @_;
    defined syswrite($sock, $req) or return (undef, "write: $!", 0);
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        my $n = _read($sock, $buf, 16384, length $buf);
        return (undef, defined $n ? 'closed before the headers' : "read: $!", length $buf) if !$n;
    }
    my ($head, $rest) = split /\r\n\r\n/, $buf, 2;
    my ($status) = $head =~ m{^HTTP/1\.1 (\d{3})} or return (undef, 'not HTTP', 1);
    my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
    $len //= 0;
    while (length $rest < $len) {
        my $n = _read($sock, $rest, $len - length $rest, length $rest);
        return (undef, defined $n ? 'short body' : "read: $!", 1) if !$n;
    }
    return ($status);
}

1;
