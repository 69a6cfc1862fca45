/**
 * @attest-ai/vitest: attest replay for Vitest. `await useReplay("inc-1042")` in a test serves the
 * agent's model calls from `tests/attest/fixtures/inc-1042.attest.json` through the attest engine.
 */
import * as guard from "./guard/index.js";
import { startDefault } from "./engine.js";
import { egressFromEnv } from "./mode.js";
export { useReplay, DEFAULT_FIXTURES_DIR } from "./replay.js";
export { defaultMode, MODES, ReplayError, resolveMode } from "./mode.js";
export { EgressBlockedError, BLOCKED_HOSTS, isBlockedHost } from "./guard/index.js";
export { guard };
// The worker's engine starts while the test file is still importing (unless replay is off), as the
// pytest helper starts its engine while pytest collects; attestReplay() (./plugin.js) starts it sooner.
startDefault();
// ATTEST_EGRESS=block (what the action's `network: guard` sets) guards the whole test file from the
// moment it imports this package, as the pytest plugin guards the whole session.
if (egressFromEnv() === "block")
    guard.install();
//# sourceMappingURL=index.js.map