import { defineConfig } from "vitest/config";

// The package's own suite. The test projects under test/projects are run by it, not directly.
export default defineConfig({
  test: {
    include: ["test/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Several files start engines and nested Vitest runs: one file at a time keeps a 2-core machine calm.
    fileParallelism: false,
  },
});
