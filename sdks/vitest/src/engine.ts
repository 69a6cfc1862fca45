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

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createInterface } from "node:readline";

import type { BypassReport, Refusal } from "./bypass.js";
import { ReplayError, type Mode } from "./mode.js";

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
  if (process.env.ATTEST_REPLAY?.trim().toLowerCase() !== "off") startEarly();
}

/** The worker's engine for `enginePath`, started on first use and replaced when it died. */
export async function workerEngine(enginePath: string): Promise<WorkerEngine> {
  const registry = ((globalThis as Record<symbol, unknown>)[ENGINES] ??= new Map()) as Registry;
  const current = registry.get(enginePath);
  const environment = environmentPrint();
  if (current !== undefined && current.usable(environment)) return current;
  current?.retire();
  const started = new WorkerEngine(enginePath, environment);
  registry.set(enginePath, started);
  try {
    await started.ready;
  } catch (error) {
    if (registry.get(enginePath) === started) registry.delete(enginePath);
    throw error;
  }
  return started;
}

/**
 * A digest of the environment the engine would start with: it reads provider keys, base URLs,
 * upstreams and the secrets to redact from it once, at start, so a test that changed any variable
 * gets an engine started with its own environment, as it did when every test started one.
 */
function environmentPrint(): string {
  const entries = Object.entries(process.env)
    .filter(([name]) => !name.startsWith("VITEST"))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256").update(JSON.stringify(entries)).digest("hex");
}

// Where a session's id stands in a template's variables (`.../r/<id>/openai/v1`); the engine's own.
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
  private readonly child: ChildProcessWithoutNullStreams;
  // Whoever waits for each answer still to come, in the order the requests were written: the engine
  // answers in that order.
  private readonly awaiting: Array<(reply: Reply) => void> = [];
  // Templates by fixture, mode and guard (see the module comment), and the sessions made from each.
  private readonly templates = new Map<string, Template>();
  private readonly made = new Map<string, string>();
  private stderr = "";
  private exitCode: number | null | undefined; // undefined while it runs

  constructor(
    private readonly enginePath: string,
    private readonly environment: string,
  ) {
    this.child = spawn(enginePath, ["serve"], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.setEncoding("utf8").on("data", (text: string) => {
      this.stderr = (this.stderr + text).slice(-STDERR_KEPT);
    });
    this.child.stdin.on("error", () => undefined); // writing to an engine that died: its `close` says so
    createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on("line", (line) => this.deliver(line));
    this.child.once("close", (code) => {
      this.exitCode = code;
      for (const waiting of this.awaiting.splice(0)) waiting(undefined);
    });
    // The worker must be free to end while its engine idles; the engine then reads the end of its input.
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) (stream as unknown as { unref(): void }).unref();
    this.ready = this.start(this.expect()); // its first line, {"ready": ...}, comes unasked
  }

  /** True while it runs and was started with this environment. */
  usable(environment: string): boolean {
    return this.exitCode === undefined && this.environment === environment;
  }

  /** End it: it exits when its input ends. */
  retire(): void {
    this.child.stdin.end();
  }

  async open(spec: SessionSpec): Promise<OpenSession> {
    const open = { fixtures: [spec.fixture], mode: spec.mode, no_live: spec.noLive };
    const key = JSON.stringify(open);
    const template = this.templates.get(key);
    if (template !== undefined && this.exitCode === undefined) {
      const nonce = randomBytes(8).toString("hex"); // as random as the engine's own ids
      const id = template.prefix + nonce + createHmac("sha256", template.key).update(nonce).digest("hex").slice(0, 16);
      this.made.set(id, key);
      return { id, env: withId(template.env, id) };
    }
    const reply = await this.request({ open: { ...open, ahead: true } }, "opening this replay");
    const id = reply.id as string;
    const env = reply.env as Record<string, string>;
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
    const reply = await this.request(bypass ? { close: id, bypass } : { close: id }, "serving this replay");
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

  /** The answer a call that went around the replay gets, in the engine's words. */
  async refusal(host: string): Promise<Refusal> {
    return (await this.request({ refusal: { host, runner: "vitest" } }, "serving this replay")) as unknown as Refusal;
  }

  private async start(first: Promise<Reply>): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.child.once("spawn", resolve);
      this.child.once("error", (error: NodeJS.ErrnoException) => reject(cannotRun(this.enginePath, error)));
    });
    const ready = await first;
    if (ready === undefined || !("ready" in ready)) {
      this.child.kill();
      const code = await this.exited();
      throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, this.stderr));
    }
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
    this.child.stdin.write(JSON.stringify(message) + "\n");
    return reply;
  }

  private checked(reply: Reply, doing: string): Record<string, unknown> {
    if (reply === undefined) throw this.died(doing);
    if (typeof reply.error === "string") throw new ReplayError(`attest replay: ${reply.error}`);
    return reply;
  }

  private died(doing: string): ReplayError {
    const error = new ReplayError(
      engineFailure(`attest replay: the replay engine exited while ${doing}; the next test gets a new engine`, this.stderr),
    );
    error.stack = `${error.name}: ${error.message}`; // one line: the engine's end is the story
    return error;
  }

  /** The next answer, in the order asked; undefined once the engine has exited. */
  private expect(): Promise<Reply> {
    if (this.exitCode !== undefined) return Promise.resolve(undefined);
    // Awaited, an answer keeps the process alive (idle, the engine does not: see the constructor).
    (this.child.stdout as unknown as { ref(): void }).ref();
    return new Promise((resolve) => this.awaiting.push(resolve));
  }

  /** An answer to whoever asked first; anything that is not a JSON object line is skipped. */
  private deliver(line: string): void {
    const message = parse(line);
    if (message === undefined) return;
    const waiting = this.awaiting.shift();
    if (this.awaiting.length === 0) (this.child.stdout as unknown as { unref(): void }).unref();
    waiting?.(message);
  }

  private exited(): Promise<number | null> {
    if (this.exitCode !== undefined) return Promise.resolve(this.exitCode);
    return new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
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
  const why = error.code === "ENOENT" ? "not found" : error.message;
  return new ReplayError(
    `attest replay: cannot run ${enginePath}: ${why}; install attest-toolkit (pip install attest-toolkit) or pass enginePath`,
  );
}

function engineFailure(what: string, stderr: string): string {
  const last = stderr.trim().split("\n").filter(Boolean).pop();
  return last ? `${what}: ${last}` : what;
}
