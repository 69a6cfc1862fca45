/**
 * @attest-ai/vitest: attest replay for Vitest. `await useReplay("inc-1042")` in a test serves the
 * agent's model calls from `tests/attest/fixtures/inc-1042.attest.json` through the attest engine.
 */
import * as guard from "./guard/index.js";
export { useReplay, DEFAULT_FIXTURES_DIR, type ReplayHandle, type ReplayOptions } from "./replay.js";
export { defaultMode, MODES, type Mode, ReplayError, resolveMode } from "./mode.js";
export type { Miss, ReplaySummary } from "./engine.js";
export type { AttestMeta, SessionSummary } from "./facts.js";
export { EgressBlockedError, BLOCKED_HOSTS, isBlockedHost } from "./guard/index.js";
export { guard };
