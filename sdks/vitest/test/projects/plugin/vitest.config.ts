import { defineConfig } from "vitest/config";

import { attestReplay } from "@attest-ai/vitest/plugin";

// The plugin as a user adds it, beside a setup file of the user's own; run by ../../workers.test.ts.
export default defineConfig({
  plugins: [attestReplay()],
  test: { include: ["*.test.ts"], setupFiles: ["./own-setup.ts"], testTimeout: 60_000 },
});
