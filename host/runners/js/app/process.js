// `process`, as much of Node's as a sandboxed script uses: argv, env (the
// grant's `[env]` only), exit codes, cwd, the output streams, nextTick.
// `process.exit(code)` ends the script at once: it throws an ExitRequest
// the runner catches (a `catch` in the script that swallows it is the
// script's choice; the code is kept and the runner exits with it).

import { stderr, stdout } from './console.js';

export class ExitRequest extends Error {
  constructor(code) {
    super(`process.exit(${code})`);
    this.name = 'ExitRequest';
    this.code = code;
  }
}

export const process = {
  argv: ['js'],
  env: {},
  exitCode: undefined,
  /** The code process.exit was called with, once it was. */
  exitRequested: undefined,
  platform: 'wasi',
  arch: 'wasm32',
  version: 'v0.0.0-sbx',
  versions: {},
  pid: 1,
  stdout,
  stderr,
  cwd: () => '/',
  exit(code) {
    const c = Number(code ?? process.exitCode ?? 0) | 0;
    process.exitRequested = c;
    throw new ExitRequest(c);
  },
  nextTick: (f, ...args) => queueMicrotask(() => f(...args)),
  hrtime: Object.assign(
    (prev) => {
      const ns = BigInt(Math.round(performance.now() * 1e6));
      const t = [Number(ns / 1000000000n), Number(ns % 1000000000n)];
      return prev ? [t[0] - prev[0], t[1] - prev[1]] : t;
    },
    { bigint: () => BigInt(Math.round(performance.now() * 1e6)) },
  ),
  memoryUsage: () => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0 }),
  on: () => process,
  once: () => process,
  off: () => process,
  emitWarning: (w) => stderr.write(`Warning: ${w}\n`),
};
