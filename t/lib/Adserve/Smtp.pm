package Adserve::Smtp;

# A real SMTP sink for the tests: Debian's aiosmtpd (python3-aiosmtpd) on a
# free port, writing each mail it accepts into a Maildir.
#
#   my $smtp = Adserve::Smtp->new;
#   $t->env->{ADSERVE_SMTP_URL} = $smtp->url;
#   my ($mail) = $smtp->wait_for(sub { $_->{to} eq 'a@example.com' });
#   $mail->{headers}{subject}, $mail->{body}
#
# The sink stops when the object goes away.

use strict;
use warnings;

use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(sleep time);
use Adserve::Test;

# aiosmtpd is a Debian package: the system's Python, not one on PATH
our $PYTHON = $ENV{ADSERVE_TEST_PYTHON} // '/usr/bin/python3';

sub new {
    my ($class) = @_;
    my $dir = tempdir('adserve-smtp-XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{ADSERVE_TEST_KEEP});
    my $port = Adserve::Test::free_port();
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/aiosmtpd.log";
        open STDERR, '>&', \*STDOUT;
        chdir $dir;
        exec $PYTHON, '-m', 'aiosmtpd', '-n', '-l', "127.0.0.1:$port",
             '-c', 'aiosmtpd.handlers.Mailbox', "$dir/Maildir"
            or POSIX::_exit(127);
    }
    my $self = bless { dir => $dir, port => $port, pid => $pid, owner => $$ }, $class;
    my $end = time + 15;
    until (IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)) {
        die "aiosmtpd did not start on port $port:\n" . $self->log if time > $end
            || waitpid($pid, POSIX::WNOHANG()) == $pid;
        sleep 0.05;
    }
    return $self;
}

sub url  { 'smtp://127.0.0.1:' . $_[0]{port} }
sub port { $_[0]{port} }

sub log {
    my ($self) = @_;
    open my $fh, '<', "$self->{dir}/aiosmtpd.log" or return '';
    local $/;
    return <$fh> // '';
}

# Where a mail comes in the sink's order: Python's Maildir names a file
# SECONDS.MMICROSECONDSPpidQcount.host, the count rising with each mail of
# the process (the microseconds are not zero-padded: no string order).
sub order {
    my ($file) = @_;
    my ($count) = $file =~ m{/\d+\.M\d+P\d+Q(\d+)\.[^/]*$} or die "not a Maildir name: $file";
    return $count;
}

# Every mail so far, oldest first: {to, from, headers => {lower-case
# name => value}, body} (line ends normalised to \n).
sub mails {
    my ($self) = @_;
    my @files = map { glob "$self->{dir}/Maildir/$_/*" } qw(new cur);
    my @mails;
    for my $f (sort { order($a) <=> order($b) } @files) {
        open my $fh, '<', $f or next;
        local $/;
        my $raw = <$fh>;
        $raw =~ s/\r\n/\n/g;
        my ($head, $body) = split /\n\n/, $raw, 2;
        $head =~ s/\n[ \t]+/ /g;          # unfold
        my %h;
        for (split /\n/, $head) {
            my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
            $h{ lc $k } //= $v;
        }
        my ($to) = ($h{'x-rcptto'} // $h{to} // '') =~ /<?([^<>\s,]+@[^<>\s,]+)>?/;
        my ($from) = ($h{'x-mailfrom'} // $h{from} // '') =~ /<?([^<>\s,]+@[^<>\s,]+)>?/;
        push @mails, { to => $to // '', from => $from // '', headers => \%h,
                       body => $body // '', file => $f };
    }
    return @mails;
}

# wait_for(COND [, SECONDS]): the mails matching COND (on $_), waiting up
# to SECONDS (10) for at least one
sub wait_for {
    my ($self, $cond, $secs) = @_;
    my $end = time + ($secs // 10);
    while (1) {
        my @m = grep { $cond->() } $self->mails;
        return @m if @m || time > $end;
        sleep 0.05;
    }
}

sub stop {
    my ($self) = @_;
    return if !$self->{pid} || $$ != $self->{owner};
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    delete $self->{pid};
}

sub DESTROY { local $?; $_[0]->stop }

1;
