import { defineConfig } from "vitest/config";

import { attestReplay } from "@attest-ai/vitest/plugin";

// The per-test files: each variant's 100 tests, one file each. @attest-ai/vitest is this checkout's
// build, installed into node_modules as a user installs it (../node_suite.py copies it there), and set
// up as its README says: attestReplay() starts each worker's engine as the worker starts
// (BENCH_NO_PLUGIN=1 leaves it out, for the package's default: the engine starts when the file imports it).
export default defineConfig({
  plugins: process.env.BENCH_NO_PLUGIN === "1" ? [] : [attestReplay()],
  test: { include: ["pertest/*.test.mjs"], testTimeout: 60_000, fileParallelism: false },
});
