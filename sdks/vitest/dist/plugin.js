/**
 * `attestReplay()`: a Vitest plugin that starts each worker's engine as the worker starts.
 *
 *     // vitest.config.ts
 *     export default defineConfig({ plugins: [attestReplay()] });
 *
 * Without it the engine starts when a test file imports `@attest-ai/vitest`, after the file's earlier
 * imports. With it, the run's main process starts a spare engine as it reads the config, which the
 * first worker claims (./spare.js), and every other worker starts its own from a setup file that runs
 * before the test file is loaded. Nothing else changes: the tests still call useReplay.
 */
import { fileURLToPath } from "node:url";
import { startSpare } from "./spare.js";
export const START_FILE = fileURLToPath(new URL("./start.js", import.meta.url));
export function attestReplay() {
    return {
        name: "attest-replay",
        config(config) {
            startSpare(); // in the run's main process, as Vitest reads its config: see ./spare.js
            // First: the engine starts before the user's own setup files run.
            const test = (config.test ??= {});
            const theirs = test.setupFiles === undefined ? [] : [test.setupFiles].flat();
            test.setupFiles = [START_FILE, ...theirs.filter((file) => file !== START_FILE)];
        },
    };
}
//# sourceMappingURL=plugin.js.map