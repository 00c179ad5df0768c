# adserve.js's contract in Debian's chromium (t/js/sdk-api.mjs): how nginx
# serves the file and its size, the request it sends, the command queue,
# input checks, refresh and destroy, sizing, timeouts, the page's
# visibility, answers it cannot use, and the script loaded twice. On the demo
# page of scripts/demo.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Adserve::Test;

# Answers the module never gives, for the SDK's checks of an answer: a 200
# whose body is null, an ad whose id is an object, and javascript: URLs for
# the image and for the click
my $t = Adserve::Test->new(template => Adserve::Test::answering(
    'answer-null' => [ 200, 'null' ],
    'answer-odd'  => [ 200, '{"version":"0.1.0","ad":{"id":{"toString":0},"display":{"w":300,'
                          . '"h":250,"banner":{"img":"http://127.0.0.1/x.png"}}},"ext":{}}' ],
    'answer-js'   => [ 200, '{"version":"0.1.0","ad":{"id":"j","display":{"w":300,"h":250,'
                          . '"banner":{"img":"javascript:alert(1)"}}},"ext":{}}' ],
    'answer-jsclick' => [ 200, '{"version":"0.1.0","ad":{"id":"k","click_url":"javascript:alert(2)",'
                             . '"display":{"w":300,"h":250,"banner":{"img":"http://127.0.0.1/x.png"}}},"ext":{}}' ]));
exit $t->browser('sdk-api.mjs', DEMO_URL => $t->seed_demo);
