import path from "node:path";
import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

const here = path.dirname(fileURLToPath(import.meta.url));

// The per-test files: each variant's 100 tests, one file each. @attest-ai/vitest comes from this
// checkout's build, and every `vitest` import (its own included) from this directory's Vitest.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@attest-ai\/vitest$/, replacement: path.resolve(here, "../../sdks/vitest/dist/index.js") },
      { find: /^vitest$/, replacement: fileURLToPath(import.meta.resolve("vitest")) },
    ],
  },
  test: { include: ["pertest/*.test.mjs"], testTimeout: 60_000, fileParallelism: false },
});
