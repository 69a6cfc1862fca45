/** The replay mode: from the argument, else ATTEST_REPLAY, else strict when CI is set and auto locally. */
/** The type checker's spelling of the modes; test/contract.test.ts keeps it equal to the shared file. */
export type Mode = "strict" | "auto" | "off";
export declare const MODES: readonly Mode[];
/** A replay that cannot start or is used wrongly: a one-line message, no engine left running. */
export declare class ReplayError extends Error {
    constructor(message: string);
}
/** strict when CI is set, so a pull-request check never goes live by accident; auto locally. */
export declare function defaultMode(env?: NodeJS.ProcessEnv): Mode;
/** The mode a replay runs in; Vitest reads only the argument and ATTEST_REPLAY (no command-line flag). */
export declare function resolveMode(mode: string | undefined, env?: NodeJS.ProcessEnv): Mode;
/** ATTEST_STRICT=1: an auto-mode miss that could not go live fails instead of being skipped. */
export declare function strictMisses(env?: NodeJS.ProcessEnv): boolean;
/** ATTEST_EGRESS=block turns the egress guard on for every replay (and the whole test file). */
export declare function egressFromEnv(env?: NodeJS.ProcessEnv): "block" | "off";
/** ATTEST_REPLAY=off: no replay runs, so nothing starts an engine ahead of one. */
export declare function replayIsOff(env?: NodeJS.ProcessEnv): boolean;
