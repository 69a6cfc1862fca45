import { defineConfig } from "vitest/config";

// Two files of replaying tests, one whose engine dies and two whose fixture goes missing or is
// rewritten, run by ../../workers.test.ts with each pool.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
  },
});
