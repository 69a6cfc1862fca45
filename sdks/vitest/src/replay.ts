/**
 * `useReplay(name)`: the test's model traffic is served from `tests/attest/fixtures/<name>.attest.json`
 * until the test ends.
 *
 *     it("replays inc-1042", async () => {
 *       await useReplay("inc-1042");
 *       const result = await runRefundAgent("O-1042"); // construct model clients after the call
 *     });
 *
 * The verdict is given in an `onTestFinished` hook, after the test body and its afterEach hooks: a
 * strict miss fails the test with the miss message whatever the agent caught, and clears the task's
 * `fails` flag first, so `it.fails` cannot turn the miss into a pass (Vitest flips the result of a
 * `fails` test only after these hooks ran). An auto miss that could not go live skips the test as
 * `not_evaluated: replay_miss`, which Vitest never flips either.
 */

import path from "node:path";

import { onTestFinished, type TestContext, TestRunner } from "vitest";

import * as bypass from "./bypass.js";
import { DEFAULT_ENGINE, type OpenSession, type ReplaySummary, type WorkerEngine, workerEngine } from "./engine.js";
import * as guard from "./guard/index.js";
import * as lane from "./lane.js";
import { type AttestMeta, type Location, missLocation, type SessionSummary } from "./facts.js";
import { repositoryRoot } from "./paths.js";
import { egressFromEnv, type Mode, ReplayError, resolveMode, strictMisses } from "./mode.js";

export interface ReplayOptions {
  /** strict, auto or off; default ATTEST_REPLAY, else strict when CI is set, else auto. */
  mode?: Mode;
  /** Where `<name>.attest.json` lives; default tests/attest/fixtures, relative to the working directory. */
  fixturesDir?: string;
  /** The engine to start; default `attest-engine` on PATH. */
  enginePath?: string;
  /** "block": connections to provider hosts fail until the test ends, and the engine never goes live. */
  egress?: "block" | "off";
  /**
   * Faults injected into this replay's model requests, each `[call=N:|every:]KIND[,PARAM=VALUE]`
   * (status=CODE, timeout, disconnect, cut=K, latency=MS, pace=MS): see the faults guide.
   */
  faults?: string[];
}

/** The running replay, returned by useReplay; `stop()` ends it before the test does. */
export interface ReplayHandle {
  readonly name: string;
  readonly mode: Mode;
  /** The variables the replay set (empty in off mode). */
  readonly env: Readonly<Record<string, string>>;
  stop(): Promise<ReplaySummary | undefined>;
}

export const DEFAULT_FIXTURES_DIR = "tests/attest/fixtures";
const SUFFIX = ".attest.json";
const GUARD_LIVE = "attest egress guard: a live model call was recorded while blocking";

// The replay that owns the process-wide variables right now.
let active: { name: string } | undefined;

// What each test's replays reported, collected until its verdict.
interface TaskState {
  summaries: SessionSummary[];
  guard: boolean;
}
const states = new WeakMap<object, TaskState>();
// What a test's earlier attempts missed (Vitest's `retry` and `repeats` run the same task again): a
// miss is never an expected failure, so a later attempt that passes must not retry it away.
interface Missed {
  summaries: TaskState["summaries"];
  location: Location | undefined;
}
const missed = new WeakMap<object, Missed>();

/** Start a replay for the rest of the current test (see the module comment). */
export async function useReplay(name: string, options: ReplayOptions = {}): Promise<ReplayHandle> {
  const mode = resolveMode(options.mode);
  if (mode === "off") return { name, mode, env: {}, stop: async () => undefined };
  if (active !== undefined) {
    throw new ReplayError(
      `attest replay: ${JSON.stringify(active.name)} is still running; only one replay runs at a time ` +
        "in a process (it sets process-wide environment variables)",
    );
  }
  const block = (options.egress ?? egressFromEnv()) === "block";
  const state = taskState(block);
  const fixture = path.resolve(options.fixturesDir ?? DEFAULT_FIXTURES_DIR, name + SUFFIX);
  const owner = { name };
  active = owner;
  let engine: WorkerEngine;
  let session: OpenSession;
  try {
    engine = await workerEngine(options.enginePath ?? DEFAULT_ENGINE);
    session = await engine.open({ fixture, mode, noLive: block, faults: options.faults ?? [] });
  } catch (error) {
    active = undefined;
    throw error;
  }
  if (block) guard.install();
  const unwatch = bypass.watch(new bypass.Watch(name, mode === "strict" || block, (host) => engine.refusal(host)));
  const unroute = lane.route(engine.origin, (call) => engine.call(call));
  const saved = Object.fromEntries(Object.keys(session.env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, session.env);

  let stopping: Promise<ReplaySummary> | undefined;
  const stop = (): Promise<ReplaySummary> => {
    if (stopping === undefined) {
      restore(saved);
      unroute();
      if (block) guard.uninstall();
      if (active === owner) active = undefined;
      stopping = engine.close(session.id, unwatch());
    }
    return stopping;
  };
  onTestFinished(async () => {
    state.summaries.push({ ...(await stop()), fixture });
  });
  return { name, mode, env: { ...session.env }, stop };
}

/** The current test's state; its first replay registers the hook that gives the verdict. */
function taskState(block: boolean): TaskState {
  const task = TestRunner.getCurrentTest();
  if (!task) throw new ReplayError("attest replay: useReplay() must be called inside a test (or a beforeEach hook)");
  let state = states.get(task);
  if (state === undefined) {
    state = { summaries: [], guard: block };
    states.set(task, state);
    const registered = state;
    // onTestFinished hooks run last-registered first: this verdict runs after every replay stopped.
    onTestFinished((context) => verdict(context, registered));
  }
  state.guard ||= block;
  return state;
}

function restore(saved: Record<string, string | undefined>): void {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
}

/** Fail, skip or leave the test, from what its replays reported. */
function verdict(context: TestContext, state: TaskState): void {
  states.delete(context.task);
  const task = context.task;
  const earlier = missed.get(task);
  const summaries = [...(earlier?.summaries ?? []), ...state.summaries];
  if (summaries.length === 0) return;
  const miss = summaries.flatMap((s) => s.miss_list)[0]; // the first miss is the one shown
  const location = miss ? (earlier?.location ?? missAt(task)) : undefined;
  if (miss) missed.set(task, { summaries: summaries.filter((s) => s.miss_list.length > 0), location });
  const meta: AttestMeta = { sessions: summaries };
  if (location) meta.location = location;
  if (state.guard) meta.egress = "block";
  (task.meta as Record<string, unknown>).attest = meta;
  if (state.guard && summaries.some((s) => s.live > 0)) {
    fail(context, meta, GUARD_LIVE);
  } else if (miss && (!miss.not_evaluated || strictMisses())) {
    fail(context, meta, miss.message);
  } else if (miss) {
    meta.outcome = "not_evaluated";
    meta.message = `not_evaluated: replay_miss: ${miss.message}`;
    context.skip(meta.message);
  }
}

/** Where the test's miss was made, from the errors it failed with; undefined when no frame is the repository's. */
function missAt(task: TestContext["task"]): Location | undefined {
  const errors = task.result?.state === "fail" ? (task.result.errors ?? []) : [];
  return missLocation(errors, repositoryRoot(process.cwd()));
}

/** A miss is never an expected failure: fail whatever the agent raised and whatever the test's flags. */
function fail(context: TestContext, meta: AttestMeta, message: string): never {
  const task = context.task;
  const original = task.result?.state === "fail" ? task.result.errors?.[0]?.message : undefined;
  (task as { fails?: boolean }).fails = false;
  if (task.result) task.result.errors = undefined;
  meta.message = message;
  const error = new ReplayError(original ? `${message}\n\n(the agent then failed with)\n${original}` : message);
  error.stack = `${error.name}: ${error.message}`; // the miss is the story; the hook's frames are noise
  throw error;
}
