/**
 * The spare engine: attestReplay() (./plugin.js) starts one `attest-engine serve --socket` in the run's
 * main process as Vitest reads its config, long before a worker exists, so the engine's start overlaps
 * Vitest's own (its start-up, the workers' start) rather than the first test. The first worker's first
 * replay claims it (./engine.js); any other worker, or one whose environment differs from the one the
 * spare started with, starts its own as before.
 *
 * The socket is in a directory only this user can enter, and the engine serves the first connection
 * only, then removes it. The engine ends when its claimant's connection ends, or, unclaimed, when this
 * process ends (its input closes).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, closeSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DEFAULT_ENGINE, SPARE_SOCKET, SPARE_STDERR, SPARE_VAR, environmentPrint } from "./engine.js";
import { replayIsOff } from "./mode.js";
const STARTED = Symbol.for("@attest-ai/vitest.spare");
/**
 * Start the spare engine once per process, unless replay is off or this is not a Vitest run (a
 * vite.config.ts that Vite itself reads for a build or a dev server); workers find it in SPARE_VAR.
 */
export function startSpare() {
    const scope = globalThis;
    if (scope[STARTED] || replayIsOff() || !process.env.VITEST)
        return;
    scope[STARTED] = true;
    const dir = mkdtempSync(path.join(tmpdir(), "attest-engine-")); // mode 0700: this user only
    const stderr = openSync(path.join(dir, SPARE_STDERR), "w");
    const print = environmentPrint(); // before the variable: the print leaves it out
    const child = spawn(DEFAULT_ENGINE, ["serve", "--socket", path.join(dir, SPARE_SOCKET)], {
        stdio: ["pipe", "ignore", stderr],
    });
    closeSync(stderr);
    child.on("error", () => undefined); // not found: the worker starts its own engine, which says so
    child.stdin?.on("error", () => undefined);
    // This process must be free to end while the spare waits; the spare then reads the end of its input.
    child.unref();
    child.stdin?.unref();
    process.env[SPARE_VAR] = JSON.stringify({ dir, print });
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
}
//# sourceMappingURL=spare.js.map