import { defineConfig } from "vitest/config";

// Tests that replay with faults injected, run by ../../faults.test.ts.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
