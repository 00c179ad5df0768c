// Makes sdk/demo/assets/demo.webm: a 3-second, 640x360 video spot ("Trail
// Runner X" on a green gradient, with a progress bar growing left to right
// so that each second looks different) for the demo page's video ad and the
// Chromium tests.
//
// Why: a real creative is megabytes; this one is a few KB, so it can live in
// the repository. The same Debian chromium the tests use draws and encodes
// it (a canvas, captureStream, MediaRecorder): no ffmpeg, no downloaded media.
//
// The file is then fixed up in Node: Chromium stamps each frame with the
// moment it was captured, so the first frame lasts as long as the recorder
// took to start (100-300 ms) and the others jitter by a vsync; the frames
// are re-timed in place to an even 3000 ms / frames apart, and the Segment
// Info's Duration is set to 3000 ms (Chromium 156 writes one: its last
// frame's time, 3.1-3.3 s). Older
// Chromium wrote "live" WebM with no Duration at all, which a <video> reads
// as Infinity until it has played through; for such a file the Duration
// element is inserted (insertDuration). Either way the script loads the
// result in a <video> and fails unless loadedmetadata gives 640x360 and a
// duration of 3 s.
//
// Run (from anywhere; playwright-core is resolved from t/js/node_modules,
// which scripts/test-tools installs):
//   node scripts/demo-video.mjs [out.webm]
// out.webm defaults to sdk/demo/assets/demo.webm in the repository;
// CHROMIUM names the browser (default /usr/bin/chromium).

import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const SECONDS = 3;
const FPS = 25;
// VP9, not VP8: for this picture Chromium's VP8 encoder spends ~360 bytes
// a frame at 20-40 kbit/s and drops frames below (19-30 KB in all), VP9
// 40-100 bytes a frame at 10 kbit/s (8-9 KB); browsers that play WebM play VP9
const MIME = 'video/webm;codecs=vp9';
const BITS_PER_SECOND = 10000;

const say = (msg) => process.stderr.write(`==> demo-video: ${msg}\n`);

// --- in the page -------------------------------------------------------------

// Draws and records the spot; returns the recording, base64. Frame n of the
// 75 is drawn at n * 40 ms after the recorder started: the canvas changes
// only then, so the capture takes a frame per redraw (73-75 in all: a redraw
// that comes a vsync, 33 ms, after the last capture may be passed over).
async function record({ seconds, fps, mime, bps }) {
    const W = 640, H = 360;
    const canvas = document.createElement('canvas');
    canvas.width = W;
    canvas.height = H;
    document.body.appendChild(canvas);
    const ctx = canvas.getContext('2d', { alpha: false });  // with alpha, each VP8/9 frame carries a second, alpha one

    const bg = ctx.createLinearGradient(0, 0, W, H);
    bg.addColorStop(0, '#0f3d2e');
    bg.addColorStop(0.6, '#1f6b45');
    bg.addColorStop(1, '#5f9e5a');

    function draw(t) {                                  // t: 0..1 through the spot
        ctx.fillStyle = bg;
        ctx.fillRect(0, 0, W, H);
        ctx.textAlign = 'center';
        ctx.textBaseline = 'middle';
        ctx.fillStyle = '#ffffff';
        ctx.font = 'bold 64px sans-serif';
        ctx.fillText('Trail Runner X', W / 2, 150);
        ctx.fillStyle = '#d9f2dc';
        ctx.font = '28px sans-serif';
        ctx.fillText('3-second demo spot', W / 2, 220);
        ctx.fillStyle = 'rgba(255,255,255,0.25)';      // the bar's track, then the bar
        ctx.fillRect(80, 290, W - 160, 16);
        ctx.fillStyle = '#f2c14e';
        ctx.fillRect(80, 290, Math.round((W - 160) * t), 16);
    }

    if (!MediaRecorder.isTypeSupported(mime)) {
        throw new Error(`MediaRecorder cannot record ${mime}`);
    }
    const frames = seconds * fps;
    draw(0);
    const rec = new MediaRecorder(canvas.captureStream(fps), { mimeType: mime, videoBitsPerSecond: bps });
    const chunks = [];
    rec.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
    const started = new Promise((resolve) => { rec.onstart = resolve; });
    const stopped = new Promise((resolve) => { rec.onstop = resolve; });
    rec.start();
    await started;

    const t0 = performance.now();
    let drawn = 0;
    await new Promise((resolve) => {
        (function tick() {
            const n = Math.floor((performance.now() - t0) * fps / 1000);
            if (n >= frames) {
                resolve();
                return;
            }
            if (n > drawn) {
                drawn = n;
                draw(n / (frames - 1));
            }
            requestAnimationFrame(tick);
        })();
    });
    rec.stop();
    await stopped;

    const url = await new Promise((resolve) => {
        const r = new FileReader();
        r.onload = () => resolve(r.result);
        r.readAsDataURL(new Blob(chunks, { type: 'video/webm' }));
    });
    return url.slice(url.indexOf(',') + 1);
}

// Loads a file (base64) in a <video>: its size and duration at loadedmetadata.
async function probe(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const video = document.createElement('video');
    video.muted = true;
    video.src = URL.createObjectURL(new Blob([bytes], { type: 'video/webm' }));
    await new Promise((resolve, reject) => {
        video.onloadedmetadata = resolve;
        video.onerror = () => reject(new Error(`<video> error ${video.error && video.error.code}`));
    });
    const out = { duration: video.duration, width: video.videoWidth, height: video.videoHeight };
    URL.revokeObjectURL(video.src);
    return out;
}

// --- in Node: the WebM's EBML -------------------------------------------------
//
// EBML (RFC 8794), WebM's container: every element is an ID, a size, then
// its data. Both are variable-length integers whose first byte's leading
// zero bits count the bytes after it: IDs keep that marker bit (Segment is
// 0x18538067), sizes drop it, and a size of all ones means "unknown" (how a
// live recorder writes its Segment and Clusters). A Cluster holds a Timecode
// and blocks; each block starts with its track number (a vint) and a signed
// 16-bit time relative to the Cluster's. Times are in TimecodeScale ns
// (1 ms unless the Info says otherwise). Duration is a float in those units.

const ID = {
    Segment: 0x18538067, SeekHead: 0x114d9b74, Info: 0x1549a966, TimecodeScale: 0x2ad7b1,
    Duration: 0x4489, Cluster: 0x1f43b675, Timecode: 0xe7, SimpleBlock: 0xa3,
    BlockGroup: 0xa0, Block: 0xa1, Cues: 0x1c53bb6b,
};
// elements that can only sit in the Segment: they end a Cluster of unknown size
const TOP = new Set([ID.SeekHead, ID.Info, 0x1654ae6b, ID.Cluster, ID.Cues, 0x1941a469, 0x1043a770, 0x1254c367]);

function vint(buf, pos, keepMarker) {
    const first = buf[pos];
    const len = Math.clz32(first) - 23;                 // leading zeros of the byte, plus one
    if (len > 8) throw new Error(`bad EBML number at byte ${pos}`);
    let value = keepMarker ? first : first & (0xff >> len);
    let ones = value === 0xff >> len;
    for (let i = 1; i < len; i++) {
        value = value * 256 + buf[pos + i];
        ones &&= buf[pos + i] === 0xff;
    }
    return { value, len, unknown: !keepMarker && ones };
}

// the element at pos: its ID, where it starts, where its data starts, and
// its size (null if unknown)
function element(buf, pos) {
    const id = vint(buf, pos, true);
    const size = vint(buf, pos + id.len, false);
    return { id: id.value, start: pos, data: pos + id.len + size.len, size: size.unknown ? null : size.value };
}

function children(buf, el) {
    const out = [];
    for (let p = el.data; p < el.data + el.size; p = out[out.length - 1].data + out[out.length - 1].size) {
        out.push(element(buf, p));
    }
    return out;
}

const uint = (buf, el) => buf.subarray(el.data, el.data + el.size).reduce((v, b) => v * 256 + b, 0);

// The Segment, its children other than Clusters, and every block: where
// its 16-bit time is, and its time (Cluster Timecode plus that).
function scan(buf) {
    let pos = 0, seg;
    do {                                                // the EBML header, then the Segment
        seg = element(buf, pos);
        pos = seg.data + seg.size;
    } while (seg.id !== ID.Segment && pos < buf.length);
    if (seg.id !== ID.Segment) throw new Error('no Segment');
    const end = seg.size === null ? buf.length : seg.data + seg.size;
    const top = [], blocks = [];
    pos = seg.data;
    while (pos < end) {
        const el = element(buf, pos);
        if (el.id !== ID.Cluster) {
            if (el.size === null) throw new Error(`element 0x${el.id.toString(16)} of unknown size`);
            top.push(el);
            pos = el.data + el.size;
            continue;
        }
        const stop = el.size === null ? end : el.data + el.size;
        let timecode = 0;
        for (pos = el.data; pos < stop;) {
            const c = element(buf, pos);
            if (el.size === null && TOP.has(c.id)) break;   // the next Cluster, the Cues...
            if (c.id === ID.Timecode) timecode = uint(buf, c);
            const found = c.id === ID.SimpleBlock ? [c]
                : c.id === ID.BlockGroup ? children(buf, c).filter((b) => b.id === ID.Block) : [];
            for (const b of found) {
                const at = b.data + vint(buf, b.data, false).len;
                blocks.push({ at, cluster: timecode, time: timecode + buf.readInt16BE(at) });
            }
            pos = c.data + c.size;
        }
    }
    const info = top.find((e) => e.id === ID.Info);
    if (!info) throw new Error('no Segment Info');
    return { seg, top, info, blocks };
}

// Re-times the blocks (one video track, in order) evenly over `ticks`:
// block k at round(k * ticks / count). Only the 16-bit times change.
export function retime(buf, ticks) {
    const { blocks } = scan(buf);
    blocks.forEach((b, k) => {
        const rel = Math.round(k * ticks / blocks.length) - b.cluster;
        if (rel < 0 || rel > 32767) throw new Error(`block ${k}: ${rel} is no time in its Cluster`);
        buf.writeInt16BE(rel, b.at);
    });
    return blocks.length;
}

// Sets the Segment Info's Duration to `ticks`: in place if it has one,
// inserted (insertDuration) if not.
export function setDuration(buf, ticks) {
    const { info } = scan(buf);
    const d = children(buf, info).find((e) => e.id === ID.Duration);
    if (!d) return insertDuration(buf, ticks);
    if (d.size === 4) buf.writeFloatBE(ticks, d.data);
    else if (d.size === 8) buf.writeDoubleBE(ticks, d.data);
    else throw new Error(`a Duration of ${d.size} bytes`);
    return buf;
}

// A live recording's Info lacks Duration: a new buffer with one appended to
// the Info (ID 0x4489, size 8, float64), and the Info's size rewritten as
// an 8-byte vint. Everything after it moves by the bytes added, which is
// only safe when nothing records a position or the Segment's size: no
// SeekHead, no Cues, a Segment of unknown size (what such a file has).
export function insertDuration(buf, ticks) {
    const { seg, top, info } = scan(buf);
    if (seg.size !== null || top.some((e) => e.id === ID.SeekHead || e.id === ID.Cues)) {
        throw new Error('no Duration, and a SeekHead, Cues or a sized Segment: not patched');
    }
    const duration = Buffer.alloc(11);
    duration.writeUInt16BE(ID.Duration, 0);
    duration[2] = 0x88;                                 // size 8, as a 1-byte vint
    duration.writeDoubleBE(ticks, 3);
    const head = Buffer.alloc(12);                      // the Info's ID and its new size
    head.writeUInt32BE(ID.Info, 0);
    head.writeBigUInt64BE(BigInt(info.size + duration.length) | (1n << 56n), 4);
    return Buffer.concat([buf.subarray(0, info.start), head, buf.subarray(info.data, info.data + info.size),
                          duration, buf.subarray(info.data + info.size)]);
}

// nanoseconds per tick
export function timecodeScale(buf) {
    const el = children(buf, scan(buf).info).find((e) => e.id === ID.TimecodeScale);
    return el ? uint(buf, el) : 1e6;
}

// --- main -----------------------------------------------------------------------

async function main() {
    const out = path.resolve(process.argv[2] || path.join(ROOT, 'sdk/demo/assets/demo.webm'));
    const { chromium } = createRequire(path.join(ROOT, 't/js/package.json'))('playwright-core');
    const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        chromiumSandbox: false,
        headless: true,
        args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync',
               '--disable-background-networking', '--disable-component-update'],
    });
    try {
        const page = await browser.newPage();
        await page.goto('about:blank');
        say(`recording ${SECONDS} s of a 640x360 canvas, ${FPS} fps, ${MIME} at ${BITS_PER_SECOND} bit/s`);
        let file = Buffer.from(await page.evaluate(record,
            { seconds: SECONDS, fps: FPS, mime: MIME, bps: BITS_PER_SECOND }), 'base64');
        const raw = await page.evaluate(probe, file.toString('base64'));
        const { blocks } = scan(file);
        say(`recorded ${file.length} bytes, ${blocks.length} frames from 0 to ${blocks[blocks.length - 1].time} ms; `
            + `a <video> reads duration ${raw.duration}`);

        const ticks = SECONDS * 1e9 / timecodeScale(file);
        const frames = retime(file, ticks);
        file = setDuration(file, ticks);
        const got = await page.evaluate(probe, file.toString('base64'));
        say(`re-timed ${frames} frames over ${SECONDS} s, Duration ${SECONDS} s: `
            + `${got.width}x${got.height}, duration ${got.duration} at loadedmetadata`);
        if (got.width !== 640 || got.height !== 360 || Math.abs(got.duration - SECONDS) > 0.001) {
            throw new Error('the fixed-up file does not read as 640x360 and 3 s');
        }
        writeFileSync(out, file);
        say(`wrote ${out}: ${file.length} bytes`);
    } finally {
        await browser.close();
    }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
    await main();
}
