/**
 * One `attest-engine serve` per Vitest worker: it prints {"ready": ...}, then answers one JSON line per
 * request line ({"open": {...}} or {"close": id}) until its standard input ends, so it ends with the
 * worker that started it. Each replay is one session on it: a test pays two lines, not a process start.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
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
export class WorkerEngine {
    enginePath;
    environment;
    ready;
    child;
    replies = [];
    waiting;
    queue = Promise.resolve();
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
            this.deliver(undefined);
        });
        // The worker must be free to end while its engine idles; the engine then reads the end of its input.
        this.child.unref();
        for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr])
            stream.unref();
        this.ready = this.start();
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
        const reply = await this.request({ open: { fixtures: [spec.fixture], mode: spec.mode, no_live: spec.noLive } }, "opening this replay");
        return { id: reply.id, env: reply.env };
    }
    /** End the session; the engine counts what went around it (`bypass`) in its summary. */
    async close(id, bypass) {
        const reply = await this.request(bypass ? { close: id, bypass } : { close: id }, "serving this replay");
        return reply.summary;
    }
    /** The answer a call that went around the replay gets, in the engine's words. */
    async refusal(host) {
        return (await this.request({ refusal: { host, runner: "vitest" } }, "serving this replay"));
    }
    async start() {
        await new Promise((resolve, reject) => {
            this.child.once("spawn", resolve);
            this.child.once("error", (error) => reject(cannotRun(this.enginePath, error)));
        });
        const ready = await this.nextMessage();
        if (ready === undefined || !("ready" in ready)) {
            this.child.kill();
            const code = await this.exited();
            throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, this.stderr));
        }
    }
    /** One request and its reply, after any request before it. */
    request(message, doing) {
        const turn = this.queue.then(async () => {
            await this.ready;
            if (this.exitCode !== undefined)
                throw this.died(doing);
            this.child.stdin.write(JSON.stringify(message) + "\n");
            const reply = await this.nextMessage();
            if (reply === undefined)
                throw this.died(doing);
            if (typeof reply.error === "string")
                throw new ReplayError(`attest replay: ${reply.error}`);
            return reply;
        });
        this.queue = turn.catch(() => undefined);
        return turn;
    }
    died(doing) {
        const error = new ReplayError(engineFailure(`attest replay: the replay engine exited while ${doing}; the next test gets a new engine`, this.stderr));
        error.stack = `${error.name}: ${error.message}`; // one line: the engine's end is the story
        return error;
    }
    deliver(line) {
        if (this.waiting !== undefined) {
            const waiting = this.waiting;
            this.waiting = undefined;
            this.child.stdout.unref();
            waiting(line);
        }
        else if (line !== undefined) {
            this.replies.push(line);
        }
    }
    /** The next line it printed; undefined once it has exited. */
    nextLine() {
        const line = this.replies.shift();
        if (line !== undefined || this.exitCode !== undefined)
            return Promise.resolve(line);
        // Awaited, the reply keeps the process alive (idle, the engine does not: see the constructor).
        this.child.stdout.ref();
        return new Promise((resolve) => (this.waiting = resolve));
    }
    /** The next JSON object line it printed, skipping anything else; undefined once it has exited. */
    async nextMessage() {
        for (;;) {
            const line = await this.nextLine();
            if (line === undefined)
                return undefined;
            const message = parse(line);
            if (message !== undefined)
                return message;
        }
    }
    exited() {
        if (this.exitCode !== undefined)
            return Promise.resolve(this.exitCode);
        return new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
    }
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