// The user's own setup file: notes which engines the worker had started by the time it ran.
const engines = (globalThis as Record<symbol, Map<string, unknown> | undefined>)[Symbol.for("@attest-ai/vitest.engines")];
(globalThis as Record<string, unknown>).enginesAtOwnSetup = [...(engines?.keys() ?? [])];
