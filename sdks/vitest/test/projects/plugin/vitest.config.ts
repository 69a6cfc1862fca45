import { defineConfig } from "vitest/config";

import { attestReplay } from "@attest-ai/vitest/plugin";

// The plugin as a user adds it, beside a setup file of the user's own; run by ../../workers.test.ts.
export default defineConfig({
  plugins: [attestReplay()],
  test: {
    include: ["*.test.ts"],
    setupFiles: ["./own-setup.ts"],
    testTimeout: 60_000,
    // ATTEST_TEST_WORKER_ENV=1: the workers' environment differs from the run's (a variable of test.env).
    env: process.env.ATTEST_TEST_WORKER_ENV === "1" ? { ATTEST_TEST_WORKER_ENV: "worker" } : {},
  },
});
