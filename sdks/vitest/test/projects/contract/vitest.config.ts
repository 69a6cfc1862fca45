import { defineConfig } from "vitest/config";

// One test per miss vector (tests/contract/miss_kinds.json), run by test/contract.test.ts with the
// reporter: each is meant to fail with its miss.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
    reporters: ["default", "@attest-ai/vitest/reporter"],
  },
});
