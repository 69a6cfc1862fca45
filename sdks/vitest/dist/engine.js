/**
 * One `attest-engine replay --serve` process: it prints {"env": {...}}, serves the fixture until a
 * stop line arrives on its standard input, then prints {"summary": {...}} and exits.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { ReplayError } from "./mode.js";
// What the engine printed on standard error, kept short for the error message.
const STDERR_KEPT = 4000;
/** A running `--serve` session; `env` points the provider SDKs at it. */
export class ServeSession {
    child;
    env;
    lines;
    exited;
    output;
    constructor(child, env, lines, exited, output) {
        this.child = child;
        this.env = env;
        this.lines = lines;
        this.exited = exited;
        this.output = output;
    }
    /** Start the engine and wait for its {"env"} line. */
    static async start(options) {
        const args = ["replay", "--serve", "--fixture", options.fixture, "--mode", options.mode];
        if (options.noLive)
            args.push("--no-live");
        const child = spawn(options.enginePath, args, { stdio: ["pipe", "pipe", "pipe"] });
        const output = { stderr: "" };
        child.stderr.setEncoding("utf8").on("data", (text) => {
            output.stderr = (output.stderr + text).slice(-STDERR_KEPT);
        });
        const spawned = new Promise((resolve, reject) => {
            child.once("spawn", resolve);
            child.once("error", (error) => reject(cannotRun(options.enginePath, error)));
        });
        const exited = new Promise((resolve) => child.once("close", (code) => resolve(code)));
        await spawned;
        const lines = createInterface({ input: child.stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
        const first = await readMessage(lines, "env");
        if (first === undefined) {
            const code = await exited;
            throw new ReplayError(engineFailure(`attest-engine exited ${code} before serving`, output.stderr));
        }
        return new ServeSession(child, first, lines, exited, output);
    }
    /** Send the stop line and read the summary. */
    async stop() {
        this.child.stdin.end("stop\n");
        const summary = await readMessage(this.lines, "summary");
        const code = await this.exited;
        if (summary === undefined) {
            throw new ReplayError(engineFailure(`attest-engine exited ${code} without a summary`, this.output.stderr));
        }
        return summary;
    }
}
/** The value of the next {"<key>": value} line, skipping anything else; undefined at end of output. */
async function readMessage(lines, key) {
    for (;;) {
        const next = await lines.next();
        if (next.done)
            return undefined;
        try {
            const message = JSON.parse(next.value);
            if (message && typeof message === "object" && key in message)
                return message[key];
        }
        catch {
            // not a protocol line
        }
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