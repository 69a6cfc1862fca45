import { defineConfig } from "vitest/config";

// A project whose tests end every way a replay can end, run by test/verdicts.test.ts with the reporter.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
