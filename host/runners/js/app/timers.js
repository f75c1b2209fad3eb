// setTimeout and setInterval as node runs them for a script: the run ends
// when the script's top level has settled and no timer is left; an error
// thrown by a callback ends the script (node exits 1 on it) instead of
// reaching the engine's event loop, which would abort the component.
//
// The runner's own fetch, tools and files answer at once, so timers are
// the only thing a script's promise can still wait for: when the last one
// goes and the top level has not settled, nothing ever will settle it
// (node's "unsettled top-level await"). A check queued after the last
// timer's callback (and its promise jobs) finds that out.

const engine = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
};

/** Timers set and not yet run or cleared: id -> how to clear it. */
const pending = new Map();
let idle = null;
let hooks = { empty() {}, thrown() {} };

function check() {
  if (pending.size === 0) hooks.empty();
}

function gone(id) {
  pending.delete(id);
  if (pending.size > 0) return;
  idle?.resolve();
  idle = null;
  engine.setTimeout(check, 0);
}

function call(f, args) {
  if (typeof f !== 'function') return;
  try {
    f(...args);
  } catch (e) {
    hooks.thrown(e);
  }
}

/**
 * Put the script's timers in place. `empty()` is called when no timer is
 * left (also once after the script's first turn); `thrown(e)` when a
 * callback throws.
 */
export function install(on) {
  hooks = on;
  globalThis.setTimeout = (f, ms, ...args) => {
    const id = engine.setTimeout(() => {
      gone(id);
      call(f, args);
    }, ms);
    pending.set(id, engine.clearTimeout);
    return id;
  };
  globalThis.setInterval = (f, ms, ...args) => {
    const id = engine.setInterval(() => call(f, args), ms);
    pending.set(id, engine.clearInterval);
    return id;
  };
  globalThis.clearTimeout = (id) => {
    engine.clearTimeout(id);
    if (pending.has(id)) gone(id);
  };
  globalThis.clearInterval = (id) => {
    engine.clearInterval(id);
    if (pending.has(id)) gone(id);
  };
  engine.setTimeout(check, 0);
}

/** Once no timer is left (a callback may set one after clearing the last). */
export async function drained() {
  while (pending.size > 0) {
    idle ??= Promise.withResolvers();
    await idle.promise;
  }
}

/** Clear every timer: the script has ended. */
export function stopAll() {
  for (const [id, clear] of pending) clear(id);
  pending.clear();
  idle?.resolve();
  hooks = { empty() {}, thrown() {} };
}
