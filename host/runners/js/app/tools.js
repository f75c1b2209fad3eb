// Host tools as functions, and the run's key-value store.
//
// `tools.NAME(args)` calls the tool NAME on the grant's allow-list with
// `args` as JSON (a string is passed as it is) and resolves to its output,
// parsed as JSON when it is JSON, else the text. A tool off the list
// rejects with SbxDenied (`tool_denied`); a tool that failed, with
// SbxToolError. `tools` is a Proxy over nothing: no property a
// script sets on it or on Object.prototype can change which tool a name
// reaches, and `then` is never a tool (so `await tools` is `tools`).
// `tools` itself cannot be changed.

import { SbxToolError, gated, text } from './errors.js';
import { kvDelete, kvGet, kvList, kvPut, toolCall, toolsDefinitions, toolsGranted } from './wasi.js';

function parse(output) {
  try {
    return JSON.parse(output);
  } catch {
    return output;
  }
}

/** Call tool `name` with `args`; its output, parsed when it is JSON. */
export async function callTool(name, args = {}) {
  text(name, 'a tool name');
  const input = typeof args === 'string' ? args : JSON.stringify(args ?? {});
  if (input === undefined) throw new TypeError(`tool ${name}: its arguments cannot be written as JSON`);
  return parse(gated(() => toolCall(name, input), (m) => new SbxToolError(name, m)));
}

/** The names of the tools a call can reach (allowed and provided by the host). */
export function granted() {
  return toolsGranted();
}

/** What a model is told of each tool `granted()` lists: name, description, inputSchema. */
export function toolDefinitions() {
  return toolsDefinitions().map((d) => ({
    name: d.name,
    description: d.description,
    inputSchema: JSON.parse(d.inputSchema),
  }));
}

const callers = new Map();
// The target stays empty and extensible (the traps refuse every change),
// which the Proxy invariants need for ownKeys to list the granted names.
export const tools = new Proxy(Object.create(null), {
  get(_target, name) {
    if (typeof name !== 'string' || name === 'then') return undefined;
    let f = callers.get(name);
    if (!f) {
      f = Object.freeze((args) => callTool(name, args));
      callers.set(name, f);
    }
    return f;
  },
  has: (_target, name) => typeof name === 'string' && granted().includes(name),
  ownKeys: () => granted(),
  getOwnPropertyDescriptor: (_target, name) =>
    typeof name === 'string' && granted().includes(name)
      ? { value: tools[name], enumerable: true, configurable: true, writable: false }
      : undefined,
  set: () => false,
  defineProperty: () => false,
  deleteProperty: () => false,
  setPrototypeOf: () => false,
  preventExtensions: () => false,
});

const bytes = (v) => (typeof v === 'string' ? new TextEncoder().encode(v) : v);
const kvFailed = (m) => new Error(`kv: ${m}`);

/** The run's key-value store (`[kv]` in the grant); values are bytes (a string is stored as UTF-8). */
export const kv = Object.freeze({
  get: async (key) => gated(() => kvGet(text(key, 'a key')), kvFailed),
  getText: async (key) => new TextDecoder().decode(gated(() => kvGet(text(key, 'a key')), kvFailed)),
  put: async (key, value) => gated(() => kvPut(text(key, 'a key'), bytes(value)), kvFailed),
  delete: async (key) => gated(() => kvDelete(text(key, 'a key')), kvFailed),
  list: async (prefix = '') => gated(() => kvList(text(prefix, 'a prefix')), kvFailed),
});
