/**
 * One `attest-engine replay --serve` process: it prints {"env": {...}}, serves the fixture until a
 * stop line arrives on its standard input, then prints {"summary": {...}} and exits.
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

import { ReplayError, type Mode } from "./mode.js";

/** One miss as the engine reports it. */
export interface Miss {
  message: string;
  component: string;
  fixture: string;
  not_evaluated: boolean;
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

export interface ServeOptions {
  enginePath: string;
  fixture: string;
  mode: Mode;
  noLive: boolean;
}

// What the engine printed on standard error, kept short for the error message.
const STDERR_KEPT = 4000;

/** A running `--serve` session; `env` points the provider SDKs at it. */
export class ServeSession {
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly env: Record<string, string>,
    private readonly lines: AsyncIterator<string>,
    private readonly exited: Promise<number | null>,
    private readonly output: { stderr: string },
  ) {}

  /** Start the engine and wait for its {"env"} line. */
  static async start(options: ServeOptions): Promise<ServeSession> {
    const args = ["replay", "--serve", "--fixture", options.fixture, "--mode", options.mode];
    if (options.noLive) args.push("--no-live");
    const child = spawn(options.enginePath, args, { stdio: ["pipe", "pipe", "pipe"] });
    const output = { stderr: "" };
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      output.stderr = (output.stderr + text).slice(-STDERR_KEPT);
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (error: NodeJS.ErrnoException) => reject(cannotRun(options.enginePath, error)));
    });
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    await spawned;
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
    const first = await readMessage(lines, "env");
    if (first === undefined) {
      const code = await exited;
      throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, output.stderr));
    }
    return new ServeSession(child, first as Record<string, string>, lines, exited, output);
  }

  /** Send the stop line and read the summary. */
  async stop(): Promise<ReplaySummary> {
    this.child.stdin.end("stop\n");
    const summary = await readMessage(this.lines, "summary");
    const code = await this.exited;
    if (summary === undefined) {
      throw new ReplayError(engineFailure(`attest-engine exited ${code} without a summary`, this.output.stderr));
    }
    return summary as unknown as ReplaySummary;
  }
}

/** The value of the next {"<key>": value} line, skipping anything else; undefined at end of output. */
async function readMessage(lines: AsyncIterator<string>, key: string): Promise<Record<string, unknown> | undefined> {
  for (;;) {
    const next = await lines.next();
    if (next.done) return undefined;
    try {
      const message = JSON.parse(next.value) as Record<string, unknown>;
      if (message && typeof message === "object" && key in message) return message[key] as Record<string, unknown>;
    } catch {
      // not a protocol line
    }
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
