// Runs test/projects/verdicts with real Vitest and the reporter, and checks what a user would: each
// test's verdict, the miss messages word for word, and that the attest CLI reads the report as is.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { attest, PACKAGE, REPO } from "./helpers.js";

const PROJECT = path.join(PACKAGE, "test", "projects", "verdicts");
const FILE = "sdks/vitest/test/projects/verdicts/verdicts.test.ts";
const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");
// The fixture is outside the project's default place, so the re-record hint names its directory.
const REFRESH = `re-record with \`attest capture --refresh example --fixtures-dir ${path.join(REPO, "examples", "fixtures")}\``;

interface Row {
  id: string;
  file: string;
  line: number;
  outcome: string;
  reason?: string;
  message: string | null;
  replay?: { fixtures: string[]; mode: string; replayed: number; live: number; misses: number; miss?: { message: string; component: string; paths?: string[]; location?: { file: string; line: number } } };
}

/** Run the project as a user would (`npx vitest run`), outside CI, with a report path. */
function runProject(report: string, ...args: string[]): { status: number | null; output: string } {
  return runIn(PROJECT, report, ...args);
}

function runIn(project: string, report: string, ...args: string[]): { status: number | null; output: string } {
  // The nested run must not think it is a worker of this one, nor in CI.
  const dropped = new Set(["CI", "ATTEST_REPLAY", "FORCE_COLOR"]);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));
  const done = spawnSync("node", [VITEST, "run", ...args], {
    cwd: project,
    env: { ...env, ATTEST_REPORT: report, NO_COLOR: "1" },
    encoding: "utf8",
  });
  return { status: done.status, output: done.stdout + done.stderr };
}

describe("a project whose tests replay", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attest-vitest-"));
  const reportPath = path.join(dir, "attest-report.json");
  let rows: Record<string, Row> = {};
  let output = "";

  beforeAll(() => {
    const run = runProject(reportPath);
    output = run.output;
    expect(run.status, output).toBe(1);
    const report = JSON.parse(readFileSync(reportPath, "utf8"));
    rows = Object.fromEntries(report.tests.map((row: Row) => [row.id.slice(FILE.length + 2), row]));
  }, 300_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("passes a test whose requests all matched, with its replay facts", () => {
    expect(rows["replays"]).toMatchObject({
      file: FILE,
      outcome: "passed",
      replay: { fixtures: ["examples/fixtures/example.attest.json"], mode: "strict", replayed: 2, live: 0, misses: 0 },
    });
    expect(rows["replays"].line).toBeGreaterThan(1);
  });

  it("fails a strict miss with the miss message naming the changed component", () => {
    const expected: Record<string, [string, string]> = {
      "system prompt changed": ["system", "replay miss: system prompt changed: system[0].content (hash d5b0c2c→"],
      "messages changed": ["messages", "replay miss: messages changed: messages[0].content (hash faa4202→"],
      "tools changed": ["tools", "replay miss: tools changed: tools[0].function.description (hash de4ef59→"],
      "params changed": ["params", "replay miss: params changed: temperature (hash e4ff491→"],
      "model changed": ["model", 'replay miss: model changed ("gpt-4o-mini"→"gpt-4.1"); ' + REFRESH],
      "more calls than recorded": ["overflow", "replay miss: the agent made more model calls than the 2 recorded; " + REFRESH],
      "an extra identical call": ["duplicate", "replay miss: the agent made an extra identical call; " + REFRESH],
    };
    for (const [name, [component, message]] of Object.entries(expected)) {
      const row = rows[name];
      expect(row.outcome, name).toBe("failed");
      expect(row.message, name).toMatch(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
      expect(row.message, name).toMatch(new RegExp(`${REFRESH.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
      expect(row.replay?.miss?.component, name).toBe(component);
    }
    // Where the request changed, by path (report-v2's miss.paths).
    expect(rows["params changed"].replay?.miss?.paths).toEqual(["params.temperature"]);
    expect(rows["model changed"].replay?.miss?.paths).toEqual(["model"]);
    // Where the agent made the call: its own source, not node_modules.
    expect(rows["system prompt changed"].replay?.miss?.location?.file).toBe("sdks/vitest/test/agents/refund.mjs");
    expect(rows["more calls than recorded"].replay?.miss?.location?.file).toBe(FILE);
  });

  it("fails a miss whatever the agent caught, and it.fails does not turn it into a pass", () => {
    expect(rows["a miss the agent caught"]).toMatchObject({ outcome: "failed", message: expect.stringMatching(/^replay miss: model changed/) });
    expect(rows["it.fails does not pass a miss"]).toMatchObject({ outcome: "failed", message: expect.stringMatching(/^replay miss: model changed/) });
    expect(output).toContain("(the agent then failed with)");
    // it.fails keeps its meaning for a test that fails with no miss.
    expect(rows["it.fails without a miss"].outcome).toBe("xfailed");
  });

  it("skips an auto miss with no key as not_evaluated: replay_miss, and with a key when egress is blocked", () => {
    for (const name of ["auto miss without a key", "auto miss with a key, egress blocked"]) {
      expect(rows[name], name).toMatchObject({
        outcome: "not_evaluated",
        reason: "replay_miss",
        message: expect.stringMatching(/^not_evaluated: replay_miss: replay miss: model changed/),
        replay: { mode: "auto", live: 0, misses: 1 },
      });
    }
    expect(output).toMatch(/↓ auto miss without a key.*not_evaluated: replay_miss/);
    // ATTEST_STRICT=1 fails it instead.
    expect(rows["auto miss without a key, ATTEST_STRICT=1"]).toMatchObject({ outcome: "failed", replay: { mode: "auto", misses: 1 } });
  });

  it("writes a report attest policy evaluate and attest report summary read unchanged", () => {
    const verdict = attest(["policy", "evaluate", "--report", reportPath]);
    expect(verdict.status, verdict.stderr).toBe(1);
    expect(verdict.stdout).toMatch(/^attest policy: blocked \(failures, misses, not_evaluated\)/);
    const summary = attest(["report", "summary", "--report", reportPath, "--format", "text"]);
    expect(summary.status, summary.stderr).toBe(0);
    expect(summary.stdout).toContain("8 replayed · 0 live model calls · $0.00");
    expect(summary.stdout).toContain("sdks/vitest/test/agents/refund.mjs:");
  });

  it("passes the policy when every test replayed", () => {
    const clean = path.join(dir, "clean.json");
    const run = runProject(clean, "-t", "^replays$");
    expect(run.status, run.output).toBe(0);
    const verdict = attest(["policy", "evaluate", "--report", clean]);
    expect(verdict.status, verdict.stdout + verdict.stderr).toBe(0);
    expect(attest(["report", "summary", "--report", clean, "--format", "text"]).stdout).toMatch(/^attest replay: 2 replayed · 0 live model calls · \$0\.00/);
  });
});

describe("a test retried after a miss", () => {
  it("still fails with the miss, counted, when a retry passes, and the policy blocks it", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attest-retry-"));
    const report = path.join(dir, "report.json");
    try {
      const run = runIn(path.join(PACKAGE, "test", "projects", "retry"), report);
      expect(run.status, run.output).toBe(1);
      const [row] = JSON.parse(readFileSync(report, "utf8")).tests as Row[];
      expect(row).toMatchObject({ outcome: "failed", replay: { misses: 1, miss: { component: "model" } } });
      expect(row.message).toMatch(/^replay miss: model changed \("gpt-4o-mini"→"gpt-4.1"\)/);
      const verdict = attest(["policy", "evaluate", "--report", report]);
      expect(verdict.status, verdict.stdout + verdict.stderr).toBe(1);
      expect(verdict.stdout).toMatch(/^attest policy: blocked \(failures, misses\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
