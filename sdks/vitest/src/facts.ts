/** What a test's replays add to its result: the facts report-v2 keeps, carried in the task's meta. */

import path from "node:path";
import { fileURLToPath } from "node:url";

import type { LiveCall, Miss, ReplaySummary } from "./engine.js";
import type { Mode } from "./mode.js";

export interface Location {
  file: string; // absolute in the test worker; the reporter makes it repository-relative
  line: number;
}

export interface ReplayFacts {
  fixtures: string[];
  mode: Mode;
  replayed: number;
  live: number;
  live_cost_usd: number;
  unpriced: number;
  misses: number;
  live_calls?: LiveCall[];
  miss?: Omit<Miss, "fixture"> & { fixture: string; location?: Location };
}

/** `task.meta.attest`: the facts, and how the verdict changed the test. */
export interface AttestMeta {
  replay: ReplayFacts;
  outcome?: "not_evaluated";
  message?: string;
  egress?: "block";
}

/** The test's replays summed up, with its first miss (as the pytest helper reports them). */
export function replayFacts(
  summaries: ReadonlyArray<ReplaySummary & { fixture: string }>,
  location: Location | undefined,
): ReplayFacts {
  const sum = (key: "replayed" | "live" | "live_cost_usd" | "unpriced"): number =>
    summaries.reduce((total, s) => total + s[key], 0);
  const misses = summaries.flatMap((s) => s.miss_list);
  const facts: ReplayFacts = {
    fixtures: [...new Set(summaries.map((s) => s.fixture))].sort(),
    mode: summaries[summaries.length - 1].mode,
    replayed: sum("replayed"),
    live: sum("live"),
    live_cost_usd: Math.round(sum("live_cost_usd") * 1e6) / 1e6,
    unpriced: sum("unpriced"),
    misses: misses.length,
  };
  const liveCalls = summaries.flatMap((s) => s.live_list ?? []);
  if (liveCalls.length > 0) facts.live_calls = liveCalls;
  if (misses.length > 0) {
    const first = misses[0];
    facts.miss = { message: first.message, component: first.component, fixture: first.fixture, not_evaluated: first.not_evaluated };
    if (first.paths?.length) facts.miss.paths = first.paths;
    if (location) facts.miss.location = location;
  }
  return facts;
}

// A V8 stack frame: "at fn (file:line:col)" or "at file:line:col".
const FRAME = /^\s*at (?:.*? \()?(.+?):(\d+):\d+\)?$/;

/**
 * Where the agent's call was made: the innermost stack frame, in the errors the test failed with,
 * that is in the repository's own code (under `root`, outside node_modules).
 */
export function missLocation(errors: ReadonlyArray<{ stack?: string }>, root: string): Location | undefined {
  for (const error of errors) {
    for (const line of (error.stack ?? "").split("\n")) {
      const match = FRAME.exec(line);
      if (!match) continue;
      const file = match[1].startsWith("file://") ? fileURLToPath(match[1]) : match[1];
      const relative = path.relative(root, file);
      if (!path.isAbsolute(file) || relative.startsWith("..") || relative.split(path.sep).includes("node_modules")) continue;
      return { file, line: Number(match[2]) };
    }
  }
  return undefined;
}
