import { defineConfig } from "vitest/config";

// Module-level clients that go around the replay, run by test/bypass.test.ts with the reporter.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
