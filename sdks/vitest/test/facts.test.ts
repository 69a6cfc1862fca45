// Runs test/projects/facts with real Vitest and the reporter. The helper sends the engine's summaries
// as they are and `attest-engine report` computes each row's facts with the pytest helper's function,
// so a Vitest report carries what a pytest report carries: unused recordings (which the policy can
// block), tool calls and drift.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { attest, fixturesDir, PACKAGE } from "./helpers.js";

const PROJECT = path.join(PACKAGE, "test", "projects", "facts");
const FILE = "sdks/vitest/test/projects/facts/facts.test.ts";
const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");

interface Report {
  tests: Array<{ id: string; outcome: string; replay: Record<string, unknown> }>;
  summary: { replay: Record<string, unknown> };
}

describe("a Vitest run's report facts", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attest-facts-"));
  const reportPath = path.join(dir, "attest-report.json");
  let report: Report;
  let output = "";

  beforeAll(() => {
    const dropped = new Set(["CI", "ATTEST_REPLAY", "ATTEST_EGRESS", "FORCE_COLOR"]);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));
    const run = spawnSync("node", [VITEST, "run"], {
      cwd: PROJECT,
      env: { ...env, ATTEST_REPORT: reportPath, ATTEST_VITEST_FIXTURES: fixturesDir(), NO_COLOR: "1" },
      encoding: "utf8",
    });
    output = run.stdout + run.stderr;
    expect(run.status, output).toBe(0);
    report = JSON.parse(readFileSync(reportPath, "utf8")) as Report;
  }, 300_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const row = (name: string) => report.tests.find((t) => t.id === `${FILE}::${name}`)!;

  it("counts an unused recording and a replayed tool call, in the row and the summary", () => {
    expect(row("one model call of two, and the recorded tool")).toMatchObject({
      outcome: "passed",
      replay: { replayed: 1, unused: 1, tool_replayed: 1, misses: 0 },
    });
    expect(report.summary.replay).toMatchObject({ replayed: 3, unused: 1, tool_replayed: 1, drift: 2 });
    expect(output).toContain("attest replay: 3 replayed · 0 live model calls · $0.00 · 1 tool calls replayed · 0 live tool calls · 1 recording unused");
  });

  it("reports drift the fixture's rules allowed, with its message and paths", () => {
    const { replay } = row("a changed temperature the fixture's rules allow");
    expect(replay).toMatchObject({ replayed: 2, drift: 2, misses: 0, drift_paths: ["params.temperature"] });
    expect(replay.drift_message).toMatch(/^replay drift: model call 1: params changed: temperature \(hash [0-9a-f]{7}→[0-9a-f]{7}\); served the recording$/);
  });

  it("is blocked by a policy with unused: block, and passes the default policy", () => {
    const policy = path.join(dir, "policy.yml");
    writeFileSync(policy, "unused: block\n");
    const blocked = attest(["policy", "evaluate", "--report", reportPath, "--policy", policy]);
    expect(blocked.status, blocked.stdout + blocked.stderr).toBe(1);
    expect(blocked.stdout).toMatch(/^attest policy: blocked \(unused\)/);
    const passed = attest(["policy", "evaluate", "--report", reportPath]);
    expect(passed.status, passed.stdout + passed.stderr).toBe(0);
  });
});
