/**
 * Provider calls that go around a running replay, made loud (the pytest helper's bypass, for Node).
 *
 * A client built before useReplay (a module-level `new OpenAI()`) read the provider's URL when it was
 * built, so its calls go straight to the provider. Node's global fetch, which the official openai and
 * @anthropic-ai/sdk packages use, sends every request through undici's global dispatcher, looked up
 * afresh for each request; while a replay runs, a wrapper around that dispatcher watches requests to
 * provider hosts:
 *
 * - blocking (strict, or the egress guard on): the request is never sent. The agent gets the
 *   provider-shaped error a miss gets (which the SDKs do not retry), or the egress guard's error when
 *   the guard is on, and the engine counts a miss naming the host and the likely cause, which fails
 *   the test.
 * - auto: the request goes out; its answer is kept as it is read, and the engine counts it as a live
 *   call and prices it when the replay ends, like a miss it forwarded itself.
 *
 * Other hosts are untouched. A client given its own `fetch` or HTTP agent is not watched: the egress
 * guard (and network isolation) cover it.
 */

import * as guard from "./guard/index.js";

// Where undici (Node's fetch, and the undici package) keeps the global dispatcher.
const GLOBAL_DISPATCHER = Symbol.for("undici.globalDispatcher.1");

/** An answer the engine wrote for a blocked call. */
export interface Refusal {
  status: number;
  headers: [string, string][];
  body: string;
}

/** One call that went out, as the engine prices it: the answer's bytes (base64) once fully read. */
export interface BypassedCall {
  model: string | null;
  content_type: string | null;
  content_encoding: string | null;
  body: string | null;
}

/** What went around one replay, sent with its close (the engine's `bypass.reported`). */
export interface BypassReport {
  runner: "vitest";
  fixture: string;
  blocked: string[];
  live: BypassedCall[];
}

interface Dispatcher {
  dispatch(options: DispatchOptions, handler: Handler): boolean;
}
interface DispatchOptions {
  origin?: string | URL;
  body?: unknown;
}
// undici's handler, in the form Node's fetch passes it.
interface Handler {
  onConnect?(abort: (error?: Error) => void): void;
  onHeaders?(status: number, headers: Buffer[], resume: () => void, statusText: string): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: Buffer[]): void;
  onError?(error: Error): void;
}

/** What one replay watches: the calls it blocked, the calls it let out. */
export class Watch {
  readonly blocked: string[] = [];
  private readonly live: Array<{ call: BypassedCall; chunks: Buffer[]; done: boolean }> = [];

  constructor(
    private readonly fixture: string,
    readonly blocks: boolean,
    readonly refuse: (host: string) => Promise<Refusal>,
  ) {}

  /** Count a call that goes out; its model and answer are filled in as they pass. */
  goingOut(): { call: BypassedCall; chunks: Buffer[]; done: boolean } {
    const entry = { call: { model: null, content_type: null, content_encoding: null, body: null }, chunks: [], done: false };
    this.live.push(entry);
    return entry;
  }

  /** The report for the engine, or undefined when nothing went around. An answer not read to its end is sent unpriced. */
  report(): BypassReport | undefined {
    if (this.blocked.length === 0 && this.live.length === 0) return undefined;
    const live = this.live.map(({ call, chunks, done }) => ({ ...call, body: done ? Buffer.concat(chunks).toString("base64") : null }));
    return { runner: "vitest", fixture: this.fixture, blocked: [...this.blocked], live };
  }
}

/** Watch provider calls through the global dispatcher until the returned function is called; it returns the report. */
export function watch(current: Watch): () => BypassReport | undefined {
  const slot = globalThis as Record<symbol, unknown>;
  void globalThis.Response; // loading Node's fetch sets its global dispatcher
  const inner = slot[GLOBAL_DISPATCHER] as Dispatcher | undefined;
  if (inner === undefined || typeof inner.dispatch !== "function") return () => current.report();
  const wrapper = new Proxy(inner, {
    get(target, property) {
      if (property === "dispatch") return (options: DispatchOptions, handler: Handler) => dispatch(target, current, options, handler);
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  slot[GLOBAL_DISPATCHER] = wrapper;
  return () => {
    if (slot[GLOBAL_DISPATCHER] === wrapper) slot[GLOBAL_DISPATCHER] = inner;
    return current.report();
  };
}

function dispatch(inner: Dispatcher, current: Watch, options: DispatchOptions, handler: Handler): boolean {
  const host = hostOf(options.origin);
  // A handler of another form (a later undici's) is passed on unwatched rather than broken.
  if (host === undefined || !guard.isBlockedHost(host) || typeof handler.onHeaders !== "function") return inner.dispatch(options, handler);
  if (current.blocks) {
    current.blocked.push(host);
    // With the egress guard on, the guard refuses the connection in its own words (the test still
    // fails with the engine's line, the guard's error after it).
    if (guard.installed()) return inner.dispatch(options, handler);
    void answer(handler, current.refuse(host));
    return true;
  }
  const entry = current.goingOut();
  return inner.dispatch({ ...options, body: teeBody(options.body, (sent) => (entry.call.model = modelOf(sent))) }, teeHandler(handler, entry));
}

function hostOf(origin: string | URL | undefined): string | undefined {
  try {
    return origin === undefined ? undefined : new URL(origin).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return undefined;
  }
}

/** Answer the request with the engine's refusal, as a server would. */
async function answer(handler: Handler, refusal: Promise<Refusal>): Promise<void> {
  try {
    const { status, headers, body } = await refusal;
    const raw = [["content-type", "application/json"], ...headers].flat().map((text) => Buffer.from(text, "latin1"));
    handler.onConnect?.(() => undefined);
    handler.onHeaders?.(status, raw, () => undefined, "Bad Request");
    handler.onData?.(Buffer.from(body, "utf8"));
    handler.onComplete?.([]);
  } catch (error) {
    handler.onError?.(error as Error);
  }
}

/** The request body, passed through unchanged; `seen` gets all of it once sent. */
function teeBody(body: unknown, seen: (sent: Buffer) => void): unknown {
  if (typeof body === "string" || body instanceof Uint8Array) {
    seen(Buffer.from(body));
    return body;
  }
  if (body === null || typeof body !== "object" || !(Symbol.asyncIterator in body)) return body;
  const source = body as AsyncIterable<Uint8Array | string>;
  return (async function* () {
    const chunks: Buffer[] = [];
    for await (const chunk of source) {
      chunks.push(Buffer.from(chunk));
      yield chunk;
    }
    seen(Buffer.concat(chunks));
  })();
}

/** The model a JSON request names, else null (the engine then leaves the call unpriced). */
function modelOf(sent: Buffer): string | null {
  try {
    const model = (JSON.parse(sent.toString("utf8")) as { model?: unknown }).model;
    return typeof model === "string" ? model : null;
  } catch {
    return null;
  }
}

/** The handler, keeping the answer's type, encoding and bytes as they pass. */
function teeHandler(handler: Handler, entry: { call: BypassedCall; chunks: Buffer[]; done: boolean }): Handler {
  return new Proxy(handler, {
    get(target, property) {
      if (property === "onHeaders") {
        return (status: number, headers: Buffer[], resume: () => void, statusText: string) => {
          for (let i = 0; i + 1 < headers.length; i += 2) {
            const name = headers[i].toString("latin1").toLowerCase();
            if (name === "content-type") entry.call.content_type = headers[i + 1].toString("latin1");
            if (name === "content-encoding") entry.call.content_encoding = headers[i + 1].toString("latin1");
          }
          return target.onHeaders!(status, headers, resume, statusText);
        };
      }
      if (property === "onData") {
        return (chunk: Buffer) => {
          entry.chunks.push(Buffer.from(chunk));
          return target.onData!(chunk);
        };
      }
      if (property === "onComplete") {
        return (trailers: Buffer[]) => {
          entry.done = true;
          return target.onComplete!(trailers);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
