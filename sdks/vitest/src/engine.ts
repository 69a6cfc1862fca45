/**
 * One `attest-engine serve` per Vitest worker: it prints {"ready": ...}, then answers one JSON line per
 * request line ({"open": {...}} or {"close": id}) until its standard input ends, so it ends with the
 * worker that started it. Each replay is one session on it: a test pays two lines, not a process start.
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash } from "node:crypto";
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

export class WorkerEngine {
  readonly ready: Promise<void>;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly replies: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private queue: Promise<unknown> = Promise.resolve();
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
      this.deliver(undefined);
    });
    // The worker must be free to end while its engine idles; the engine then reads the end of its input.
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) (stream as unknown as { unref(): void }).unref();
    this.ready = this.start();
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
    const reply = await this.request({ open: { fixtures: [spec.fixture], mode: spec.mode, no_live: spec.noLive } }, "opening this replay");
    return { id: reply.id as string, env: reply.env as Record<string, string> };
  }

  /** End the session; the engine counts what went around it (`bypass`) in its summary. */
  async close(id: string, bypass?: BypassReport): Promise<ReplaySummary> {
    const reply = await this.request(bypass ? { close: id, bypass } : { close: id }, "serving this replay");
    return reply.summary as ReplaySummary;
  }

  /** The answer a call that went around the replay gets, in the engine's words. */
  async refusal(host: string): Promise<Refusal> {
    return (await this.request({ refusal: { host, runner: "vitest" } }, "serving this replay")) as unknown as Refusal;
  }

  private async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.child.once("spawn", resolve);
      this.child.once("error", (error: NodeJS.ErrnoException) => reject(cannotRun(this.enginePath, error)));
    });
    const ready = await this.nextMessage();
    if (ready === undefined || !("ready" in ready)) {
      this.child.kill();
      const code = await this.exited();
      throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, this.stderr));
    }
  }

  /** One request and its reply, after any request before it. */
  private request(message: Record<string, unknown>, doing: string): Promise<Record<string, unknown>> {
    const turn = this.queue.then(async () => {
      await this.ready;
      if (this.exitCode !== undefined) throw this.died(doing);
      this.child.stdin.write(JSON.stringify(message) + "\n");
      const reply = await this.nextMessage();
      if (reply === undefined) throw this.died(doing);
      if (typeof reply.error === "string") throw new ReplayError(`attest replay: ${reply.error}`);
      return reply;
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private died(doing: string): ReplayError {
    const error = new ReplayError(
      engineFailure(`attest replay: the replay engine exited while ${doing}; the next test gets a new engine`, this.stderr),
    );
    error.stack = `${error.name}: ${error.message}`; // one line: the engine's end is the story
    return error;
  }

  private deliver(line: string | undefined): void {
    if (this.waiting !== undefined) {
      const waiting = this.waiting;
      this.waiting = undefined;
      (this.child.stdout as unknown as { unref(): void }).unref();
      waiting(line);
    } else if (line !== undefined) {
      this.replies.push(line);
    }
  }

  /** The next line it printed; undefined once it has exited. */
  private nextLine(): Promise<string | undefined> {
    const line = this.replies.shift();
    if (line !== undefined || this.exitCode !== undefined) return Promise.resolve(line);
    // Awaited, the reply keeps the process alive (idle, the engine does not: see the constructor).
    (this.child.stdout as unknown as { ref(): void }).ref();
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** The next JSON object line it printed, skipping anything else; undefined once it has exited. */
  private async nextMessage(): Promise<Record<string, unknown> | undefined> {
    for (;;) {
      const line = await this.nextLine();
      if (line === undefined) return undefined;
      const message = parse(line);
      if (message !== undefined) return message;
    }
  }

  private exited(): Promise<number | null> {
    if (this.exitCode !== undefined) return Promise.resolve(this.exitCode);
    return new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
  }
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
