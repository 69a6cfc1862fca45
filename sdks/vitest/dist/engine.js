/**
 * One `attest-engine serve` per Vitest worker: it prints {"ready": ...}, then answers one JSON line per
 * request line ({"open": {...}} or {"close": id}) until its standard input ends, so it ends with the
 * worker that started it. Each replay is one session on it: a test pays two lines, not a process start.
 *
 * A session's variables differ from another's of the same fixture, mode and guard only by its id, so
 * the first such open asks the engine for a template (attest_toolkit/replay/ahead.py): a prefix and a
 * key with which this side makes the next sessions' ids itself. Such a test writes no open at all: its
 * variables are known at once, and the engine opens its session on the first call naming the id (or
 * at its close). Only the close is waited for (the verdict needs its summary); an open that failed
 * after all fails its test there, with the engine's line.
 */
import { spawn } from "node:child_process";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { ReplayError } from "./mode.js";
// What the engine printed on standard error, kept short for the error message.
const STDERR_KEPT = 4000;
// The worker's engines, by engine path. On globalThis, which Vitest keeps for the worker's life, so
// test files that each evaluate this module afresh (isolation) still share the worker's engine.
const ENGINES = Symbol.for("@attest-ai/vitest.engines");
export const DEFAULT_ENGINE = "attest-engine";
/**
 * Start the worker's default engine now, without waiting for it, so that its start overlaps the test
 * file's own imports rather than the first test. A failure to start is not reported here: the first
 * useReplay starts it again and reports it.
 */
export function startEarly(enginePath = DEFAULT_ENGINE) {
    workerEngine(enginePath).catch(() => undefined);
}
/** startEarly for the default engine, unless replay is off (ATTEST_REPLAY=off starts nothing). */
export function startDefault() {
    if (process.env.ATTEST_REPLAY?.trim().toLowerCase() !== "off")
        startEarly();
}
/** The worker's engine for `enginePath`, started on first use and replaced when it died. */
export async function workerEngine(enginePath) {
    const registry = (globalThis[ENGINES] ??= new Map());
    const current = registry.get(enginePath);
    const environment = environmentPrint();
    if (current !== undefined && current.usable(environment))
        return current;
    current?.retire();
    const started = new WorkerEngine(enginePath, environment);
    registry.set(enginePath, started);
    try {
        await started.ready;
    }
    catch (error) {
        if (registry.get(enginePath) === started)
            registry.delete(enginePath);
        throw error;
    }
    return started;
}
/**
 * A digest of the environment the engine would start with: it reads provider keys, base URLs,
 * upstreams and the secrets to redact from it once, at start, so a test that changed any variable
 * gets an engine started with its own environment, as it did when every test started one.
 */
function environmentPrint() {
    const entries = Object.entries(process.env)
        .filter(([name]) => !name.startsWith("VITEST"))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return createHash("sha256").update(JSON.stringify(entries)).digest("hex");
}
// Where a session's id stands in a template's variables (`.../r/<id>/openai/v1`); the engine's own.
const ID_SLOT = "\u0000";
export class WorkerEngine {
    enginePath;
    environment;
    ready;
    child;
    // Whoever waits for each answer still to come, in the order the requests were written: the engine
    // answers in that order.
    awaiting = [];
    // Templates by fixture, mode and guard (see the module comment), and the sessions made from each.
    templates = new Map();
    made = new Map();
    stderr = "";
    exitCode; // undefined while it runs
    constructor(enginePath, environment) {
        this.enginePath = enginePath;
        this.environment = environment;
        this.child = spawn(enginePath, ["serve"], { stdio: ["pipe", "pipe", "pipe"] });
        this.child.stderr.setEncoding("utf8").on("data", (text) => {
            this.stderr = (this.stderr + text).slice(-STDERR_KEPT);
        });
        this.child.stdin.on("error", () => undefined); // writing to an engine that died: its `close` says so
        createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on("line", (line) => this.deliver(line));
        this.child.once("close", (code) => {
            this.exitCode = code;
            for (const waiting of this.awaiting.splice(0))
                waiting(undefined);
        });
        // The worker must be free to end while its engine idles; the engine then reads the end of its input.
        this.child.unref();
        for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr])
            stream.unref();
        this.ready = this.start(this.expect()); // its first line, {"ready": ...}, comes unasked
    }
    /** True while it runs and was started with this environment. */
    usable(environment) {
        return this.exitCode === undefined && this.environment === environment;
    }
    /** End it: it exits when its input ends. */
    retire() {
        this.child.stdin.end();
    }
    async open(spec) {
        const open = { fixtures: [spec.fixture], mode: spec.mode, no_live: spec.noLive };
        const key = JSON.stringify(open);
        const template = this.templates.get(key);
        if (template !== undefined && this.exitCode === undefined) {
            const nonce = randomBytes(8).toString("hex"); // as random as the engine's own ids
            const id = template.prefix + nonce + createHmac("sha256", template.key).update(nonce).digest("hex").slice(0, 16);
            this.made.set(id, key);
            return { id, env: withId(template.env, id) };
        }
        const reply = await this.request({ open: { ...open, ahead: true } }, "opening this replay");
        const id = reply.id;
        const env = reply.env;
        const ahead = reply.ahead;
        const kept = withoutId(env, id);
        if (ahead !== undefined && kept !== undefined) {
            this.templates.set(key, { prefix: ahead.prefix, key: Buffer.from(ahead.key, "hex"), env: kept });
        }
        return { id, env };
    }
    /** End the session; the engine counts what went around it (`bypass`) in its summary. */
    async close(id, bypass) {
        const key = this.made.get(id);
        this.made.delete(id);
        const reply = await this.request(bypass ? { close: id, bypass } : { close: id }, "serving this replay");
        if (reply.rewritten === true) {
            if (key !== undefined)
                this.templates.delete(key);
            const error = new ReplayError("attest replay: this replay's fixture was rewritten while the tests ran and now serves other variables; run the test again");
            error.stack = `${error.name}: ${error.message}`; // one line: where the hook threw says nothing
            throw error;
        }
        return reply.summary;
    }
    /** The answer a call that went around the replay gets, in the engine's words. */
    async refusal(host) {
        return (await this.request({ refusal: { host, runner: "vitest" } }, "serving this replay"));
    }
    async start(first) {
        await new Promise((resolve, reject) => {
            this.child.once("spawn", resolve);
            this.child.once("error", (error) => reject(cannotRun(this.enginePath, error)));
        });
        const ready = await first;
        if (ready === undefined || !("ready" in ready)) {
            this.child.kill();
            const code = await this.exited();
            throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, this.stderr));
        }
    }
    /** One request, once the engine is ready, and its answer. */
    async request(message, doing) {
        await this.ready;
        if (this.exitCode !== undefined)
            throw this.died(doing);
        return this.checked(await this.send(message), doing);
    }
    /** Write one request now; its answer when it comes. */
    send(message) {
        const reply = this.expect();
        this.child.stdin.write(JSON.stringify(message) + "\n");
        return reply;
    }
    checked(reply, doing) {
        if (reply === undefined)
            throw this.died(doing);
        if (typeof reply.error === "string")
            throw new ReplayError(`attest replay: ${reply.error}`);
        return reply;
    }
    died(doing) {
        const error = new ReplayError(engineFailure(`attest replay: the replay engine exited while ${doing}; the next test gets a new engine`, this.stderr));
        error.stack = `${error.name}: ${error.message}`; // one line: the engine's end is the story
        return error;
    }
    /** The next answer, in the order asked; undefined once the engine has exited. */
    expect() {
        if (this.exitCode !== undefined)
            return Promise.resolve(undefined);
        // Awaited, an answer keeps the process alive (idle, the engine does not: see the constructor).
        this.child.stdout.ref();
        return new Promise((resolve) => this.awaiting.push(resolve));
    }
    /** An answer to whoever asked first; anything that is not a JSON object line is skipped. */
    deliver(line) {
        const message = parse(line);
        if (message === undefined)
            return;
        const waiting = this.awaiting.shift();
        if (this.awaiting.length === 0)
            this.child.stdout.unref();
        waiting?.(message);
    }
    exited() {
        if (this.exitCode !== undefined)
            return Promise.resolve(this.exitCode);
        return new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
    }
}
/** A session's variables with its id taken out; undefined when the id shows anywhere else. */
function withoutId(env, id) {
    const kept = Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.split(`/r/${id}/`).join(`/r/${ID_SLOT}/`)]));
    return Object.values(kept).some((value) => value.includes(id)) ? undefined : kept;
}
function withId(kept, id) {
    return Object.fromEntries(Object.entries(kept).map(([name, value]) => [name, value.split(ID_SLOT).join(id)]));
}
/** A JSON object line, else undefined. */
function parse(line) {
    try {
        const message = JSON.parse(line);
        return message !== null && typeof message === "object" ? message : undefined;
    }
    catch {
        return undefined;
    }
}
function cannotRun(enginePath, error) {
    const why = error.code === "ENOENT" ? "not found" : error.message;
    return new ReplayError(`attest replay: cannot run ${enginePath}: ${why}; install attest-toolkit (pip install attest-toolkit) or pass enginePath`);
}
function engineFailure(what, stderr) {
    const last = stderr.trim().split("\n").filter(Boolean).pop();
    return last ? `${what}: ${last}` : what;
}
//# sourceMappingURL=engine.js.map