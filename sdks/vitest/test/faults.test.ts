// Runs test/projects/faults with real Vitest and the reporter: useReplay(name, { faults }) injects
// them, a fault is not a miss, and the report and the summary line count them.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { expect, it } from "vitest";

import { PACKAGE } from "./helpers.js";

const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");

it("injects each test's faults, passes when the agent copes, and counts them", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attest-faults-"));
  const report = path.join(dir, "report.json");
  try {
    const dropped = new Set(["CI", "ATTEST_REPLAY", "FORCE_COLOR"]);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));
    const done = spawnSync("node", [VITEST, "run"], {
      cwd: path.join(PACKAGE, "test", "projects", "faults"),
      env: { ...env, ATTEST_REPORT: report, NO_COLOR: "1" },
      encoding: "utf8",
    });
    const output = done.stdout + done.stderr;
    expect(done.status, output).toBe(0);
    expect(output).toContain("attest replay: 4 replayed · 0 live model calls · $0.00 · 2 recordings unused · 3 faults injected");
    const written = JSON.parse(readFileSync(report, "utf8"));
    const faults = written.tests.map((row: { replay: { fault_list: { fault: string; call: number }[] } }) => row.replay.fault_list);
    expect(faults).toEqual([
      [{ call: 1, fault: "status=429,retry-after=0", kind: "status" }],
      [{ call: 1, fault: "disconnect", kind: "disconnect" }],
      [{ call: 2, fault: "call=2:cut=3", kind: "cut" }],
    ]);
    expect(written.summary.replay).toMatchObject({ faults: 3, misses: 0 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
