import { defineConfig } from "vitest/config";

// Replays whose facts only the engine's summaries carry (unused recordings, tool calls, drift), run by
// test/facts.test.ts with the reporter.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
