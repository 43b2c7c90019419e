// An independent check of a Chrome trace (Trace Event Format JSON) written by torch::profiler
// (`Profile::export_chrome_trace`, the mnist example's `--profile PATH`): the trace is read by
// Chrome DevTools' own trace engine, the Performance panel's parser (npm
// `@paulirish/trace_engine`, pinned to 0.0.65 because its API is unstable; see "Trace parsers"
// in NOTES.md beside this file).
//
// It fails unless the engine parses the trace; its thread tracks hold slices, named as required
// (below), that nest; every fwdbwd flow binds a forward slice to a backward slice of the same
// sequence number; and, when the trace says `profile_memory: 1`, `[memory]` instants lie on
// thread tracks and `C` counter events are present.
//
// Run (tested with Node 20), from the repository root:
//
//   npm install --prefix target/trace-engine --no-audit --no-fund @paulirish/trace_engine@0.0.65
//   node torch/tests/profiler/check_trace.mjs target/mnist_trace.json
//   # PyTorch's own (trimmed) trace, which has no DataLoader, steps or counters:
//   node torch/tests/profiler/check_trace.mjs --require 'aten::*' --require '*Backward0' \
//       --require 'Optimizer.step#*' --no-counters torch/tests/profiler/data/trace.json
//
// The engine is loaded from $TRACE_ENGINE_DIR (the `npm install --prefix` directory, the one
// holding node_modules) or, when that is unset, from target/trace-engine at the repository root
// (found from this file's location). Options:
//
//   --require GLOB   a slice name that must occur (`*` matches any run of characters);
//                    repeatable, and the first one replaces the defaults, which suit the mnist
//                    trace: 'aten::*', '*Backward0', 'Optimizer.step#*',
//                    'enumerate(DataLoader)#*', 'ProfilerStep#*'
//   --no-require     no slice names are required
//   --min-flows N    fwdbwd flows the engine must link (default 1)
//   --no-counters    no `C` counter events needed with profile_memory (PyTorch's own traces
//                    have none; torch::profiler writes "Memory (CPU)" counters beside `[memory]`)
//
// Exit status 0 with a one-line summary when every check passes, 1 with the failed checks listed
// when one fails, 2 on bad usage or when the engine is not installed.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ENGINE_VERSION = '0.0.65';
const DEFAULT_REQUIRED = ['aten::*', '*Backward0', 'Optimizer.step#*', 'enumerate(DataLoader)#*', 'ProfilerStep#*'];

function usage(msg) {
    console.error(`check_trace: ${msg}`);
    console.error('usage: node check_trace.mjs [--require GLOB]... [--no-require] [--min-flows N] [--no-counters] TRACE.json');
    process.exit(2);
}

// ---- arguments ----
let file = null;
let required = null;
let minFlows = 1;
let counterEvents = true;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--require') (required ??= []).push(value());
    else if (a.startsWith('--require=')) (required ??= []).push(a.slice('--require='.length));
    else if (a === '--no-require') required = [];
    else if (a === '--no-counters') counterEvents = false;
    else if (a === '--min-flows' || a.startsWith('--min-flows=')) {
        const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : value();
        minFlows = Number(v);
        if (!Number.isInteger(minFlows) || minFlows < 0) usage(`--min-flows: not a count: ${v}`);
    } else if (a === '-h' || a === '--help') usage('checks a Chrome trace with Chrome DevTools\' trace engine');
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else if (file === null) file = a;
    else usage(`one trace file only (got ${file} and ${a})`);
}
if (file === null) usage('no trace file given');
required ??= DEFAULT_REQUIRED;

// ---- the engine ----
const here = path.dirname(fileURLToPath(import.meta.url));
const engineDir = path.resolve(process.env.TRACE_ENGINE_DIR || path.join(here, '..', '..', '..', 'target', 'trace-engine'));
const pkgDir = path.join(engineDir, 'node_modules', '@paulirish', 'trace_engine');
let installed;
try {
    installed = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
} catch {
    console.error(`check_trace: Chrome DevTools' trace engine not found under ${engineDir}`);
    console.error(`  install it: npm install --prefix ${engineDir} --no-audit --no-fund @paulirish/trace_engine@${ENGINE_VERSION}`);
    console.error('  (or point TRACE_ENGINE_DIR at the directory holding its node_modules)');
    process.exit(2);
}
if (installed !== ENGINE_VERSION) {
    console.error(`check_trace: ${pkgDir} is version ${installed}, this check is written for ${ENGINE_VERSION} (the API is unstable)`);
    console.error(`  reinstall: npm install --prefix ${engineDir} --no-audit --no-fund @paulirish/trace_engine@${ENGINE_VERSION}`);
    process.exit(2);
}
// The engine is browser code; in Node it needs DOMRect (its README says so), nothing else for
// these traces.
globalThis.DOMRect ??= class DOMRect {
    constructor(x = 0, y = 0, width = 0, height = 0) {
        Object.assign(this, { x, y, width, height, top: y, left: x, right: x + width, bottom: y + height });
    }
};
const Trace = await import(pathToFileURL(path.join(pkgDir, 'models', 'trace', 'trace.js')).href);

// ---- checks ----
const failures = [];
const fail = (msg) => failures.push(msg);
function finish(summary) {
    if (failures.length) {
        for (const f of failures) console.error(`check_trace: FAIL: ${f}`);
        console.error(`check_trace: ${file}: ${failures.length} check(s) failed`);
        process.exit(1);
    }
    console.log(`check_trace: OK ${file}: ${summary}`);
    process.exit(0);
}
const globRe = (g) => new RegExp(`^${g.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
const show = (e) => `${e.name} (pid ${e.pid}, tid ${e.tid}, ts ${e.ts}, dur ${e.dur})`;

let doc;
try {
    let buf = fs.readFileSync(file);
    if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
    doc = JSON.parse(buf.toString('utf8'));
} catch (e) {
    fail(`cannot read ${file} as JSON: ${e.message}`);
    finish();
}
const events = Array.isArray(doc) ? doc : doc?.traceEvents;
if (!Array.isArray(events) || events.length === 0) {
    fail('no traceEvents array (or it is empty)');
    finish();
}

// The engine is lenient about field types (a string ts passes), so they are checked here: every
// event an object with a phase, and every timed one a numeric ts (and X a duration >= 0).
const num = (v) => typeof v === 'number' && Number.isFinite(v);
const malformed = events.filter((e) => e === null || typeof e !== 'object' || typeof e.ph !== 'string'
    || (e.ph !== 'M' && !num(e.ts)) || (e.ph === 'X' && !(num(e.dur) && e.dur >= 0)));
if (malformed.length) {
    fail(`${malformed.length} event(s) are not objects with a ph, a numeric ts (and for X a duration >= 0), `
        + `first: ${JSON.stringify(malformed[0])}`);
    finish();
}

// The engine reads a copy with two rewrites; the original events are kept for the checks that
// read the JSON itself.
// 1. DevTools binds a flow event to the slice with the same (ts, pid, tid, cat)
//    (models/trace/handlers/FlowsHandler.js), while PyTorch's and our flows have cat "fwdbwd" and
//    their slices cat "cpu_op"; Perfetto and the legacy trace viewer bind by enclosing slice and
//    ignore the cat. So the fwdbwd flows get the slices' cat "cpu_op" here, the only way this
//    engine links them.
// 2. The engine keeps only phase "I" instants on thread tracks, not the equivalent "i" that
//    PyTorch writes for `[memory]` events; those become "I" so that they must land on a thread.
const copy = events.map((e) => {
    if (e === null || typeof e !== 'object') return e;
    if (e.cat === 'fwdbwd' && (e.ph === 's' || e.ph === 't' || e.ph === 'f')) return { ...e, cat: 'cpu_op' };
    if (e.ph === 'i' && e.name === '[memory]') return { ...e, ph: 'I' };
    return e;
});

let parsed;
try {
    const model = Trace.TraceModel.Model.createWithAllHandlers();
    await model.parse(copy);
    parsed = model.parsedTrace();
    if (!parsed?.data) throw new Error('the engine returned no parsed trace');
} catch (e) {
    const where = String(e?.stack ?? '').split('\n').find((l) => l.trim().startsWith('at ')) ?? '';
    fail(`Chrome DevTools' trace engine could not parse the trace: ${e?.message ?? e} ${where.trim()}`);
    finish();
}
const data = parsed.data;
if (!data.Meta.traceIsGeneric) {
    fail('the engine took this for a Chrome browser trace, not a generic one');
}

// Slices per thread, from the engine's renderer model (thread tracks with their slice trees).
const slices = [];
const memoryOnThreads = [];
let threadsWithSlices = 0;
const processes = new Set();
for (const [pid, proc] of data.Renderer.processes) {
    for (const [tid, thread] of proc.threads) {
        const xs = thread.entries.filter((e) => e.ph === 'X');
        memoryOnThreads.push(...thread.entries.filter((e) => e.ph === 'I' && e.name === '[memory]'));
        if (xs.length === 0) continue;
        threadsWithSlices++;
        processes.add(pid);
        slices.push(...xs);

        // Nesting: the engine builds each thread's tree (TreeHelpers.treify) and silently leaves
        // out a slice that starts inside another and ends after it; every slice must be in it.
        const dropped = xs.filter((e) => !data.Renderer.entryToNode.has(e));
        if (dropped.length) {
            fail(`${dropped.length} slice(s) on thread ${tid} of process ${pid} overlap a slice they start in `
                + `instead of nesting in it (left out of the engine's tree), first: ${show(dropped[0])}`);
        }
        // The same in integer nanoseconds (ts and dur are microseconds with three decimals), to name
        // the enclosing slice.
        const ns = (x) => Math.round(x * 1000);
        const byStart = [...xs].sort((a, b) => ns(a.ts) - ns(b.ts) || ns(b.dur ?? 0) - ns(a.dur ?? 0));
        const stack = [];
        let reported = 0;
        for (const e of byStart) {
            const start = ns(e.ts);
            const end = start + ns(e.dur ?? 0);
            while (stack.length && start >= stack.at(-1).end) stack.pop();
            if (stack.length && end > stack.at(-1).end) {
                if (reported++ < 3) fail(`slice ${show(e)} ends after the slice it starts in, ${show(stack.at(-1).e)}`);
                continue;
            }
            stack.push({ e, end });
        }
    }
}
if (slices.length === 0) fail('the engine found no slices on any thread');

for (const g of required) {
    const re = globRe(g);
    if (!slices.some((e) => re.test(e.name))) fail(`no slice named like '${g}'`);
}

// fwdbwd flows: those the trace declares (a start and a finish with one id) against those the
// engine linked to a slice at each end.
const declared = new Map();
for (const e of events) {
    if (e?.cat === 'fwdbwd' && (e.ph === 's' || e.ph === 'f')) {
        const d = declared.get(e.id) ?? {};
        d[e.ph] = e;
        declared.set(e.id, d);
    }
}
const pairs = [...declared.values()].filter((d) => d.s && d.f).length;
const unpaired = declared.size - pairs;
if (unpaired) fail(`${unpaired} fwdbwd flow id(s) have a start without a finish or the reverse`);
const linked = data.Flows.flows.filter((f) => f.every((e) => e.ph === 'X' && e.cat === 'cpu_op'));
for (const f of linked) {
    const [a, b] = [f[0], f.at(-1)];
    if (f.length !== 2) fail(`a fwdbwd flow binds ${f.length} slices: ${f.map(show).join(' -> ')}`);
    if (!(a.ts < b.ts)) fail(`fwdbwd flow goes back in time: ${show(a)} -> ${show(b)}`);
    const sa = a.args?.['Sequence number'];
    const sb = b.args?.['Sequence number'];
    if (sa === undefined || sa !== sb) {
        fail(`fwdbwd flow joins slices of different sequence numbers (${sa}, ${sb}): ${show(a)} -> ${show(b)}`);
    }
}
if (linked.length !== pairs) {
    fail(`the trace declares ${pairs} fwdbwd flow(s), the engine bound ${linked.length} to a slice at both ends `
        + '(a flow binds to the slice on its pid and tid that starts at its ts)');
}
if (linked.length < minFlows) fail(`${linked.length} fwdbwd flow(s) linked, at least ${minFlows} wanted`);

// Memory: with profile_memory, `[memory]` instants on thread tracks and `C` counter events. The
// engine has no model of generic counters (its counter handling is for Chrome's own), so those
// are checked in the JSON.
const memoryJson = events.filter((e) => e?.name === '[memory]' && (e.ph === 'i' || e.ph === 'I'));
const counters = events.filter((e) => e?.ph === 'C');
if (doc?.profile_memory === 1 || doc?.profile_memory === true) {
    if (memoryJson.length === 0) fail('profile_memory is 1 but there is no [memory] instant event');
    if (counterEvents && counters.length === 0) fail('profile_memory is 1 but there is no C (counter) event');
}
if (memoryOnThreads.length !== memoryJson.length) {
    fail(`${memoryJson.length} [memory] events in the trace, ${memoryOnThreads.length} on the engine's thread tracks`);
}
const badMemory = memoryJson.filter((e) => !num(e.args?.Bytes) || !num(e.args?.['Total Allocated']));
if (badMemory.length) fail(`${badMemory.length} [memory] event(s) without numeric Bytes and Total Allocated, first at ts ${badMemory[0].ts}`);
const badCounters = counters.filter((e) => !e.name || !num(e.ts) || !e.args || !Object.values(e.args).every(num) || !Object.keys(e.args).length);
if (badCounters.length) fail(`${badCounters.length} C event(s) without a name, a ts or numeric args, first: ${JSON.stringify(badCounters[0])}`);

finish(`${slices.length} slices on ${threadsWithSlices} thread track(s) of ${processes.size} process(es), `
    + `${linked.length} fwdbwd flows linked, ${memoryJson.length} [memory] events, ${counters.length} counter events`);
