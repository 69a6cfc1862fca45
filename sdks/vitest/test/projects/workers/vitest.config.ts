import { defineConfig } from "vitest/config";

// Two files of replaying tests and one whose engine dies, run by ../../workers.test.ts with each pool.
export default defineConfig({
  test: {
    include: ["*.test.ts"],
    testTimeout: 60_000,
  },
});
