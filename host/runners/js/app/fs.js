// A small `fs` with Node's names over the granted mounts (sbx:agent/fs):
// every call is one gated op (fs_read, fs_write, fs_list, fs_stat,
// fs_remove, fs_mkdir), checked, performed and recorded by the host. A
// refusal throws (or rejects with) SbxDenied naming the violation
// (fs_read_denied, fs_write_denied, path_traversal); a failure of an
// allowed op is an Error with a Node-style `code` (ENOENT, ...).
// Relative paths are taken from process.cwd() ("/").

import { Buffer, decode } from './buffer.js';
import { gated, text } from './errors.js';
import { fsList, fsMkdir, fsRead, fsRemove, fsStat, fsWrite } from './wasi.js';

const encoder = new TextEncoder();

function codeOf(message) {
  const m = message.toLowerCase();
  if (m.includes('not found') || m.includes('no such')) return 'ENOENT';
  if (m.includes('exists')) return 'EEXIST';
  if (m.includes('not a directory') || m.includes('not a folder')) return 'ENOTDIR';
  if (m.includes('is a directory') || m.includes('is a folder')) return 'EISDIR';
  if (m.includes('not empty')) return 'ENOTEMPTY';
  return 'EIO';
}

function failure(syscall, path) {
  return (message) => {
    const code = codeOf(message);
    const e = new Error(`${code}: ${message}, ${syscall} '${path}'`);
    e.code = code;
    e.syscall = syscall;
    e.path = path;
    return e;
  };
}

function abs(path) {
  const p = path instanceof URL ? path.pathname : text(path, 'path');
  return p.startsWith('/') ? p : `/${p}`;
}

function encodingOf(options) {
  return typeof options === 'string' ? options : options?.encoding ?? null;
}

function contentOf(data) {
  if (typeof data === 'string') return encoder.encode(data);
  if (data instanceof Uint8Array) return data;
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new TypeError('fs: data must be a string or bytes');
}

// What a path holds, as node's Stats and Dirent tell it.
class Kind {
  isFile() {
    return this.kind === 'file';
  }

  isDirectory() {
    return this.kind === 'dir';
  }

  isSymbolicLink() {
    return this.kind === 'symlink';
  }
}

class Stats extends Kind {
  constructor(m) {
    super();
    this.size = Number(m.size);
    this.kind = m.kind;
    this.writable = m.writable;
  }
}

class Dirent extends Kind {
  constructor(name, kind) {
    super();
    this.name = name;
    this.kind = kind;
  }
}

export function readFileSync(path, options) {
  const p = abs(path);
  const bytes = gated(() => fsRead(p), failure('open', p));
  const encoding = encodingOf(options);
  return encoding ? decode(bytes, encoding) : Buffer.from(bytes);
}

export function writeFileSync(path, data) {
  const p = abs(path);
  gated(() => fsWrite(p, contentOf(data)), failure('open', p));
}

/** Appending reads the file and writes it whole again (two ops). */
export function appendFileSync(path, data) {
  const p = abs(path);
  let old = new Uint8Array();
  try {
    old = readFileSync(p);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  const add = contentOf(data);
  const both = new Uint8Array(old.length + add.length);
  both.set(old);
  both.set(add, old.length);
  writeFileSync(p, both);
}

export function readdirSync(path, options) {
  const p = abs(path);
  const entries = gated(() => fsList(p), failure('scandir', p));
  return options?.withFileTypes ? entries.map((e) => new Dirent(e.name, e.kind)) : entries.map((e) => e.name);
}

export function statSync(path) {
  const p = abs(path);
  return new Stats(gated(() => fsStat(p), failure('stat', p)));
}

export const lstatSync = statSync;

export function existsSync(path) {
  try {
    statSync(path);
    return true;
  } catch (e) {
    // A refusal is not "absent": the script is told, as it would be for any other op.
    if (e.name === 'SbxDenied') throw e;
    return false;
  }
}

export function mkdirSync(path) {
  const p = abs(path);
  gated(() => fsMkdir(p), failure('mkdir', p));
}

export function rmSync(path, options = {}) {
  const p = abs(path);
  let st;
  try {
    st = statSync(p);
  } catch (e) {
    if (options.force && e.code === 'ENOENT') return;
    throw e;
  }
  if (st.isDirectory() && options.recursive) {
    for (const name of readdirSync(p)) rmSync(`${p.replace(/\/$/, '')}/${name}`, options);
  }
  gated(() => fsRemove(p), failure('rm', p));
}

export const unlinkSync = (path) => rmSync(path);
export const rmdirSync = (path, options) => rmSync(path, options);

export function accessSync(path) {
  statSync(path);
}

const promised = (f) => async (...args) => f(...args);

export const promises = {
  readFile: promised(readFileSync),
  writeFile: promised(writeFileSync),
  appendFile: promised(appendFileSync),
  readdir: promised(readdirSync),
  stat: promised(statSync),
  lstat: promised(statSync),
  mkdir: promised(mkdirSync),
  rm: promised(rmSync),
  unlink: promised(unlinkSync),
  rmdir: promised(rmdirSync),
  access: promised(accessSync),
};

// Node's callback forms: the callback is called later, with (error) or
// (null, result).
const callback = (f) => (...args) => {
  const cb = args.pop();
  if (typeof cb !== 'function') throw new TypeError('fs: the last argument must be a callback (or use fs.promises)');
  queueMicrotask(() => {
    let result;
    try {
      result = f(...args);
    } catch (e) {
      cb(e);
      return;
    }
    cb(null, result);
  });
};

const sync = {
  readFileSync,
  writeFileSync,
  appendFileSync,
  readdirSync,
  statSync,
  lstatSync,
  existsSync,
  mkdirSync,
  rmSync,
  unlinkSync,
  rmdirSync,
  accessSync,
};

export const fs = { ...sync, promises };
for (const [name, f] of Object.entries(sync)) {
  if (name !== 'existsSync') fs[name.slice(0, -4)] = callback(f);
}
