// Node's Buffer, the part scripts use: a Uint8Array with `from`, `alloc`,
// `concat`, `byteLength`, `isBuffer`, `toString(encoding)`, `equals`,
// `toJSON`, in the encodings utf8, base64, base64url, hex, latin1 (binary)
// and ascii. `fs.readFile` without an encoding gives one, as node's does,
// so `readFileSync(path).toString()` works unchanged.

const ENCODINGS = ['utf8', 'utf-8', 'base64', 'base64url', 'hex', 'latin1', 'binary', 'ascii'];

function encodingOf(encoding) {
  const e = String(encoding ?? 'utf8').toLowerCase();
  if (!ENCODINGS.includes(e)) throw new TypeError(`Unknown encoding: ${encoding} (this runner has ${ENCODINGS.join(', ')})`);
  return e;
}

function chars(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return s;
}

function encode(text, encoding) {
  switch (encodingOf(encoding)) {
    case 'hex': {
      const n = text.length >> 1;
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const b = parseInt(text.substr(i * 2, 2), 16);
        if (Number.isNaN(b)) return out.subarray(0, i);
        out[i] = b;
      }
      return out;
    }
    case 'base64':
    case 'base64url': {
      const b64 = text.replace(/[^A-Za-z0-9+/_-]/g, '').replace(/-/g, '+').replace(/_/g, '/');
      const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
      return Uint8Array.from(bin, (c) => c.charCodeAt(0));
    }
    case 'latin1':
    case 'binary':
    case 'ascii':
      return Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);
    default:
      return new TextEncoder().encode(text);
  }
}

/** `bytes` as text in `encoding`. */
export function decode(bytes, encoding) {
  switch (encodingOf(encoding)) {
    case 'hex':
      return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    case 'base64':
      return btoa(chars(bytes));
    case 'base64url':
      return btoa(chars(bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    case 'latin1':
    case 'binary':
      return chars(bytes);
    case 'ascii':
      return chars(bytes.map((b) => b & 0x7f));
    default:
      return new TextDecoder().decode(bytes);
  }
}

export class Buffer extends Uint8Array {
  static from(value, encodingOrOffset, length) {
    if (typeof value === 'string') return Buffer.#of(encode(value, encodingOrOffset));
    if (value instanceof ArrayBuffer) {
      const offset = encodingOrOffset ?? 0;
      return new Buffer(value, offset, length ?? value.byteLength - offset);
    }
    if (ArrayBuffer.isView(value)) return Buffer.#of(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    if (Array.isArray(value)) return Buffer.#of(Uint8Array.from(value));
    if (value && value.type === 'Buffer' && Array.isArray(value.data)) return Buffer.#of(Uint8Array.from(value.data));
    throw new TypeError('Buffer.from: the first argument must be a string, an array, an ArrayBuffer or a typed array');
  }

  static #of(bytes) {
    const b = new Buffer(bytes.length);
    b.set(bytes);
    return b;
  }

  static alloc(size, fill) {
    const b = new Buffer(size);
    if (fill !== undefined) b.fill(typeof fill === 'string' ? fill.charCodeAt(0) : fill);
    return b;
  }

  static allocUnsafe(size) {
    return new Buffer(size);
  }

  static isBuffer(value) {
    return value instanceof Buffer;
  }

  static isEncoding(encoding) {
    return ENCODINGS.includes(String(encoding).toLowerCase());
  }

  static byteLength(value, encoding) {
    return typeof value === 'string' ? encode(value, encoding).length : value.byteLength;
  }

  static concat(list, total) {
    const length = total ?? list.reduce((n, b) => n + b.length, 0);
    const out = Buffer.alloc(length);
    let at = 0;
    for (const b of list) {
      if (at >= length) break;
      out.set(b.subarray(0, length - at), at);
      at += Math.min(b.length, length - at);
    }
    return out;
  }

  toString(encoding, start = 0, end = this.length) {
    return decode(this.subarray(start, end), encoding);
  }

  equals(other) {
    return this.length === other.length && this.every((b, i) => b === other[i]);
  }

  toJSON() {
    return { type: 'Buffer', data: Array.from(this) };
  }
}
