// The contract vectors (tests/contract/), which tests/unit/test_contract.py runs against the toolkit: this
// side proves the Vitest helper answers the same, through what a Vitest user runs.
//
// - "hosts.json": the helper's egress guard blocks exactly the vectors' blocked hosts. The provider a
//   blocked call is named for is decided by the engine (Python), so only the Python side checks it.
// - "miss_kinds.json": each vector's calls, sent by a Vitest test through a real engine
//   (test/projects/contract), fail that test with the vector's line and kind, read from its report row.
// - "replay_facts.json": the helper no longer computes facts: its reporter sends the engine's raw
//   summaries to `attest-engine report`. So this side checks the two things that could differ: that a
//   real engine's summary has exactly the keys of the vectors' summaries (the input the Python side is
//   tested with), and that the vectors' summaries, sent the reporter's way, come back as the vectors' facts.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { isBlockedHost, type Mode, MODES, resolveMode, useReplay } from "@attest-ai/vitest";

import { EXAMPLE_FIXTURES, fixturesDir, PACKAGE, REPO } from "./helpers.js";

const VECTORS = path.join(REPO, "tests", "contract");
const PROJECT = path.join(PACKAGE, "test", "projects", "contract");
const FILE = "sdks/vitest/test/projects/contract/contract.test.ts";
const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");

function cases<T>(file: string): T[] {
  return JSON.parse(readFileSync(path.join(VECTORS, file), "utf8")).cases as T[];
}

interface HostCase {
  host: string;
  blocked: boolean;
}
interface MissCase {
  name: string;
  kind: string;
  line: string;
}
interface Miss {
  message: string;
  component: string;
  not_evaluated?: boolean;
}
interface FactsCase {
  name: string;
  sessions: Array<Record<string, unknown> & { miss_list: Miss[]; mode: string }>;
  facts: Record<string, unknown> & { miss?: Miss };
}
interface ModeCase {
  what: string;
  given: string | null;
  env: Record<string, string>;
  mode?: string;
  refused?: string;
}
interface Row {
  id: string;
  outcome: string;
  message: string | null;
  replay?: Record<string, unknown> & { miss?: Miss };
}

const dropped = new Set(["CI", "ATTEST_REPLAY", "ATTEST_EGRESS", "FORCE_COLOR"]);
const childEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));

describe("hosts.json", () => {
  for (const vector of cases<HostCase>("hosts.json")) {
    it(`${vector.host} is ${vector.blocked ? "" : "not "}blocked`, () => {
      expect(isBlockedHost(vector.host)).toBe(vector.blocked);
    });
  }
});

describe("miss_kinds.json", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attest-contract-"));
  const reportPath = path.join(dir, "attest-report.json");
  let rows: Record<string, Row> = {};
  let output = "";

  beforeAll(() => {
    const run = spawnSync("node", [VITEST, "run"], {
      cwd: PROJECT,
      env: { ...childEnv(), ATTEST_REPORT: reportPath, ATTEST_VITEST_FIXTURES: fixturesDir(), NO_COLOR: "1" },
      encoding: "utf8",
    });
    output = run.stdout + run.stderr;
    expect(run.status, output).toBe(1);
    const report = JSON.parse(readFileSync(reportPath, "utf8")) as { tests: Row[] };
    rows = Object.fromEntries(report.tests.map((row) => [row.id.slice(FILE.length + 2), row]));
  }, 300_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const vector of cases<MissCase>("miss_kinds.json")) {
    it(`${vector.name}: ${vector.kind}`, () => {
      // The fixtures are outside the project's default place, so the hint also names their directory.
      const fixture = `contract-${vector.name}`;
      const line = vector.line.replace(`--refresh ${fixture}\``, `--refresh ${fixture} --fixtures-dir ${fixturesDir()}\``);
      expect(rows[vector.name], output).toMatchObject({ outcome: "failed", message: line, replay: { miss: { message: line, component: vector.kind } } });
      expect(output).toContain(line);
    });
  }
});

describe("replay_facts.json", () => {
  const vectors = cases<FactsCase>("replay_facts.json");

  it("has a real engine's summary keys in every vector's summaries", async () => {
    const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    const summary = await replay.stop(); // nothing called: the recordings stay unused, which fails nothing
    const keys = [...Object.keys(summary ?? {}), "fixture"].sort(); // the helper adds the fixture it opened
    for (const vector of vectors) {
      for (const session of vector.sessions) expect(Object.keys(session).sort(), vector.name).toEqual(keys);
    }
  });

  it("gives each vector's facts through the reporter's `attest-engine report`", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "attest-contract-facts-"));
    try {
      const output = path.join(dir, "attest-report.json");
      const tests = vectors.map((vector) => row(vector));
      const input = JSON.stringify({ runner: "vitest", guard: false, duration: 1, tests });
      const done = spawnSync("attest-engine", ["report", "--output", output], { input, encoding: "utf8", env: childEnv() });
      expect(done.status, done.stderr).toBe(0);
      const written = JSON.parse(readFileSync(output, "utf8")) as { tests: Row[] };
      for (const [i, vector] of vectors.entries()) {
        // A row's miss leaves out `not_evaluated`: the row's outcome says it.
        const { miss, ...facts } = vector.facts;
        const expected = miss ? { ...facts, miss: Object.fromEntries(Object.entries(miss).filter(([k]) => k !== "not_evaluated")) } : facts;
        expect(written.tests[i].replay, vector.name).toEqual(expected);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The reporter's row for a test whose sessions are the vector's, with the outcome their miss gives. */
function row(vector: FactsCase): Record<string, unknown> {
  const miss = vector.sessions.flatMap((s) => s.miss_list)[0];
  const base = { id: `contract::${vector.name}`, file: "contract", line: 1, duration: 0, sessions: vector.sessions };
  if (!miss) return { ...base, outcome: "passed", message: null };
  if (miss.not_evaluated) return { ...base, outcome: "not_evaluated", reason: "replay_miss", message: `not_evaluated: replay_miss: ${miss.message}` };
  return { ...base, outcome: "failed", message: miss.message };
}

describe("modes.json", () => {
  it("is the vocabulary the package reads, and the Mode type's", () => {
    const file = path.join(REPO, "toolkit", "attest_toolkit", "replay", "modes.json");
    const words = JSON.parse(readFileSync(file, "utf8")) as { modes: string[] };
    expect([...MODES]).toEqual(words.modes);
    const typed: Record<Mode, true> = { strict: true, auto: true, off: true }; // every member of the type
    expect(Object.keys(typed)).toEqual(words.modes);
  });

  for (const vector of cases<ModeCase>("modes.json")) {
    it(vector.what, () => {
      const given = vector.given ?? undefined;
      if (vector.refused !== undefined) {
        expect(() => resolveMode(given, vector.env)).toThrow(vector.refused);
      } else {
        expect(resolveMode(given, vector.env)).toBe(vector.mode);
      }
    });
  }
});
