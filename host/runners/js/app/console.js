// console and process.stdout/stderr, written straight to the WASI streams
// as the script writes (no buffer to lose at a halt; the host charges each
// write to the output budget). log/info/debug go to stdout, error/warn/
// trace to stderr, as under node.

import { getStderr, getStdout } from './wasi.js';
import { formatArgs, inspect } from './inspect.js';

const encoder = new TextEncoder();
// WASI's blocking-write-and-flush takes at most 4096 bytes a call.
const CHUNK = 4096;
let out;
let err;

function write(which, data) {
  const bytes = typeof data === 'string' ? encoder.encode(data) : data;
  const stream = which === 1 ? (out ??= getStdout()) : (err ??= getStderr());
  for (let i = 0; i < bytes.length; i += CHUNK) {
    stream.blockingWriteAndFlush(bytes.subarray(i, i + CHUNK));
  }
}

export const stdout = { write: (s) => (write(1, s), true), isTTY: false, fd: 1 };
export const stderr = { write: (s) => (write(2, s), true), isTTY: false, fd: 2 };

let groupIndent = '';
const counts = new Map();
const timers = new Map();

function line(which, args) {
  let text = formatArgs(args);
  if (groupIndent) text = text.split('\n').map((l) => groupIndent + l).join('\n');
  write(which, `${text}\n`);
}

export const console = {
  log: (...a) => line(1, a),
  info: (...a) => line(1, a),
  debug: (...a) => line(1, a),
  error: (...a) => line(2, a),
  warn: (...a) => line(2, a),
  trace: (...a) => line(2, [`Trace: ${formatArgs(a)}\n${new Error().stack ?? ''}`.trimEnd()]),
  dir: (v) => line(1, [inspect(v)]),
  table: (v) => line(1, [v]),
  assert: (ok, ...a) => {
    if (!ok) line(2, a.length ? [`Assertion failed: ${formatArgs(a)}`] : ['Assertion failed']);
  },
  group: (...a) => {
    if (a.length) line(1, a);
    groupIndent += '  ';
  },
  groupEnd: () => {
    groupIndent = groupIndent.slice(2);
  },
  count: (label = 'default') => {
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    line(1, [`${label}: ${n}`]);
  },
  countReset: (label = 'default') => counts.delete(label),
  time: (label = 'default') => timers.set(label, performance.now()),
  timeLog: (label = 'default', ...a) => {
    const t = timers.get(label);
    if (t !== undefined) line(1, [`${label}: ${(performance.now() - t).toFixed(3)}ms`, ...a]);
  },
  timeEnd: (label = 'default') => {
    const t = timers.get(label);
    if (t === undefined) return;
    timers.delete(label);
    line(1, [`${label}: ${(performance.now() - t).toFixed(3)}ms`]);
  },
};
console.groupCollapsed = console.group;
