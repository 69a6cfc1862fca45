import { defineConfig } from "vitest/config";

// A test that misses on its first attempt and passes on its retry, run by ../../verdicts.test.ts.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
