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
import * as guard from "./guard/index.js";
// Where undici (Node's fetch, and the undici package) keeps the global dispatcher.
const GLOBAL_DISPATCHER = Symbol.for("undici.globalDispatcher.1");
/** What one replay watches: the calls it blocked, the calls it let out. */
export class Watch {
    fixture;
    blocks;
    refuse;
    blocked = [];
    live = [];
    constructor(fixture, blocks, refuse) {
        this.fixture = fixture;
        this.blocks = blocks;
        this.refuse = refuse;
    }
    /** Count a call that goes out; its model and answer are filled in as they pass. */
    goingOut() {
        const entry = { call: { model: null, content_type: null, content_encoding: null, body: null }, chunks: [], done: false };
        this.live.push(entry);
        return entry;
    }
    /** The report for the engine, or undefined when nothing went around. An answer not read to its end is sent unpriced. */
    report() {
        if (this.blocked.length === 0 && this.live.length === 0)
            return undefined;
        const live = this.live.map(({ call, chunks, done }) => ({ ...call, body: done ? Buffer.concat(chunks).toString("base64") : null }));
        return { runner: "vitest", fixture: this.fixture, blocked: [...this.blocked], live };
    }
}
/** Watch provider calls through the global dispatcher until the returned function is called; it returns the report. */
export function watch(current) {
    const slot = globalThis;
    void globalThis.Response; // loading Node's fetch sets its global dispatcher
    const inner = slot[GLOBAL_DISPATCHER];
    if (inner === undefined || typeof inner.dispatch !== "function")
        return () => current.report();
    const wrapper = new Proxy(inner, {
        get(target, property) {
            if (property === "dispatch")
                return (options, handler) => dispatch(target, current, options, handler);
            const value = Reflect.get(target, property, target);
            return typeof value === "function" ? value.bind(target) : value;
        },
    });
    slot[GLOBAL_DISPATCHER] = wrapper;
    return () => {
        if (slot[GLOBAL_DISPATCHER] === wrapper)
            slot[GLOBAL_DISPATCHER] = inner;
        return current.report();
    };
}
function dispatch(inner, current, options, handler) {
    const host = hostOf(options.origin);
    // A handler of another form (a later undici's) is passed on unwatched rather than broken.
    if (host === undefined || !guard.isBlockedHost(host) || typeof handler.onHeaders !== "function")
        return inner.dispatch(options, handler);
    if (current.blocks) {
        current.blocked.push(host);
        // With the egress guard on, the guard refuses the connection in its own words (the test still
        // fails with the engine's line, the guard's error after it).
        if (guard.installed())
            return inner.dispatch(options, handler);
        void answer(handler, current.refuse(host));
        return true;
    }
    const entry = current.goingOut();
    return inner.dispatch({ ...options, body: teeBody(options.body, (sent) => (entry.call.model = modelOf(sent))) }, teeHandler(handler, entry));
}
function hostOf(origin) {
    try {
        return origin === undefined ? undefined : new URL(origin).hostname.replace(/^\[(.*)\]$/, "$1");
    }
    catch {
        return undefined;
    }
}
/** Answer the request with the engine's refusal, as a server would. */
async function answer(handler, refusal) {
    try {
        const { status, headers, body } = await refusal;
        const raw = [["content-type", "application/json"], ...headers].flat().map((text) => Buffer.from(text, "latin1"));
        handler.onConnect?.(() => undefined);
        handler.onHeaders?.(status, raw, () => undefined, "Bad Request");
        handler.onData?.(Buffer.from(body, "utf8"));
        handler.onComplete?.([]);
    }
    catch (error) {
        handler.onError?.(error);
    }
}
/** The request body, passed through unchanged; `seen` gets all of it once sent. */
function teeBody(body, seen) {
    if (typeof body === "string" || body instanceof Uint8Array) {
        seen(Buffer.from(body));
        return body;
    }
    if (body === null || typeof body !== "object" || !(Symbol.asyncIterator in body))
        return body;
    const source = body;
    return (async function* () {
        const chunks = [];
        for await (const chunk of source) {
            chunks.push(Buffer.from(chunk));
            yield chunk;
        }
        seen(Buffer.concat(chunks));
    })();
}
/** The model a JSON request names, else null (the engine then leaves the call unpriced). */
function modelOf(sent) {
    try {
        const model = JSON.parse(sent.toString("utf8")).model;
        return typeof model === "string" ? model : null;
    }
    catch {
        return null;
    }
}
/** The handler, keeping the answer's type, encoding and bytes as they pass. */
function teeHandler(handler, entry) {
    return new Proxy(handler, {
        get(target, property) {
            if (property === "onHeaders") {
                return (status, headers, resume, statusText) => {
                    for (let i = 0; i + 1 < headers.length; i += 2) {
                        const name = headers[i].toString("latin1").toLowerCase();
                        if (name === "content-type")
                            entry.call.content_type = headers[i + 1].toString("latin1");
                        if (name === "content-encoding")
                            entry.call.content_encoding = headers[i + 1].toString("latin1");
                    }
                    return target.onHeaders(status, headers, resume, statusText);
                };
            }
            if (property === "onData") {
                return (chunk) => {
                    entry.chunks.push(Buffer.from(chunk));
                    return target.onData(chunk);
                };
            }
            if (property === "onComplete") {
                return (trailers) => {
                    entry.done = true;
                    return target.onComplete(trailers);
                };
            }
            const value = Reflect.get(target, property, target);
            return typeof value === "function" ? value.bind(target) : value;
        },
    });
}
//# sourceMappingURL=bypass.js.map