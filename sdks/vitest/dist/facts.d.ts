/** What a test's replays add to its result: the facts report-v2 keeps, carried in the task's meta. */
import type { LiveCall, Miss, ReplaySummary } from "./engine.js";
import type { Mode } from "./mode.js";
export interface Location {
    file: string;
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
    miss?: Omit<Miss, "fixture"> & {
        fixture: string;
        location?: Location;
    };
}
/** `task.meta.attest`: the facts, and how the verdict changed the test. */
export interface AttestMeta {
    replay: ReplayFacts;
    outcome?: "not_evaluated";
    message?: string;
    egress?: "block";
}
/** The test's replays summed up, with its first miss (as the pytest helper reports them). */
export declare function replayFacts(summaries: ReadonlyArray<ReplaySummary & {
    fixture: string;
}>, location: Location | undefined): ReplayFacts;
/**
 * Where the agent's call was made: the innermost stack frame, in the errors the test failed with,
 * that is in the repository's own code (under `root`, outside node_modules).
 */
export declare function missLocation(errors: ReadonlyArray<{
    stack?: string;
}>, root: string): Location | undefined;
