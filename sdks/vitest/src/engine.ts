/**
 * One `attest-engine serve` per Vitest worker: it prints {"ready": ...}, then answers one JSON line per
 * request line ({"open": {...}} or {"close": id}) until its standard input ends, so it ends with the
 * worker that started it. Each replay is one session on it: a test pays two lines, not a process start.
 *
 * A session's variables differ from another's of the same fixture, mode and guard only by its id, so
 * the first such open asks the engine for a template (attest_toolkit/replay/ahead.py): a prefix and a
 * key with which this side makes the next sessions' ids itself. Such a test writes no open at all: its
 * variables are known at once, and the engine opens its session on the first call naming the id (or
 * at its close). Only the close is waited for (the verdict needs its summary); an open that failed
 * after all fails its test there, with the engine's line.
 */

import { spawn } from "node:child_process";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createConnection } from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";

import type { BypassReport, Refusal } from "./bypass.js";
import { cannotStart } from "./install.js";
import { callKey, HitTable, Table, type Handed } from "./hits.js";
import type { Call, Hit } from "./lane.js";
import { ReplayError, replayIsOff, type Mode } from "./mode.js";

/** One miss as the engine reports it. */
export interface Miss {
  message: string;
  component: string;
  fixture: string;
  not_evaluated: boolean;
  /** Where the request changed (`params.max_tokens`, `messages[3] added`), never its values. */
  paths?: string[];
}

/** The engine's account of one replay session. */
export interface ReplaySummary {
  mode: Mode;
  fixtures: string[];
  replayed: number;
  live: number;
  live_cost_usd: number;
  unpriced: number;
  misses: number;
  not_evaluated: number;
  miss_list: Miss[];
  live_list?: LiveCall[];
  otlp_requests: number;
  /** With faults (`useReplay(name, { faults })`): how many were injected, and each one. */
  faults?: number;
  fault_list?: { call: number; fault: string; kind: string }[];
}

/** One call that went live (auto mode): its model and cost (null when unpriced). */
export interface LiveCall {
  model: string | null;
  cost_usd: number | null;
}

export interface SessionSpec {
  fixture: string;
  mode: Mode;
  noLive: boolean;
  /** The SPECs its model requests meet (attest_toolkit/replay/faults.py); a session with faults is
   * served over HTTP only, so a timeout, a disconnect and a cut reach `fetch` as its own errors. */
  faults?: string[];
}

/** A session open on the worker's engine; `env` points the provider SDKs at it. */
export interface OpenSession {
  id: string;
  env: Record<string, string>;
}

// What the engine printed on standard error, kept short for the error message.
const STDERR_KEPT = 4000;
// The worker's engines, by engine path. On globalThis, which Vitest keeps for the worker's life, so
// test files that each evaluate this module afresh (isolation) still share the worker's engine.
const ENGINES = Symbol.for("@attest-ai/vitest.engines");
type Registry = Map<string, WorkerEngine>;
export const DEFAULT_ENGINE = "attest-engine";

/**
 * Start the worker's default engine now, without waiting for it, so that its start overlaps the test
 * file's own imports rather than the first test. A failure to start is not reported here: the first
 * useReplay starts it again and reports it.
 */
export function startEarly(enginePath = DEFAULT_ENGINE): void {
  workerEngine(enginePath).catch(() => undefined);
}

/** startEarly for the default engine, unless replay is off (ATTEST_REPLAY=off starts nothing). */
export function startDefault(): void {
  if (!replayIsOff()) startEarly();
}

/** The worker's engine for `enginePath`, started on first use and replaced when it died. */
export async function workerEngine(enginePath: string): Promise<WorkerEngine> {
  const registry = ((globalThis as Record<symbol, unknown>)[ENGINES] ??= new Map()) as Registry;
  const current = registry.get(enginePath);
  const environment = environmentPrint();
  if (current !== undefined && current.usable(environment)) return current;
  current?.retire();
  const spare = enginePath === DEFAULT_ENGINE ? takeSpare(environment) : undefined;
  if (spare !== undefined) {
    const claimed = new WorkerEngine(environment, spare);
    registry.set(enginePath, claimed);
    try {
      await claimed.ready;
      return claimed;
    } catch {
      // Another worker claimed it, or it could not start: this worker starts its own, which says why.
      if (registry.get(enginePath) === claimed) registry.delete(enginePath);
    }
  }
  const started = new WorkerEngine(environment, spawnLink(enginePath));
  registry.set(enginePath, started);
  try {
    await started.ready;
  } catch (error) {
    if (registry.get(enginePath) === started) registry.delete(enginePath);
    throw error;
  }
  return started;
}

// What Vitest sets in every worker besides VITEST_* (Vite's import.meta.env, the run's flags): the
// engine reads none of them, and leaving them out lets a worker claim the spare its main process
// started before they were set.
const VITEST_SETS = new Set(["TEST", "NODE_ENV", "FORCE_TTY", "BASE_URL", "MODE", "DEV", "PROD", "SSR"]);

/**
 * A digest of the environment the engine would start with: it reads provider keys, base URLs,
 * upstreams and the secrets to redact from it once, at start, so a test that changed any variable
 * gets an engine started with its own environment, as it did when every test started one.
 */
export function environmentPrint(): string {
  const entries = Object.entries(process.env)
    .filter(([name]) => !name.startsWith("VITEST") && !VITEST_SETS.has(name) && name !== SPARE_VAR)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256").update(JSON.stringify(entries)).digest("hex");
}

// A spare engine the run's main process started as the run began (./spare.ts, from attestReplay()):
// where to claim it and the print of the environment it started with. The first worker to connect
// gets it; the others start their own.
export const SPARE_VAR = "ATTEST_VITEST_SPARE";
export const SPARE_SOCKET = "engine.sock";
export const SPARE_STDERR = "engine.err";
const TRIED = Symbol.for("@attest-ai/vitest.spare-tried");

/** A link to the spare engine, once per worker, when it was started with this environment. */
function takeSpare(environment: string): Link | undefined {
  const offered = process.env[SPARE_VAR];
  const scope = globalThis as Record<symbol, unknown>;
  if (!offered || scope[TRIED]) return undefined;
  scope[TRIED] = true;
  try {
    const spare = JSON.parse(offered) as { dir: string; print: string };
    return spare.print === environment ? claimLink(spare.dir) : undefined;
  } catch {
    return undefined;
  }
}

/** Where the engine's lines go and come from, and how it ends: its own pipes, or a claimed socket. */
export interface Link {
  input: Writable;
  output: Readable & { ref(): void; unref(): void };
  /** Resolves once the link is up (the process spawned, the socket connected). */
  up: Promise<void>;
  /** Calls back once with the engine's exit code (null when unknown) when the link ends. */
  onEnd(callback: (code: number | null) => void): void;
  /** What the engine last wrote on standard error. */
  stderr(): string;
  kill(): void;
  idle(): void;
}

/** An engine of the worker's own: `attest-engine serve` on its pipes. */
export function spawnLink(enginePath: string): Link {
  const child = spawn(enginePath, ["serve"], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    stderr = (stderr + text).slice(-STDERR_KEPT);
  });
  return {
    input: child.stdin,
    output: child.stdout as Link["output"],
    up: new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (error: NodeJS.ErrnoException) => reject(cannotRun(enginePath, error)));
    }),
    onEnd: (callback) => child.once("close", (code) => callback(code)),
    stderr: () => stderr,
    kill: () => child.kill(),
    idle: () => {
      // The worker must be free to end while its engine idles; the engine then reads the end of its input.
      child.unref();
      for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref(): void }).unref();
    },
  };
}

/** The spare engine, over its socket; it ends when this end closes, as an engine ends with its input. */
function claimLink(dir: string): Link {
  const socket = createConnection(path.join(dir, SPARE_SOCKET));
  return {
    input: socket,
    output: socket,
    up: new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    }),
    onEnd: (callback) => socket.once("close", () => callback(null)),
    stderr: () => {
      try {
        return readFileSync(path.join(dir, SPARE_STDERR), "utf8").slice(-STDERR_KEPT);
      } catch {
        return "";
      }
    },
    kill: () => socket.destroy(),
    idle: () => socket.unref(),
  };
}

// Where a session's id stands in the template variables kept here (`.../r/<id>/openai/v1`): a character no
// URL holds. Only this file reads it; the engine keeps its own templates.
const ID_SLOT = "\u0000";

type Reply = Record<string, unknown> | undefined; // undefined: the engine exited first

/** What the engine gave for making sessions of one fixture, mode and guard without a line. */
interface Template {
  prefix: string;
  key: Buffer;
  env: Record<string, string>; // the id at ID_SLOT
}

export class WorkerEngine {
  readonly ready: Promise<void>;
  // Whoever waits for each answer still to come, in the order the requests were written: the engine
  // answers in that order.
  private readonly awaiting: Array<(reply: Reply) => void> = [];
  // Templates by fixture, mode and guard (see the module comment), and the sessions made from each.
  private readonly templates = new Map<string, Template>();
  private readonly made = new Map<string, string>();
  // Hit tables by fixture, mode and guard, and the open sessions whose hits this worker answers (./hits.js).
  private readonly tables = new Map<string, Table>();
  private readonly held = new Map<string, HitTable>();
  private notes = ""; // notes not written yet (see `note`)
  private exitCode: number | null | undefined; // undefined while it runs
  /** The engine's origin (`http://127.0.0.1:PORT`), once ready. */
  origin = "";

  constructor(
    private readonly environment: string,
    private readonly link: Link,
  ) {
    link.input.on("error", () => undefined); // writing to an engine that died: its end says so
    createInterface({ input: link.output, crlfDelay: Infinity })
      .on("line", (line) => this.deliver(line))
      .on("error", () => undefined); // the link's own error: its end says so
    link.onEnd((code) => {
      this.exitCode = code;
      for (const waiting of this.awaiting.splice(0)) waiting(undefined);
    });
    link.idle();
    this.ready = this.start(this.expect()); // its first line, {"ready": ...}, comes unasked
  }

  /** True while it runs and was started with this environment. */
  usable(environment: string): boolean {
    return this.exitCode === undefined && this.environment === environment;
  }

  /** End it: it exits when its input ends. */
  retire(): void {
    this.link.input.end();
  }

  async open(spec: SessionSpec): Promise<OpenSession> {
    const faults = spec.faults?.length ? { faults: spec.faults } : {};
    const open = { fixtures: [spec.fixture], mode: spec.mode, no_live: spec.noLive, ...faults };
    const key = JSON.stringify(open);
    const template = this.templates.get(key);
    const table = this.tables.get(key);
    if (template !== undefined && this.exitCode === undefined) {
      const nonce = randomBytes(8).toString("hex"); // as random as the engine's own ids
      const id = template.prefix + nonce + createHmac("sha256", template.key).update(nonce).digest("hex").slice(0, 16);
      this.made.set(id, key);
      if (table !== undefined) this.held.set(id, new HitTable(table));
      return { id, env: withId(template.env, id) };
    }
    const lane = process.env.ATTEST_LANE === "off" ? {} : { lane: table?.token ? { have: table.token } : {} };
    const reply = await this.request({ open: { ...open, ahead: true, ...lane } }, "opening this replay");
    const id = reply.id as string;
    const env = reply.env as Record<string, string>;
    const handed = reply.table === undefined ? undefined : Table.handed(reply.table as Handed, table);
    if (handed === undefined) this.tables.delete(key);
    else {
      this.tables.set(key, handed);
      this.held.set(id, new HitTable(handed));
    }
    const ahead = reply.ahead as { prefix: string; key: string } | undefined;
    const kept = withoutId(env, id);
    if (ahead !== undefined && kept !== undefined) {
      this.templates.set(key, { prefix: ahead.prefix, key: Buffer.from(ahead.key, "hex"), env: kept });
    }
    return { id, env };
  }

  /** End the session; the engine counts what went around it (`bypass`) in its summary. */
  async close(id: string, bypass?: BypassReport): Promise<ReplaySummary> {
    const key = this.made.get(id);
    this.made.delete(id);
    const served = this.held.get(id)?.served;
    this.held.delete(id);
    // The engine checks it counted every call this worker answered itself.
    const answered = served === undefined ? {} : { answered: served };
    const reply = await this.request({ close: id, ...(bypass ? { bypass } : {}), ...answered }, "serving this replay");
    if (reply.rewritten === true) {
      if (key !== undefined) this.templates.delete(key);
      const error = new ReplayError(
        "attest replay: this replay's fixture was rewritten while the tests ran and now serves other variables; run the test again",
      );
      error.stack = `${error.name}: ${error.message}`; // one line: where the hook threw says nothing
      throw error;
    }
    return reply.summary as ReplaySummary;
  }

  /**
   * A call this process would make over HTTP (./lane.js): the hit, or undefined. A call the engine
   * answered before in a session of the same table is answered here (./hits.js); any other is sent on
   * the link, and the engine's answer teaches the table its key.
   */
  async call(call: Call): Promise<Hit | undefined> {
    const id = call.target.split("/", 3)[2] ?? "";
    const held = this.exitCode === undefined ? this.held.get(id) : undefined;
    const asked = held && callKey(call.method, call.target, call.content_type, call.content_encoding, call.body);
    const known = asked === undefined ? undefined : held?.table.keys.get(asked);
    const position = known === undefined ? undefined : held?.next(known);
    if (held !== undefined && position !== undefined) {
      this.note(JSON.stringify({ took: [id, position, held.table.token] }) + "\n");
      const frame = held.take(position);
      return { head: frame.head, chunks: frame.chunks.map((chunk) => Buffer.from(chunk)) }; // the caller's own bytes
    }
    const reply = await this.request({ call }, "serving this replay");
    const hit = reply.hit as { head: string; chunks: string[]; key?: string } | null;
    if (hit == null) return undefined;
    if (held !== undefined && asked !== undefined && typeof hit.key === "string") held.table.remember(asked, hit.key);
    return { head: hit.head, chunks: hit.chunks.map((chunk) => Buffer.from(chunk, "base64")) };
  }

  /** The answer a call that went around the replay gets, in the engine's words. */
  async refusal(host: string): Promise<Refusal> {
    return (await this.request({ refusal: { host, runner: "vitest" } }, "serving this replay")) as unknown as Refusal;
  }

  private async start(first: Promise<Reply>): Promise<void> {
    await this.link.up;
    const ready = await first;
    if (ready === undefined || !("ready" in ready)) {
      this.link.kill();
      const code = await this.exited();
      throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, this.link.stderr()));
    }
    const url = (ready.ready as { url?: unknown } | null)?.url;
    this.origin = typeof url === "string" ? new URL(url).origin : "";
  }

  /** One request, once the engine is ready, and its answer. */
  private async request(message: Record<string, unknown>, doing: string): Promise<Record<string, unknown>> {
    await this.ready;
    if (this.exitCode !== undefined) throw this.died(doing);
    return this.checked(await this.send(message), doing);
  }

  /** Write one request now; its answer when it comes. */
  private send(message: Record<string, unknown>): Promise<Reply> {
    const reply = this.expect();
    this.link.input.write(this.takeNotes() + JSON.stringify(message) + "\n");
    return reply;
  }

  /**
   * A line the engine does not answer: written with the next request, or once this turn of the event
   * loop ends, whichever comes first (a test's calls answered here cost one write between them, and
   * the engine reads every note before it serves the session or closes it).
   */
  private note(line: string): void {
    if (this.notes === "") setImmediate(() => this.notes !== "" && this.link.input.write(this.takeNotes()));
    this.notes += line;
  }

  private takeNotes(): string {
    const notes = this.notes;
    this.notes = "";
    return notes;
  }

  private checked(reply: Reply, doing: string): Record<string, unknown> {
    if (reply === undefined) throw this.died(doing);
    if (typeof reply.error === "string") throw new ReplayError(`attest replay: ${reply.error}`);
    return reply;
  }

  private died(doing: string): ReplayError {
    const error = new ReplayError(
      engineFailure(`attest replay: the replay engine exited while ${doing}; the next test gets a new engine`, this.link.stderr()),
    );
    error.stack = `${error.name}: ${error.message}`; // one line: the engine's end is the story
    return error;
  }

  /** The next answer, in the order asked; undefined once the engine has exited. */
  private expect(): Promise<Reply> {
    if (this.exitCode !== undefined) return Promise.resolve(undefined);
    // Awaited, an answer keeps the process alive (idle, the engine does not: see the constructor).
    this.link.output.ref();
    return new Promise((resolve) => this.awaiting.push(resolve));
  }

  /** An answer to whoever asked first; anything that is not a JSON object line is skipped. */
  private deliver(line: string): void {
    const message = parse(line);
    if (message === undefined) return;
    if (Array.isArray(message.taken)) {
      // Not an answer: the engine took a recording of a session this worker answers too (./hits.js).
      const [id, position] = message.taken as [string, number];
      this.held.get(id)?.mark(position);
      return;
    }
    const waiting = this.awaiting.shift();
    if (this.awaiting.length === 0) this.link.output.unref();
    waiting?.(message);
  }

  private exited(): Promise<number | null> {
    if (this.exitCode !== undefined) return Promise.resolve(this.exitCode);
    return new Promise((resolve) => this.link.onEnd(resolve));
  }
}

/** A session's variables with its id taken out; undefined when the id shows anywhere else. */
function withoutId(env: Record<string, string>, id: string): Record<string, string> | undefined {
  const kept = Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.split(`/r/${id}/`).join(`/r/${ID_SLOT}/`)]));
  return Object.values(kept).some((value) => value.includes(id)) ? undefined : kept;
}

function withId(kept: Record<string, string>, id: string): Record<string, string> {
  return Object.fromEntries(Object.entries(kept).map(([name, value]) => [name, value.split(ID_SLOT).join(id)]));
}

/** A JSON object line, else undefined. */
function parse(line: string): Record<string, unknown> | undefined {
  try {
    const message = JSON.parse(line) as unknown;
    return message !== null && typeof message === "object" ? (message as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function cannotRun(enginePath: string, error: NodeJS.ErrnoException): ReplayError {
  return new ReplayError(`attest replay: cannot run ${enginePath}: ${cannotStart(enginePath, error)}`);
}

function engineFailure(what: string, stderr: string): string {
  const last = stderr.trim().split("\n").filter(Boolean).pop();
  return last ? `${what}: ${last}` : what;
}
