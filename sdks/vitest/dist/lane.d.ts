/**
 * The lane: while a replay runs, a call this process makes with Node's global `fetch` to the worker's
 * engine is answered without HTTP. The official openai and @anthropic-ai/sdk packages, and most others,
 * call `fetch`. A call the engine answered before in a session of the same fixture is answered in this
 * process from the session's hit table (./hits.js), the engine told in one line it does not answer; any
 * other goes to the engine on the link the worker already holds (./engine.js), one line each way.
 *
 * Either way the answer is exactly what the engine's HTTP fast path would send: the recording, taken
 * and counted, with its head and its body one chunk per recorded event (a stream's events arrive as
 * they would). Anything else (a miss, a live call, lenient matching, an ended session, a body fetch
 * would stream) is answered "not here" with nothing taken, and the call goes over HTTP as before,
 * where the engine diagnoses and counts it. A call made with a `Request`, or a body that is not bytes
 * or text, goes over HTTP too; so do clients given their own `fetch`, subprocesses and other languages.
 * `ATTEST_LANE=off` sends every call over HTTP, as it does for the pytest helper's lane.
 *
 * The lane steps aside when something else replaced `fetch` since the package was loaded (a spy, msw,
 * a polyfill): that `fetch` stays in charge and sees every call, which goes over HTTP through it.
 */
/** A call as the engine's fast path reads it (replay/fastpath.py, answer_call). */
export interface Call {
    method: string;
    target: string;
    body: string;
    content_type: string | null;
    content_encoding: string | null;
}
/** A hit: the HTTP head the engine would have sent, and the body's chunks. */
export interface Hit {
    head: string;
    chunks: Uint8Array[];
}
export type Ask = (call: Call) => Promise<Hit | undefined>;
/**
 * Send this process's `fetch` calls to the engine at `origin` over `ask` until the returned function
 * is called. `globalThis.fetch` is wrapped meanwhile; a client that kept the wrapper uses HTTP after.
 * Nothing is wrapped with ATTEST_LANE=off, or when another fetch is in charge (see the module comment).
 */
export declare function route(origin: string, ask: Ask): () => void;
