/** The replay mode: from the argument, else ATTEST_REPLAY, else strict when CI is set and auto locally. */
import { readFileSync } from "node:fs";
// The modes' one vocabulary, shared with the toolkit's enums: copied into the package beside this
// module at build (scripts/copy-data.mjs).
const WORDS = JSON.parse(readFileSync(new URL("./modes.json", import.meta.url), "utf8"));
export const MODES = WORDS.modes;
/** The words as an error names them: `strict, auto or off`. */
function spelled(words) {
    return words.length === 1 ? words[0] : `${words.slice(0, -1).join(", ")} or ${words[words.length - 1]}`;
}
/** A replay that cannot start or is used wrongly: a one-line message, no engine left running. */
export class ReplayError extends Error {
    constructor(message) {
        super(message);
        this.name = "ReplayError";
    }
}
function truthy(value) {
    return !WORDS.ci_false.includes((value ?? "").trim().toLowerCase());
}
/** strict when CI is set, so a pull-request check never goes live by accident; auto locally. */
export function defaultMode(env = process.env) {
    return truthy(env.CI) ? "strict" : "auto";
}
/** The mode a replay runs in; Vitest reads only the argument and ATTEST_REPLAY (no command-line flag). */
export function resolveMode(mode, env = process.env) {
    const chosen = mode ?? (env.ATTEST_REPLAY?.trim() || undefined) ?? defaultMode(env);
    if (!MODES.includes(chosen)) {
        const source = mode === undefined ? "ATTEST_REPLAY" : "mode";
        throw new ReplayError(`attest replay: ${source} must be ${spelled(MODES)}, not ${JSON.stringify(chosen)}`);
    }
    return chosen;
}
/** ATTEST_STRICT=1: an auto-mode miss that could not go live fails instead of being skipped. */
export function strictMisses(env = process.env) {
    return ["1", "true", "yes", "on"].includes((env.ATTEST_STRICT ?? "").trim().toLowerCase());
}
/** ATTEST_EGRESS=block turns the egress guard on for every replay (and the whole test file). */
export function egressFromEnv(env = process.env) {
    return (env.ATTEST_EGRESS ?? "").trim().toLowerCase() === "block" ? "block" : "off";
}
/** ATTEST_REPLAY=off: no replay runs, so nothing starts an engine ahead of one. */
export function replayIsOff(env = process.env) {
    return env.ATTEST_REPLAY?.trim().toLowerCase() === "off";
}
//# sourceMappingURL=mode.js.map