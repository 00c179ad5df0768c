// Bundles the console (src/main.js and what it imports, the npm libraries of
// package-lock.json among them) into OUT: index.html, and assets/ whose names
// carry the hash of their bytes, so nginx serves them as immutable. Prints
// the JavaScript's size, raw and gzipped at nginx's level (6).
//   node build.mjs OUT

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import * as esbuild from 'esbuild';

const out = path.resolve(process.argv[2] || '../build/console');
const here = path.dirname(new URL(import.meta.url).pathname);
const tmp = `${out}.new`;
fs.rmSync(tmp, { recursive: true, force: true });

const result = await esbuild.build({
    absWorkingDir: here,
    entryPoints: { app: 'src/main.js' },
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    outdir: path.join(tmp, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
    // the libraries' licence comments, in a file beside the bundle
    legalComments: 'linked',
});

const outputs = Object.keys(result.metafile.outputs).map((f) => path.relative(tmp, path.join(here, f)));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
const html = fs.readFileSync(path.join(here, 'src/index.html'), 'utf8')
    .replace('%APP_JS%', js).replace('%APP_CSS%', css);
fs.writeFileSync(path.join(tmp, 'index.html'), html);

// the folder nginx serves is swapped whole: never half old, half new
fs.rmSync(`${out}.old`, { recursive: true, force: true });
if (fs.existsSync(out)) fs.renameSync(out, `${out}.old`);
fs.renameSync(tmp, out);
fs.rmSync(`${out}.old`, { recursive: true, force: true });

const bytes = fs.readFileSync(path.join(out, js));
const gz = zlib.gzipSync(bytes, { level: 6 }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log(`console: ${out}/ (${js}: ${kb(bytes.length)}, ${kb(gz)} gzipped)`);
