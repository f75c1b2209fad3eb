// The sbx JavaScript runner's API: what a script run by `sbx-wasm run
// agent.ts` (or MCP `run_javascript`) finds besides the language itself.
// Reference it from an editor with `/// <reference path="sbx.d.ts" />`.
//
// Every call below is one operation through the host's gate: checked
// against the grant, charged to the budgets and recorded in the audit. A
// refusal by the grant throws (or rejects with) SbxDenied; nothing was
// performed. A hard limit (operations, output, wall time, fuel, memory)
// is not an exception: the host halts the run.

/** The grant does not allow this call; nothing was performed. */
declare class SbxDenied extends Error {
  readonly name: 'SbxDenied';
  /** The host's name for the refusal: `egress_denied`, `fs_read_denied`,
   * `fs_write_denied`, `path_traversal`, `tool_denied`, `kv_denied`,
   * `invalid_request`, ... */
  readonly violation: string;
  /** Why, for people (the guest path or URL, the rule that was missing). */
  readonly reason: string;
}

/** An allowed tool call that failed. */
declare class SbxToolError extends Error {
  readonly name: 'SbxToolError';
  readonly tool: string;
}

/**
 * The host's tools on the grant's allow-list, as functions: `await
 * tools.search({ q: "x" })`. The arguments go as JSON (a string as it is);
 * the result is the tool's output parsed as JSON when it is JSON, else its
 * text. A tool off the list rejects with SbxDenied (`tool_denied`).
 */
declare const tools: { readonly [name: string]: (args?: unknown) => Promise<any> };

/**
 * fetch through the host's egress broker: only granted origins, every
 * resolved address checked, redirects re-checked hop by hop, secrets
 * only in their declared header slots. Reads `method`, `headers`, `body`
 * (string, bytes, URLSearchParams) and `signal` of `init`. A refusal
 * rejects with SbxDenied (`egress_denied`); a network failure with a
 * TypeError. The response body counts against the output budget.
 */
declare function fetch(input: string | URL | { url: string }, init?: {
  method?: string;
  headers?: Headers | Record<string, string> | [string, string][];
  body?: string | Uint8Array | ArrayBuffer | URLSearchParams | null;
  signal?: AbortSignal;
}): Promise<Response>;

declare class Headers implements Iterable<[string, string]> {
  constructor(init?: Headers | Record<string, string> | [string, string][]);
  append(name: string, value: string): void;
  set(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  has(name: string): boolean;
  forEach(f: (value: string, name: string, headers: Headers) => void): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

declare class Response {
  constructor(body?: string | Uint8Array | ArrayBuffer | null, init?: { status?: number; statusText?: string; headers?: Headers | Record<string, string> | [string, string][] });
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly url: string;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  clone(): Response;
}

/** The process: `argv` is `['js', '/NAME', ...args]`; `env` holds the
 * grant's `[env]` only; `exit(code)` ends the script (a code other than 0
 * leaves the run with exit code 1). */
declare const process: {
  argv: string[];
  env: Record<string, string>;
  exitCode: number | undefined;
  exit(code?: number): never;
  cwd(): string;
  platform: 'wasi';
  stdout: { write(s: string | Uint8Array): boolean };
  stderr: { write(s: string | Uint8Array): boolean };
  nextTick(f: (...args: any[]) => void, ...args: any[]): void;
};

/** `require` of the runner's modules (what `import` becomes): `fs`,
 * `fs/promises`, `buffer`, `path`, `util`, `process`, `crypto` (also as `node:NAME`)
 * and `sbx`. There is no package loader: npm packages are not here. */
declare function require(name: string): any;

interface SbxStats {
  size: number;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  writable: boolean;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

interface SbxDirent {
  name: string;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** Files in the granted mounts, by guest path, one gated op per call
 * (fs_read, fs_write, fs_list, fs_stat, fs_remove, fs_mkdir). Bytes read
 * count against the output budget; bytes written against the write quota.
 * A refusal throws SbxDenied (`fs_read_denied`, `fs_write_denied`,
 * `path_traversal`); a failure an Error with a Node `code` (`ENOENT`...). */
interface SbxFsPromises {
  /** A Buffer (node's, the common part: a Uint8Array with toString(encoding)). */
  readFile(path: string | URL): Promise<Uint8Array & { toString(encoding?: string): string }>;
  readFile(path: string | URL, encoding: 'utf8' | 'utf-8' | 'latin1' | 'base64' | { encoding: string }): Promise<string>;
  writeFile(path: string | URL, data: string | Uint8Array | ArrayBuffer): Promise<void>;
  /** Reads the file and writes it whole again: two operations. */
  appendFile(path: string | URL, data: string | Uint8Array): Promise<void>;
  readdir(path: string | URL): Promise<string[]>;
  readdir(path: string | URL, options: { withFileTypes: true }): Promise<SbxDirent[]>;
  stat(path: string | URL): Promise<SbxStats>;
  lstat(path: string | URL): Promise<SbxStats>;
  /** Makes missing parents too, whatever `recursive` says. */
  mkdir(path: string | URL, options?: { recursive?: boolean }): Promise<void>;
  rm(path: string | URL, options?: { recursive?: boolean; force?: boolean }): Promise<void>;
  unlink(path: string | URL): Promise<void>;
  rmdir(path: string | URL, options?: { recursive?: boolean }): Promise<void>;
  access(path: string | URL): Promise<void>;
}

declare module 'fs/promises' {
  const promises: SbxFsPromises;
  export = promises;
}

declare module 'fs' {
  const fs: {
    promises: SbxFsPromises;
    readFileSync(path: string | URL): Uint8Array & { toString(encoding?: string): string };
    readFileSync(path: string | URL, encoding: string | { encoding: string }): string;
    writeFileSync(path: string | URL, data: string | Uint8Array | ArrayBuffer): void;
    appendFileSync(path: string | URL, data: string | Uint8Array): void;
    readdirSync(path: string | URL): string[];
    readdirSync(path: string | URL, options: { withFileTypes: true }): SbxDirent[];
    statSync(path: string | URL): SbxStats;
    lstatSync(path: string | URL): SbxStats;
    /** false for a missing path; a refused one throws SbxDenied. */
    existsSync(path: string | URL): boolean;
    mkdirSync(path: string | URL, options?: { recursive?: boolean }): void;
    rmSync(path: string | URL, options?: { recursive?: boolean; force?: boolean }): void;
    unlinkSync(path: string | URL): void;
    rmdirSync(path: string | URL, options?: { recursive?: boolean }): void;
    accessSync(path: string | URL): void;
    /** Node's callback forms of each of the above. */
    [callbackForm: string]: any;
  };
  export = fs;
}

declare module 'sbx' {
  export const tools: typeof globalThis.tools;
  /** Call tool `name` with `args` (as `tools[name](args)`). */
  export function callTool(name: string, args?: unknown): Promise<any>;
  /** The names of the tools a call can reach (allowed and provided by the host). */
  export function granted(): string[];
  /** What a model is told of each tool `granted()` lists. */
  export function toolDefinitions(): { name: string; description: string; inputSchema: object }[];
  /** The run's key-value store (`[kv]` in the grant). */
  export const kv: {
    get(key: string): Promise<Uint8Array>;
    getText(key: string): Promise<string>;
    put(key: string, value: string | Uint8Array): Promise<void>;
    delete(key: string): Promise<void>;
    list(prefix?: string): Promise<string[]>;
  };
  export const fetch: typeof globalThis.fetch;
  export const SbxDenied: typeof globalThis.SbxDenied;
  export const SbxToolError: typeof globalThis.SbxToolError;
}
