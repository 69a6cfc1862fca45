/**
 * What a test's replays add to its result, carried in the task's meta: the engine's own summaries of
 * its sessions, as they are. The reporter sends them to `attest-engine report`, which computes the
 * row's facts with the function the pytest helper uses, so both runners report the same facts.
 */

import path from "node:path";
import { fileURLToPath } from "node:url";

import type { ReplaySummary } from "./engine.js";

export interface Location {
  file: string; // absolute in the test worker; the reporter makes it repository-relative
  line: number;
}

/** One replay session's summary, with the fixture file it replayed (absolute in the worker). */
export type SessionSummary = ReplaySummary & { fixture: string };

/** `task.meta.attest`: the test's sessions, where its miss was made, and how the verdict changed the test. */
export interface AttestMeta {
  sessions: SessionSummary[];
  location?: Location;
  outcome?: "not_evaluated";
  message?: string;
  egress?: "block";
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
