// The JavaScript runner's entry: `wasi:cli/run`. The host hands the script
// as arguments (`-c SOURCE NAME ARGS...`); the runner strips TypeScript
// (for NAME ending in .ts, .mts, .cts) and turns ES module syntax into calls
// of its own `require` with sucrase, inside the guest (no parser runs in
// the host on guest input; types are removed, never checked), then
// evaluates it as the body of an async function, so top-level `await`
// works; it ends when that has settled and no timer is left (timers.js).
// Its exit code: 0, the code given to process.exit, or 1 after an uncaught
// error, printed with its stack as node prints it and reported to the host
// (its name, message and the script's line: the run report's `error`). WASI
// 0.2 passes only success or failure, so the runner tells the host the code
// before it exits.
//
// Everything above `run` is evaluated while the component is built and
// kept in its snapshot (componentize-js pre-initialises with wizer), so a
// run starts with sucrase and these modules already compiled.

import { transform } from 'sucrase';
import { Buffer } from './buffer.js';
import { console } from './console.js';
import { SbxDenied, SbxToolError } from './errors.js';
import { Headers, Response, fetch } from './fetch.js';
import { inspect } from './inspect.js';
import { require, sbx } from './modules.js';
import { ExitRequest, process } from './process.js';
import { tools } from './tools.js';
import * as timers from './timers.js';
import { exitCode, getArguments, getEnvironment, getRandomBytes, scriptFailed } from './wasi.js';

const TYPESCRIPT = /\.(ts|mts|cts)$/;

// Math.random from a generator seeded by wasi:random at the run's start:
// not the seed the snapshot was built with (every run would repeat it), and
// under --deterministic the host's seeded randomness, so a replay repeats.
function seedRandom() {
  const s = new Uint32Array(new Uint8Array(getRandomBytes(16n)).buffer);
  let [a, b, c, d] = s;
  Math.random = () => {
    // sfc32
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

function install(name, args) {
  process.argv = ['js', `/${name}`, ...args];
  process.env = Object.fromEntries(getEnvironment());
  Object.assign(globalThis, {
    Buffer,
    console,
    fetch,
    Headers,
    Response,
    tools,
    sbx,
    SbxDenied,
    SbxToolError,
    process,
    require,
  });
  seedRandom();
}

// The wrapper's start, on the script's first line (so line numbers are the
// script's); a first-line column is this much further right.
// Strict, as ES modules and TypeScript's output are: an assignment the
// runtime refuses (to tools, say) throws instead of failing silently.
const WRAP_START = '(async (module, exports) => {"use strict";';

/** The script as the body of an async function, for an indirect eval. */
export function prepare(source, name) {
  const transforms = TYPESCRIPT.test(name) ? ['typescript', 'imports'] : ['imports'];
  // Without import/export syntax there is nothing for the imports
  // transform to do in a .js file: skip the parse.
  const plain = transforms.length === 1 && !/\b(import|export)\b/.test(source);
  const code = plain
    ? source
    : transform(source, { transforms, filePath: name, disableESTransforms: true, production: true }).code;
  // On the first line, so the script's line numbers are the stack's.
  const safeName = name.replace(/[\r\n]/g, '_');
  return `${WRAP_START}${code}\n})({ exports: {} }, {});\n//# sourceURL=${safeName}\n`;
}

function report(e) {
  tellHost(e);
  if (e instanceof SbxDenied) {
    console.error(`Uncaught SbxDenied: ${e.violation}: ${e.reason}\n${stackOf(e)}`.trimEnd());
  } else if (e instanceof Error) {
    console.error(`Uncaught ${e.name}: ${e.message}\n${stackOf(e)}`.trimEnd());
  } else {
    console.error(`Uncaught ${inspect(e)}`);
  }
}

// The script's frames only (the runner's are noise to its author), in
// node's form: `at fn (agent.ts:3:5)`. SpiderMonkey's is `fn@agent.ts:3:5`.
let script = { name: '', lines: 0 };

function stackOf(e) {
  return scriptFrames(e)
    .slice(0, 10) // node's Error.stackTraceLimit
    .map(({ fn, where }) => (fn ? `    at ${fn} (${where})` : `    at ${where}`))
    .join('\n');
}

/** The script's own frames of `e`'s stack, innermost first. */
function scriptFrames(e) {
  const frames = typeof e.stack === 'string' ? e.stack.trimEnd().split('\n') : [];
  const out = [];
  for (const f of frames) {
    const at = f.lastIndexOf(`@${script.name}:`);
    if (at < 0) continue;
    let where = f.slice(at + 1);
    const [line, col] = where.split(':').slice(-2).map(Number);
    // The line after the script's last is the runner's wrapper.
    if (line > script.lines) continue;
    if (line === 1 && col > WRAP_START.length) where = `${script.name}:1:${col - WRAP_START.length}`;
    out.push({ fn: f.slice(0, at), where, line });
  }
  return out;
}

/** Tell the host which error the script ended on (a courtesy: never throws). */
function tellHost(e) {
  try {
    const error = e instanceof Error;
    const kind = error ? String(e.name) : typeof e;
    const message = error ? String(e.message) : inspect(e);
    // The innermost frame in the script itself; a syntax error's own line.
    let line = error ? scriptFrames(e)[0]?.line : undefined;
    if (line === undefined && error && e.fileName === script.name && Number.isInteger(e.lineNumber)) {
      line = e.lineNumber;
    }
    if (!(line >= 0 && line < 2 ** 32)) line = undefined;
    scriptFailed({ kind, message, line });
  } catch {
    // The report is a courtesy: the error is still printed and exits 1.
  }
}

/** The exit code for an error that ended the script, reported as node does. */
function failure(e) {
  if (e instanceof ExitRequest || process.exitRequested !== undefined) return process.exitRequested ?? e.code;
  report(e);
  return 1;
}

async function main() {
  const argv = getArguments();
  if (argv.length < 4 || argv[1] !== '-c') {
    console.error('usage: the sbx JavaScript runner takes -c SOURCE NAME [ARGS...]');
    return 2;
  }
  const [, , source, name, ...args] = argv;
  install(name, args);
  script = { name: name.replace(/[\r\n]/g, '_'), lines: source.split('\n').length };
  // Whichever ends the script first: its top level and then its timers,
  // an error thrown by a timer's callback, or nothing left to wait for.
  const end = Promise.withResolvers();
  let topSettled = false;
  const stop = (code) => {
    timers.stopAll();
    end.resolve(code);
  };
  timers.install({
    empty() {
      if (topSettled) return;
      console.error(`Warning: Detected unsettled top-level await in ${script.name}: nothing is left that could settle it`);
      stop(13);
    },
    thrown: (e) => stop(failure(e)),
  });
  let top;
  try {
    top = (0, eval)(prepare(source, name));
  } catch (e) {
    // A syntax error (sucrase's, or the engine's for a plain script).
    timers.stopAll();
    return failure(e);
  }
  const done = top.then(
    async () => {
      topSettled = true;
      await timers.drained();
      return process.exitRequested ?? process.exitCode ?? 0;
    },
    (e) => {
      topSettled = true;
      timers.stopAll();
      return failure(e);
    },
  );
  return Promise.race([done, end.promise]);
}

export const run = {
  async run() {
    const code = await main();
    if (code !== 0) {
      // WASI 0.2 carries only failure: the host hears the code from here.
      try {
        exitCode(code | 0);
      } catch {
        // A courtesy: the run still fails.
      }
      throw new Error(`exit code ${code}`);
    }
  },
};
