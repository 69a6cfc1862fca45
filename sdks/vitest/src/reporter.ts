/**
 * `@attest-ai/vitest/reporter`: writes report-v2, the pytest helper's report, for a Vitest run, so
 * `attest policy evaluate`, `attest report summary`, `attest select` and the action read it unchanged.
 *
 *     // vitest.config.ts
 *     export default defineConfig({ test: { reporters: ["default", "@attest-ai/vitest/reporter"] } });
 *
 * The report goes to ATTEST_REPORT if set (the action sets it), else the reporter's `outputFile`
 * option, else attest-report.json, relative to the Vitest root. The reporter turns each test into a
 * row; `attest-engine report` adds the run's egress (probed in this network namespace), redacts
 * secrets, validates and writes the file.
 */

import { spawnSync } from "node:child_process";
import path from "node:path";

import type { Reporter, TestCase, TestModule, Vitest } from "vitest/node";

import type { AttestMeta, Location, SessionSummary } from "./facts.js";
import { cannotStart } from "./install.js";
import { egressFromEnv } from "./mode.js";
import { repositoryRelative, repositoryRoot } from "./paths.js";

export interface AttestReporterOptions {
  /** Where to write the report (ATTEST_REPORT wins); default attest-report.json. */
  outputFile?: string;
  /** The engine that writes it; default `attest-engine` on PATH. */
  enginePath?: string;
}

type Outcome = "passed" | "failed" | "error" | "skipped" | "xfailed" | "not_evaluated";

interface Row {
  id: string;
  file: string;
  line: number | null;
  outcome: Outcome;
  duration: number;
  message: string | null;
  reason?: string;
  // The engine's summaries of the test's sessions, and where its miss was made: `attest-engine report`
  // computes the row's `replay` facts from them, as the pytest helper does.
  sessions?: SessionSummary[];
  miss_location?: Location;
}

export default class AttestReporter implements Reporter {
  private root = process.cwd();
  private repo = process.cwd();
  private started = 0;

  constructor(private readonly options: AttestReporterOptions = {}) {}

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
    this.repo = repositoryRoot(this.root);
    this.started = Date.now();
    // Report rows carry the test's line, which Vitest records only when asked to.
    vitest.config.includeTaskLocation = true;
    for (const project of vitest.projects ?? []) project.config.includeTaskLocation = true;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows = testModules.flatMap((module) => this.moduleRows(module));
    const guard = egressFromEnv() === "block" || testModules.some((m) => [...m.children.allTests()].some(blocked));
    const output = path.resolve(this.root, process.env.ATTEST_REPORT || this.options.outputFile || "attest-report.json");
    const input = JSON.stringify({ runner: "vitest", guard, duration: (Date.now() - this.started) / 1000, tests: rows });
    const engine = this.options.enginePath ?? "attest-engine";
    const done = spawnSync(engine, ["report", "--output", output], { input, encoding: "utf8" });
    if (done.error || done.status !== 0) {
      // One line and a failed run, never an unhandled error with a stack trace: nothing here is a bug.
      const why = done.error
        ? `${engine}: ${cannotStart(engine, done.error)}`
        : (done.stderr.trim().split("\n").pop() ?? `exit ${done.status}`);
      process.stderr.write(`attest reporter: cannot write ${output}: ${why}\n`);
      process.exitCode = 1;
      return;
    }
    // The run's end, as the pytest helper prints it: not-evaluated reasons, live calls, the summary line.
    if (done.stdout) process.stdout.write(done.stdout);
  }

  private moduleRows(module: TestModule): Row[] {
    const file = this.relative(module.moduleId);
    const rows = [...module.children.allTests()].map((test) => this.row(file, test));
    const errors = module.errors();
    if (errors.length > 0) {
      rows.push({ id: file, file, line: null, outcome: "error", duration: 0, message: errors[0].message });
    }
    return rows;
  }

  private row(file: string, test: TestCase): Row {
    const meta = (test.meta() as { attest?: AttestMeta }).attest;
    const result = test.result();
    const row: Row = {
      id: [file, ...titles(test)].join("::"),
      file,
      line: test.location?.line ?? null,
      outcome: "passed",
      duration: Math.round((test.diagnostic()?.duration ?? 0) * 1000) / 1e6,
      message: null,
    };
    if (meta?.outcome === "not_evaluated") {
      row.outcome = "not_evaluated";
      row.reason = "replay_miss";
      row.message = meta.message ?? null;
    } else if (result.state === "failed") {
      row.outcome = "failed";
      // Sent whole: `attest-engine report` redacts it, then cuts it (a cut first could split a key).
      row.message = meta?.message ?? result.errors[0]?.message ?? "failed";
    } else if (result.state === "passed") {
      row.outcome = test.options.fails ? "xfailed" : "passed";
    } else {
      row.outcome = "skipped";
      row.message = result.state === "skipped" ? (result.note ?? null) : null;
    }
    if (meta?.sessions?.length) {
      row.sessions = meta.sessions.map((s) => ({ ...s, fixture: this.relative(s.fixture), fixtures: s.fixtures.map((f) => this.relative(f)) }));
      if (meta.location) row.miss_location = { file: this.relative(meta.location.file), line: meta.location.line };
    }
    return row;
  }

  private relative(file: string): string {
    return repositoryRelative(this.repo, file);
  }
}

function blocked(test: TestCase): boolean {
  return (test.meta() as { attest?: AttestMeta }).attest?.egress === "block";
}

/** The test's title and its enclosing describe blocks', outermost first. */
function titles(test: TestCase): string[] {
  const names = [test.name];
  for (let parent = test.parent; parent.type === "suite"; parent = parent.parent) names.unshift(parent.name);
  return names;
}
