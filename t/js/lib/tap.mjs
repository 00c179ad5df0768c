// TAP, the protocol prove reads, for the browser tests: the same report as
// the Perl tests' Test::More, with no test framework to install.

export function tap() {
    let count = 0;
    let failed = 0;

    function result(pass, name, diag) {
        count++;
        if (!pass) {
            failed++;
        }
        console.log(`${pass ? 'ok' : 'not ok'} ${count} - ${name}`);
        if (!pass && diag) {
            console.log(diag.split('\n').map((line) => `#   ${line}`).join('\n'));
        }
        return pass;
    }

    const show = (v) => JSON.stringify(v) ?? String(v);

    return {
        ok: (value, name, diag) => result(!!value, name, diag),
        is: (got, want, name) =>
            result(Object.is(got, want), name, `got:      ${show(got)}\nexpected: ${show(want)}`),
        isDeep: (got, want, name) =>
            result(show(got) === show(want), name, `got:      ${show(got)}\nexpected: ${show(want)}`),
        like: (got, re, name) => result(re.test(String(got)), name, `got:      ${show(got)}\nexpected: ${re}`),
        cmp: (got, op, want, name) => {
            const pass = { '<': got < want, '<=': got <= want, '>': got > want, '>=': got >= want }[op];
            return result(pass, name, `${show(got)} ${op} ${show(want)} does not hold`);
        },
        skip: (name, why) => {
            count++;
            console.log(`ok ${count} - ${name} # skip ${why}`);
        },
        note: (msg) => console.log(`# ${msg}`),
        // the plan, last; a failure or an error sets the exit status
        done: (error) => {
            if (error) {
                result(false, 'the test ran to its end', String(error.stack || error));
            }
            console.log(`1..${count}`);
            process.exitCode = failed ? 1 : 0;
        },
    };
}
