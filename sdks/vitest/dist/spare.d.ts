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
/**
 * Start the spare engine once per process, unless replay is off or this is not a Vitest run (a
 * vite.config.ts that Vite itself reads for a build or a dev server); workers find it in SPARE_VAR.
 */
export declare function startSpare(): void;
