/** The replay mode: from the argument, else ATTEST_REPLAY, else strict when CI is set and auto locally. */

import { readFileSync } from "node:fs";

interface Vocabulary {
  modes: string[];
  ci_false: string[];
}

// The modes' one vocabulary, shared with the toolkit's enums: copied into the package beside this
// module at build (scripts/copy-data.mjs).
const WORDS: Vocabulary = JSON.parse(readFileSync(new URL("./modes.json", import.meta.url), "utf8"));

/** The type checker's spelling of the modes; test/contract.test.ts keeps it equal to the shared file. */
export type Mode = "strict" | "auto" | "off";
export const MODES: readonly Mode[] = WORDS.modes as Mode[];

/** The words as an error names them: `strict, auto or off`. */
function spelled(words: readonly string[]): string {
  return words.length === 1 ? words[0] : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}

/** A replay that cannot start or is used wrongly: a one-line message, no engine left running. */
export class ReplayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplayError";
  }
}

function truthy(value: string | undefined): boolean {
  return !WORDS.ci_false.includes((value ?? "").trim().toLowerCase());
}

/** strict when CI is set, so a pull-request check never goes live by accident; auto locally. */
export function defaultMode(env: NodeJS.ProcessEnv = process.env): Mode {
  return truthy(env.CI) ? "strict" : "auto";
}

/** The mode a replay runs in; Vitest reads only the argument and ATTEST_REPLAY (no command-line flag). */
export function resolveMode(mode: string | undefined, env: NodeJS.ProcessEnv = process.env): Mode {
  const chosen = mode ?? (env.ATTEST_REPLAY?.trim() || undefined) ?? defaultMode(env);
  if (!(MODES as readonly string[]).includes(chosen)) {
    const source = mode === undefined ? "ATTEST_REPLAY" : "mode";
    throw new ReplayError(`attest replay: ${source} must be ${spelled(MODES)}, not ${JSON.stringify(chosen)}`);
  }
  return chosen as Mode;
}

/** ATTEST_STRICT=1: an auto-mode miss that could not go live fails instead of being skipped. */
export function strictMisses(env: NodeJS.ProcessEnv = process.env): boolean {
  return ["1", "true", "yes", "on"].includes((env.ATTEST_STRICT ?? "").trim().toLowerCase());
}

/** ATTEST_EGRESS=block turns the egress guard on for every replay (and the whole test file). */
export function egressFromEnv(env: NodeJS.ProcessEnv = process.env): "block" | "off" {
  return (env.ATTEST_EGRESS ?? "").trim().toLowerCase() === "block" ? "block" : "off";
}

/** ATTEST_REPLAY=off: no replay runs, so nothing starts an engine ahead of one. */
export function replayIsOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.ATTEST_REPLAY?.trim().toLowerCase() === "off";
}
