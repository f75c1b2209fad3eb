// The global fetch, through the host's egress broker (sbx:agent/net): the
// grant's rules, the resolved-address checks, the pinned dial, redirects
// decided hop by hop, secrets only in their declared header slots. A
// refusal rejects with SbxDenied; a network failure with a TypeError, as
// fetch does in browsers and Node. The Headers and Response here are the
// standard classes' common surface, over what the broker answered.

import { SbxDenied, gated } from './errors.js';
import { netFetch } from './wasi.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class Headers {
  #list = [];

  constructor(init) {
    if (init == null) return;
    const pairs =
      init instanceof Headers ? [...init] : Array.isArray(init) || typeof init[Symbol.iterator] === 'function' ? [...init] : Object.entries(init);
    for (const pair of pairs) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError('Headers: each header must be a [name, value] pair');
      this.append(pair[0], pair[1]);
    }
  }

  append(name, value) {
    this.#list.push([String(name).toLowerCase(), String(value)]);
  }

  set(name, value) {
    this.delete(name);
    this.append(name, value);
  }

  delete(name) {
    const n = String(name).toLowerCase();
    this.#list = this.#list.filter(([k]) => k !== n);
  }

  get(name) {
    const n = String(name).toLowerCase();
    const values = this.#list.filter(([k]) => k === n).map(([, v]) => v);
    return values.length ? values.join(', ') : null;
  }

  has(name) {
    return this.get(name) !== null;
  }

  forEach(f, self) {
    for (const [k, v] of this) f.call(self, v, k, this);
  }

  *entries() {
    const names = [...new Set(this.#list.map(([k]) => k))].sort();
    for (const n of names) yield [n, this.get(n)];
  }

  keys() {
    return [...this.entries()].map(([k]) => k)[Symbol.iterator]();
  }

  values() {
    return [...this.entries()].map(([, v]) => v)[Symbol.iterator]();
  }

  [Symbol.iterator]() {
    return this.entries();
  }

  /** Every pair as given (a repeated header stays repeated). */
  pairs() {
    return this.#list.map(([k, v]) => [k, v]);
  }
}

const STATUS_TEXT = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently',
  302: 'Found', 303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect',
  308: 'Permanent Redirect', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 422: 'Unprocessable Entity',
  429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
  503: 'Service Unavailable', 504: 'Gateway Timeout',
};

function bodyBytes(body) {
  if (body == null) return new Uint8Array();
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof URLSearchParams) return encoder.encode(body.toString());
  throw new TypeError('fetch: a body must be a string, bytes or URLSearchParams');
}

export class Response {
  #bytes;
  #used = false;

  constructor(body, init = {}) {
    this.#bytes = bodyBytes(body);
    this.status = init.status ?? 200;
    this.statusText = init.statusText ?? STATUS_TEXT[this.status] ?? '';
    this.headers = init.headers instanceof Headers ? init.headers : new Headers(init.headers);
    this.ok = this.status >= 200 && this.status < 300;
    this.url = init.url ?? '';
    this.redirected = false;
    this.type = 'basic';
  }

  get bodyUsed() {
    return this.#used;
  }

  #take() {
    if (this.#used) throw new TypeError('Response body has already been used');
    this.#used = true;
    return this.#bytes;
  }

  async bytes() {
    return this.#take().slice();
  }

  async arrayBuffer() {
    return this.#take().slice().buffer;
  }

  async text() {
    return decoder.decode(this.#take());
  }

  async json() {
    return JSON.parse(await this.text());
  }

  clone() {
    if (this.#used) throw new TypeError('Response body has already been used');
    return new Response(this.#bytes.slice(), { status: this.status, headers: new Headers(this.headers.pairs()), url: this.url });
  }
}

function requestParts(input, init) {
  if (input instanceof URL) return { url: input.href, init };
  if (typeof input === 'string') return { url: input, init };
  if (input && typeof input.url === 'string') {
    return { url: input.url, init: { method: input.method, headers: input.headers, body: input.body, ...init } };
  }
  throw new TypeError('fetch: the first argument must be a URL or a string');
}

/** fetch(input, init): only `method`, `headers`, `body` and `signal` of init are read. */
export async function fetch(input, init = {}) {
  const parts = requestParts(input, init ?? {});
  const opts = parts.init;
  if (opts.signal?.aborted) throw opts.signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
  let url;
  try {
    url = new URL(parts.url).href;
  } catch {
    throw new TypeError(`fetch: invalid URL: ${parts.url}`);
  }
  const headers = new Headers(opts.headers);
  const body = bodyBytes(opts.body);
  if (opts.body instanceof URLSearchParams && !headers.has('content-type')) {
    headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
  } else if (typeof opts.body === 'string' && !headers.has('content-type')) {
    headers.set('content-type', 'text/plain;charset=UTF-8');
  }
  const method = String(opts.method ?? 'GET').toUpperCase();
  const r = gated(
    () => netFetch({ method, url, headers: headers.pairs(), body }),
    (message) => new TypeError('fetch failed', { cause: new Error(message) }),
  );
  return new Response(r.body, { status: r.status, headers: r.headers, url });
}

export { SbxDenied };
