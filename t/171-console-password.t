# The console's forgot/reset password pages in Debian's chromium
# (t/js/console-password.mjs): "Forgot password?" asks for the mail, which
# a real SMTP sink (aiosmtpd) receives; its link opens the console's reset
# page, which sets the new password; the new one signs in, the old one not.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;
use Adserve::Smtp;

system("$FindBin::Bin/../scripts/build-console") == 0 or die 'scripts/build-console failed';
my $smtp = Adserve::Smtp->new;
my $t = Adserve::Test->new(components => ['redis']);
$t->env->{ADSERVE_SMTP_URL} = $smtp->url;
$t->start('sidecar', 'nginx');

exit $t->browser('console-password.mjs', SMTP_MAILDIR => "$smtp->{dir}/Maildir");
