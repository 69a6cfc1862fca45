/**
 * Provider calls that go around a running replay, made loud (the pytest helper's bypass, for Node).
 *
 * A client built before useReplay (a module-level `new OpenAI()`) read the provider's URL when it was
 * built, so its calls go straight to the provider. Node's global fetch, which the official openai and
 * @anthropic-ai/sdk packages use, sends every request through undici's global dispatcher, looked up
 * afresh for each request; while a replay runs, a wrapper around that dispatcher watches requests to
 * provider hosts:
 *
 * - blocking (strict, or the egress guard on): the request is never sent. The agent gets the
 *   provider-shaped error a miss gets (which the SDKs do not retry), or the egress guard's error when
 *   the guard is on, and the engine counts a miss naming the host and the likely cause, which fails
 *   the test.
 * - auto: the request goes out; its answer is kept as it is read, and the engine counts it as a live
 *   call and prices it when the replay ends, like a miss it forwarded itself.
 *
 * Other hosts are untouched. A client given its own `fetch` or HTTP agent is not watched: the egress
 * guard (and network isolation) cover it.
 */
/** An answer the engine wrote for a blocked call. */
export interface Refusal {
    status: number;
    headers: [string, string][];
    body: string;
}
/** One call that went out, as the engine prices it: the answer's bytes (base64) once fully read. */
export interface BypassedCall {
    model: string | null;
    content_type: string | null;
    content_encoding: string | null;
    body: string | null;
}
/** What went around one replay, sent with its close (the engine's `bypass.reported`). */
export interface BypassReport {
    runner: "vitest";
    fixture: string;
    blocked: string[];
    live: BypassedCall[];
}
/** What one replay watches: the calls it blocked, the calls it let out. */
export declare class Watch {
    private readonly fixture;
    readonly blocks: boolean;
    readonly refuse: (host: string) => Promise<Refusal>;
    readonly blocked: string[];
    private readonly live;
    constructor(fixture: string, blocks: boolean, refuse: (host: string) => Promise<Refusal>);
    /** Count a call that goes out; its model and answer are filled in as they pass. */
    goingOut(): {
        call: BypassedCall;
        chunks: Buffer[];
        done: boolean;
    };
    /** The report for the engine, or undefined when nothing went around. An answer not read to its end is sent unpriced. */
    report(): BypassReport | undefined;
}
/** Watch provider calls through the global dispatcher until the returned function is called; it returns the report. */
export declare function watch(current: Watch): () => BypassReport | undefined;
