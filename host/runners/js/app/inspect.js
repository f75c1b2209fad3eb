// Values as text, in the shape Node's util.inspect gives for the values
// scripts print (so `console.log({ a: 1 })` prints `{ a: 1 }`, as under
// node): depth 2, single quotes inside, one line when it fits in 80
// columns, Map, Set, typed arrays, errors by their stack, cycles named.
// Node's column layout of long arrays is not copied: they go one per line.

import { Buffer } from './buffer.js';

const IDENT = /^[A-Za-z_$][\w$]*$/;
const BREAK = 80;
const MAX_ITEMS = 100;

function quote(s) {
  const q = !s.includes("'") ? "'" : !s.includes('"') ? '"' : !s.includes('`') ? '`' : "'";
  const escaped = s.replace(/[\\\n\r\t\b\f\v\0]|[\x01-\x1f\x7f]/g, (c) => {
    const named = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f', '\v': '\\v', '\0': '\\x00' };
    return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`;
  });
  return q + (q === "'" ? escaped.replace(/'/g, "\\'") : escaped) + q;
}

function key(k) {
  if (typeof k === 'symbol') return `[${k.toString()}]`;
  return IDENT.test(k) ? k : quote(k);
}

function primitive(v) {
  switch (typeof v) {
    case 'string': return quote(v);
    case 'number': return Object.is(v, -0) ? '-0' : String(v);
    case 'bigint': return `${v}n`;
    case 'symbol': return v.toString();
    case 'undefined': return 'undefined';
    case 'boolean': return String(v);
    default: return v === null ? 'null' : undefined;
  }
}

function fnName(f) {
  const src = Function.prototype.toString.call(f);
  if (src.startsWith('class')) return `[class ${f.name || '(anonymous)'}]`;
  return f.name ? `[Function: ${f.name}]` : '[Function (anonymous)]';
}

function className(v) {
  const proto = Object.getPrototypeOf(v);
  if (proto === null) return '[Object: null prototype]';
  const c = proto.constructor;
  return c && typeof c.name === 'string' ? c.name : 'Object';
}

// Lay out `start entries end` on one line if it fits and is shallow, else
// one entry per line.
function join(start, entries, end, indent, nested) {
  if (entries.length === 0) return `${start}${end}`.replace('  ', ' ');
  const total = entries.reduce((n, e) => n + e.length, 0) + entries.length * 2 + start.length;
  if (nested < 3 && total <= BREAK && !entries.some((e) => e.includes('\n'))) {
    return `${start} ${entries.join(', ')} ${end}`;
  }
  const pad = `${indent}  `;
  return `${start}\n${pad}${entries.join(`,\n${pad}`)}\n${indent}${end}`;
}

function errorText(e) {
  const head = `${e.name ?? 'Error'}: ${e.message ?? ''}`;
  const stack = typeof e.stack === 'string' ? e.stack.trimEnd() : '';
  if (!stack) return `[${head}]`;
  // SpiderMonkey's stack lists frames only; Node's starts with the message.
  const frames = stack.split('\n').map((l) => `    at ${l}`).join('\n');
  return stack.startsWith(head) ? stack : `${head}\n${frames}`;
}

function format(v, depth, indent, seen, nestedOut) {
  const p = primitive(v);
  if (p !== undefined) return p;
  if (typeof v === 'function') return fnName(v);
  if (seen.includes(v)) return '[Circular *1]';
  if (v instanceof Error) return errorText(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
  if (v instanceof RegExp) return v.toString();
  if (v instanceof Promise) return 'Promise { <unknown> }';
  const name = className(v);
  if (v instanceof Buffer) {
    const hex = Array.from(v.subarray(0, 50), (b) => b.toString(16).padStart(2, '0')).join(' ');
    const more = v.length > 50 ? ` ... ${v.length - 50} more bytes` : '';
    return `<Buffer${hex ? ` ${hex}` : ''}${more}>`;
  }
  const isArray = Array.isArray(v);
  const typed = ArrayBuffer.isView(v) && !(v instanceof DataView);
  if (depth > 2) {
    if (isArray) return '[Array]';
    return name === 'Object' ? '[Object]' : `[${name}]`;
  }
  const inner = `${indent}  `;
  const sub = { max: 0 };
  const child = (x) => {
    const s = { max: 0 };
    const out = format(x, depth + 1, inner, [...seen, v], s);
    if (x !== null && typeof x === 'object') sub.max = Math.max(sub.max, s.max + 1);
    return out;
  };
  const entries = [];
  let start;
  let end;
  if (v instanceof Map) {
    start = `Map(${v.size}) {`;
    end = '}';
    for (const [k, x] of v) entries.push(`${child(k)} => ${child(x)}`);
  } else if (v instanceof Set) {
    start = `Set(${v.size}) {`;
    end = '}';
    for (const x of v) entries.push(child(x));
  } else if (isArray || typed) {
    start = isArray ? (name === 'Array' ? '[' : `${name}(${v.length}) [`) : `${name}(${v.length}) [`;
    end = ']';
    const n = Math.min(v.length, MAX_ITEMS);
    let holes = 0;
    for (let i = 0; i < n; i++) {
      if (isArray && !(i in v)) {
        holes++;
        continue;
      }
      if (holes) entries.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
      holes = 0;
      entries.push(typed ? primitive(v[i]) : child(v[i]));
    }
    if (holes) entries.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
    if (v.length > n) entries.push(`... ${v.length - n} more item${v.length - n > 1 ? 's' : ''}`);
  } else {
    start = name === 'Object' ? '{' : `${name} {`;
    end = '}';
  }
  if (!typed) {
    for (const k of Reflect.ownKeys(v)) {
      if (isArray && (k === 'length' || (typeof k === 'string' && /^\d+$/.test(k)))) continue;
      const d = Object.getOwnPropertyDescriptor(v, k);
      if (!d || !d.enumerable) continue;
      const val = 'value' in d ? child(d.value) : d.get && d.set ? '[Getter/Setter]' : d.get ? '[Getter]' : '[Setter]';
      entries.push(`${key(k)}: ${val}`);
    }
  }
  nestedOut.max = sub.max;
  return join(start, entries, end, indent, sub.max);
}

/** `v` as Node's util.inspect would print it (default options). */
export function inspect(v) {
  return format(v, 0, '', [], { max: 0 });
}

/** console.log's arguments as one line: printf-style `%s %d %i %f %j %o %O %%` in a
 * leading string, strings as they are, other values inspected. */
export function formatArgs(args) {
  let rest = args;
  let head = '';
  if (typeof args[0] === 'string' && args[0].includes('%')) {
    let i = 1;
    head = args[0].replace(/%[sdifjoOc%]/g, (m) => {
      if (m === '%%') return '%';
      if (i >= args.length) return m;
      const a = args[i++];
      switch (m) {
        case '%s': return typeof a === 'string' ? a : typeof a === 'bigint' ? `${a}n` : a !== null && typeof a === 'object' ? inspect(a) : String(a);
        case '%d': return typeof a === 'bigint' ? `${a}n` : typeof a === 'symbol' ? 'NaN' : String(Number(a));
        case '%i': return typeof a === 'bigint' ? `${a}n` : String(parseInt(a, 10));
        case '%f': return String(parseFloat(a));
        case '%j': try { return JSON.stringify(a); } catch { return '[Circular]'; }
        case '%c': return '';
        default: return inspect(a);
      }
    });
    rest = args.slice(i);
    return [head, ...rest.map((a) => (typeof a === 'string' ? a : inspect(a)))].join(' ');
  }
  return rest.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' ');
}
