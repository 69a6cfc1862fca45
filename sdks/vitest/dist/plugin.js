/**
 * `attestReplay()`: a Vitest plugin that starts each worker's engine as the worker starts.
 *
 *     // vitest.config.ts
 *     export default defineConfig({ plugins: [attestReplay()] });
 *
 * Without it the engine starts when a test file imports `@attest-ai/vitest`, after the file's earlier
 * imports; with it, from a setup file that runs before the test file is loaded. Nothing else changes:
 * the tests still call useReplay.
 */
import { fileURLToPath } from "node:url";
export const START_FILE = fileURLToPath(new URL("./start.js", import.meta.url));
export function attestReplay() {
    return {
        name: "attest-replay",
        config(config) {
            // First: the engine starts before the user's own setup files run.
            const test = (config.test ??= {});
            const theirs = test.setupFiles === undefined ? [] : [test.setupFiles].flat();
            test.setupFiles = [START_FILE, ...theirs.filter((file) => file !== START_FILE)];
        },
    };
}
//# sourceMappingURL=plugin.js.map