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
import { type ReplaySummary } from "./engine.js";
import { type Mode } from "./mode.js";
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
export declare const DEFAULT_FIXTURES_DIR = "tests/attest/fixtures";
/** Start a replay for the rest of the current test (see the module comment). */
export declare function useReplay(name: string, options?: ReplayOptions): Promise<ReplayHandle>;
