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
export declare const START_FILE: string;
interface TestConfig {
    setupFiles?: string | string[];
}
/** The part of a Vite plugin this one uses (Vite's own type would make vite a dependency). */
export interface AttestReplayPlugin {
    name: string;
    config(config: {
        test?: TestConfig;
    }): void;
}
export declare function attestReplay(): AttestReplayPlugin;
export {};
