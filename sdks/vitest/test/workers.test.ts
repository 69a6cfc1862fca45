// One engine per Vitest worker: runs test/projects/workers with each pool, with and without isolation,
// through an engine wrapper that writes down each engine it starts, and checks what a user would: every
// test replays on its own session, a worker starts one engine whatever its test count, an engine that
// dies fails the test that saw it in one line and is replaced, and no engine outlives the run.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";

import { afterAll, describe, expect, it } from "vitest";

import { PACKAGE, REPO } from "./helpers.js";

const PROJECT = path.join(PACKAGE, "test", "projects", "workers");
const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");
const dir = mkdtempSync(path.join(tmpdir(), "attest-workers-"));
const ENGINE = path.join(dir, "attest-engine");
writeFileSync(ENGINE, '#!/bin/sh\necho $$ >> "$ATTEST_TEST_PIDS"\nexec attest-engine "$@"\n');
chmodSync(ENGINE, 0o755);

interface Run {
  status: number | null;
  output: string;
  engines: number[];
  results: Record<string, { status: string; failureMessages: string[] }>;
}

/** Run the project as a user would, with the engine wrapper; the engines it started, by pid. */
function runProject(name: string, ...args: string[]): Run {
  return runWith({}, name, ...args);
}

function runWith(extra: Record<string, string>, name: string, ...args: string[]): Run {
  return runIn(PROJECT, extra, name, ...args);
}

function runIn(project: string, extra: Record<string, string>, name: string, ...args: string[]): Run {
  const pids = path.join(dir, `${name}.pids`);
  const json = path.join(dir, `${name}.json`);
  const dropped = new Set(["CI", "ATTEST_REPLAY", "FORCE_COLOR"]);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));
  const done = spawnSync("node", [VITEST, "run", "--reporter=json", `--outputFile=${json}`, ...args], {
    cwd: project,
    env: { ...env, ATTEST_TEST_ENGINE: ENGINE, ATTEST_TEST_PIDS: pids, NO_COLOR: "1", ...extra },
    encoding: "utf8",
  });
  const report = JSON.parse(readFileSync(json, "utf8"));
  const results = Object.fromEntries(
    report.testResults.flatMap((file: any) => file.assertionResults.map((t: any) => [t.title, t])),
  );
  const engines = existsSync(pids) ? readFileSync(pids, "utf8").trim().split("\n").map(Number) : [];
  return { status: done.status, output: done.stdout + done.stderr, engines, results };
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether every engine has exited within `ms` (an engine ends once it reads the end of its input). */
async function allEnded(pids: number[], ms = 15_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await delay(25)) {
    if (!pids.some(running)) return true;
  }
  return false;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["threads", []],
  ["threads", ["--no-isolate"]],
  ["forks", []],
  ["forks", ["--no-isolate"]],
])("the %s pool %j", (pool, extra) => {
  it("starts one engine per worker, a session per test, and ends the engines with the run", async () => {
    const name = `${pool}${extra.join("")}`;
    const run = runProject(name, `--pool=${pool}`, ...extra, "first.test.ts", "second.test.ts");
    expect(run.status, run.output).toBe(0);
    expect(Object.values(run.results).map((t) => t.status)).toEqual(Array(6).fill("passed"));
    // Six tests in two files: one engine per worker, so at most one per file, and fewer with one worker.
    expect(run.engines.length).toBeGreaterThanOrEqual(1);
    expect(run.engines.length).toBeLessThanOrEqual(2);
    expect(await allEnded(run.engines)).toBe(true);
  });
});

it("starts one engine for a worker that runs every file, without isolation", async () => {
  const run = runProject("one-worker", "--no-isolate", "--maxWorkers=1", "first.test.ts", "second.test.ts");
  expect(run.status, run.output).toBe(0);
  expect(run.engines).toHaveLength(1);
  expect(await allEnded(run.engines)).toBe(true);
});

/** PATH with attest-engine a wrapper that writes down each engine, then runs the real one. */
function wrappedPath(): string {
  const bin = path.join(dir, "bin");
  if (!existsSync(bin)) {
    const real = spawnSync("sh", ["-c", "command -v attest-engine"], { encoding: "utf8" }).stdout.trim();
    mkdirSync(bin);
    writeFileSync(path.join(bin, "attest-engine"), `#!/bin/sh\necho $$ >> "$ATTEST_TEST_PIDS"\nexec ${real} "$@"\n`);
    chmodSync(path.join(bin, "attest-engine"), 0o755);
  }
  return bin + path.delimiter + process.env.PATH;
}

it("starts the default engine while the file imports, and every test uses it", async () => {
  const run = runWith({ PATH: wrappedPath() }, "early", "early.test.ts");
  expect(run.status, run.output).toBe(0);
  expect(run.engines).toHaveLength(1);
  expect(await allEnded(run.engines)).toBe(true);
});

it("starts the engine as the worker starts with attestReplay(), before the user's setup file", async () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const run = runIn(project, { PATH: wrappedPath() }, "plugin", "plugin.test.ts");
  expect(run.status, run.output).toBe(0);
  expect(Object.values(run.results).map((t) => t.status)).toEqual(Array(3).fill("passed"));
  expect(run.engines).toHaveLength(1);
  expect(await allEnded(run.engines)).toBe(true);
});

it("gives the engine attestReplay() started for the run to the first worker, and starts no other", async () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const run = runIn(project, { PATH: wrappedPath() }, "plugin-two", "--pool=threads", "plugin.test.ts", "spare-dies.test.ts", "-t", "replays");
  expect(run.status, run.output).toBe(0);
  expect(Object.values(run.results).filter((t) => t.status === "passed")).toHaveLength(3);
  // Two files: the first worker claims the run's engine, a second worker (if any) starts its own.
  expect(run.engines.length).toBeGreaterThanOrEqual(1);
  expect(run.engines.length).toBeLessThanOrEqual(2);
  expect(await allEnded(run.engines)).toBe(true);
});

it("starts a worker's own engine when its environment differs from the run's, and ends the unused one", async () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const run = runIn(project, { PATH: wrappedPath(), ATTEST_TEST_WORKER_ENV: "1" }, "plugin-env", "plugin.test.ts", "-t", "replays");
  expect(run.status, run.output).toBe(0);
  expect(Object.values(run.results).filter((t) => t.status === "passed")).toHaveLength(2);
  expect(run.engines).toHaveLength(2);
  expect(await allEnded(run.engines)).toBe(true);
});

it("fails the test that saw the run's engine die in one line, and replaces it for the next", async () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const run = runIn(project, { PATH: wrappedPath() }, "plugin-dies", "spare-dies.test.ts");
  expect(run.status, run.output).toBe(1);
  expect(run.results["sees the run's engine die"].failureMessages[0]).toBe(
    "ReplayError: attest replay: the replay engine exited while serving this replay; the next test gets a new engine",
  );
  expect(run.results["replays on a new engine"].status).toBe("passed");
  expect(run.engines).toHaveLength(2);
  expect(await allEnded(run.engines)).toBe(true);
});

it("starts no engine when Vite itself reads a config with attestReplay() (a build, a dev server)", () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const script = [
    'const { resolveConfig } = await import("vite");',
    `await resolveConfig({ root: ${JSON.stringify(project)}, configFile: ${JSON.stringify(path.join(project, "vitest.config.ts"))} }, "build");`,
    'console.log("spare: " + (process.env.ATTEST_VITEST_SPARE ?? "none"));',
  ].join("\n");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST")));
  const done = spawnSync("node", ["--input-type=module", "-e", script], {
    cwd: PACKAGE,
    env: { ...env, PATH: wrappedPath(), ATTEST_TEST_PIDS: path.join(dir, "vite.pids") },
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(done.stdout.trim(), done.stderr).toBe("spare: none");
});

it("starts no engine with attestReplay() when replay is off", () => {
  const project = path.join(PACKAGE, "test", "projects", "plugin");
  const run = runIn(project, { PATH: wrappedPath(), ATTEST_REPLAY: "off" }, "plugin-off", "plugin.test.ts", "-t", "before the user");
  expect(run.results["has the worker's engine starting before the user's setup file ran"].status).toBe("failed");
  expect(run.engines).toHaveLength(0);
});

it("fails the test that saw its engine die in one line, and replaces the engine for the next", async () => {
  const run = runProject("dies", "dies.test.ts");
  expect(run.status, run.output).toBe(1);
  expect(run.results["sees its engine die"].status).toBe("failed");
  expect(run.results["sees its engine die"].failureMessages[0]).toBe(
    "ReplayError: attest replay: the replay engine exited while serving this replay; the next test gets a new engine",
  );
  expect(run.results["replays on a new engine"].status).toBe("passed");
  expect(run.engines).toHaveLength(2);
  expect(await allEnded(run.engines)).toBe(true);
});

it("fails a test whose fixture went missing after an earlier test replayed it, with the engine's line", () => {
  const run = runProject("gone", "gone.test.ts");
  expect(run.status, run.output).toBe(1);
  expect(run.results["replays the fixture"].status).toBe("passed");
  expect(run.results["asks for it once it is gone"].status).toBe("failed");
  expect(run.results["asks for it once it is gone"].failureMessages[0]).toMatch(
    /^ReplayError: attest replay: \S+example\.attest\.json: no such fixture; record it with `attest capture`/,
  );
});

it("fails a test whose fixture was rewritten to hand out other variables, saying so, and serves the next", () => {
  const run = runProject("rewritten", "rewritten.test.ts");
  expect(run.status, run.output).toBe(1);
  expect(run.results["replays the fixture"].status).toBe("passed");
  expect(run.results["replays it once it was rewritten"].failureMessages[0]).toBe(
    "ReplayError: attest replay: this replay's fixture was rewritten while the tests ran and now serves other variables; run the test again",
  );
  expect(run.results["replays it again, with its new variables"].status).toBe("passed");
});

it("keeps a plain Node process alive while it waits for the engine, and lets it exit when idle", () => {
  const fixture = path.join(REPO, "examples", "fixtures", "example.attest.json");
  const script = [
    `const { workerEngine } = await import(${JSON.stringify(path.join(PACKAGE, "dist", "engine.js"))});`,
    "const engine = await workerEngine(process.env.ATTEST_TEST_ENGINE);",
    `const session = await engine.open({ fixture: ${JSON.stringify(fixture)}, mode: "strict", noLive: true });`,
    "const summary = await engine.close(session.id);",
    'console.log("recorded=" + summary.recorded);',
  ].join("\n");
  const pids = path.join(dir, "plain.pids");
  const done = spawnSync("node", ["--input-type=module", "-e", script], {
    env: { ...process.env, ATTEST_TEST_ENGINE: ENGINE, ATTEST_TEST_PIDS: pids },
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(done.status, done.stderr).toBe(0);
  expect(done.stdout.trim()).toBe("recorded=2");
});
