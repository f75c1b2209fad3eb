// How a refusal or a failure of the host reaches a script: a refusal by the
// grant is an `SbxDenied` carrying the host's violation name; an allowed
// call that failed is the error the API's own callers expect (fetch: a
// TypeError, as in browsers and Node; files: an Error with a Node code).

/** The grant does not allow this call; nothing was performed. */
export class SbxDenied extends Error {
  constructor(violation, reason) {
    super(`${violation}: ${reason}`);
    this.name = 'SbxDenied';
    this.violation = violation;
    this.reason = reason;
  }
}

/** An allowed tool call that failed. */
export class SbxToolError extends Error {
  constructor(tool, message) {
    super(`tool ${tool} failed: ${message}`);
    this.name = 'SbxToolError';
    this.tool = tool;
  }
}

/**
 * `call()`, a WIT import whose result is `result<T, error>`: its value, or
 * an exception. componentize-js throws the error variant as an exception
 * whose `payload` is `{ tag, val }`; `failed(message)` makes the caller's
 * own error.
 */
export function gated(call, failed) {
  try {
    return call();
  } catch (e) {
    const p = e && e.payload;
    if (p && p.tag === 'denied') throw new SbxDenied(p.val.violation, p.val.message);
    if (p && p.tag === 'failed') throw failed(String(p.val));
    throw e;
  }
}

/** A string argument, or a TypeError naming `what`. */
export function text(value, what) {
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, not ${value === null ? 'null' : typeof value}`);
  }
  return value;
}
