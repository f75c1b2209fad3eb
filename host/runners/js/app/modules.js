// The modules a script may import (or require): the runner's own, under
// Node's names where Node has one. There is no package loader: an npm
// package is not here, and importing one fails at once, naming what is.

import { Buffer } from './buffer.js';
import * as errors from './errors.js';
import { fs, promises } from './fs.js';
import { Headers, Response, fetch } from './fetch.js';
import { callTool, granted, kv, toolDefinitions, tools } from './tools.js';
import { formatArgs, inspect } from './inspect.js';
import { process } from './process.js';

function normalize(p) {
  const abs = p.startsWith('/');
  const out = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length && out[out.length - 1] !== '..') out.pop();
      else if (!abs) out.push('..');
    } else out.push(part);
  }
  const s = out.join('/');
  return abs ? `/${s}` : s || '.';
}

const basename = (p, ext) => {
  const b = p.replace(/\/+$/, '').split('/').pop() ?? '';
  return ext && b.endsWith(ext) && b !== ext ? b.slice(0, -ext.length) : b;
};

// POSIX paths, as node:path gives them on Linux.
const path = {
  sep: '/',
  delimiter: ':',
  normalize,
  join: (...parts) => normalize(parts.filter((x) => x !== '').join('/') || '.'),
  resolve: (...parts) => {
    let p = '';
    for (const part of parts) p = part.startsWith('/') ? part : `${p}/${part}`;
    return normalize(p.startsWith('/') ? p : `${process.cwd()}/${p}`);
  },
  isAbsolute: (p) => p.startsWith('/'),
  dirname: (p) => {
    const t = p.replace(/\/+$/, '');
    const i = t.lastIndexOf('/');
    return i < 0 ? '.' : i === 0 ? '/' : t.slice(0, i);
  },
  basename,
  extname: (p) => {
    const b = basename(p);
    const i = b.lastIndexOf('.');
    return i <= 0 ? '' : b.slice(i);
  },
  relative: (from, to) => {
    const a = path.resolve(from).split('/').filter(Boolean);
    const b = path.resolve(to).split('/').filter(Boolean);
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return [...a.slice(i).map(() => '..'), ...b.slice(i)].join('/');
  },
  parse: (p) => {
    const base = basename(p);
    const ext = path.extname(p);
    return { root: p.startsWith('/') ? '/' : '', dir: path.dirname(p), base, ext, name: ext ? base.slice(0, -ext.length) : base };
  },
};
path.posix = path;

const util = {
  inspect,
  format: (...a) => formatArgs(a),
  promisify: (f) => (...args) => new Promise((ok, fail) => f(...args, (e, v) => (e ? fail(e) : ok(v)))),
  isDeepStrictEqual: (a, b) => inspect(a) === inspect(b),
  types: { isPromise: (v) => v instanceof Promise },
};

const nodeCrypto = {
  randomUUID: () => crypto.randomUUID(),
  getRandomValues: (a) => crypto.getRandomValues(a),
  randomBytes: (n) => crypto.getRandomValues(new Uint8Array(n)),
  webcrypto: crypto,
};

/** The runner's own module, `sbx`: the same objects as the globals. */
export const sbx = Object.freeze({
  tools,
  callTool,
  granted,
  toolDefinitions,
  kv,
  fetch,
  Headers,
  Response,
  fs,
  SbxDenied: errors.SbxDenied,
  SbxToolError: errors.SbxToolError,
});

const MODULES = {
  sbx,
  buffer: { Buffer },
  fs,
  'fs/promises': promises,
  path,
  'path/posix': path,
  util,
  process,
  crypto: nodeCrypto,
};

/** `require(name)`, also what the script's `import`s become. */
export function require(name) {
  const bare = typeof name === 'string' && name.startsWith('node:') ? name.slice(5) : name;
  if (typeof bare === 'string' && Object.hasOwn(MODULES, bare)) return MODULES[bare];
  const e = new Error(
    `Cannot find module '${String(name)}': the sbx JavaScript runner has ${Object.keys(MODULES).join(', ')} ` +
      '(also as node:NAME); there is no package loader, so npm packages are not available',
  );
  e.code = 'MODULE_NOT_FOUND';
  throw e;
}
