// Where the suite's fixtures and tools are. The Python side makes the fixtures (see
// tests/system/test_vitest.py) and passes their directory in ATTEST_VITEST_FIXTURES.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = path.resolve(PACKAGE, "../..");
export const EXAMPLE_FIXTURES = path.join(REPO, "examples", "fixtures");
export const SHARED = process.env.ATTEST_VITEST_SHARED === "1";
export const SHARED_REASON = "no real cassettes: ../shared/real-cassettes is absent, so tests/system/test_vitest.py imported none";

/** The directory of fixtures the Python side made for this run. */
export function fixturesDir(): string {
  const dir = process.env.ATTEST_VITEST_FIXTURES;
  if (!dir || !existsSync(dir)) {
    throw new Error("ATTEST_VITEST_FIXTURES is not set: run this suite through `pytest tests/system/test_vitest.py`");
  }
  return dir;
}

/** A fixture file, parsed. */
export function readFixture(dir: string, name: string): { channels: { model: Array<Record<string, any>> } } {
  return JSON.parse(readFileSync(path.join(dir, `${name}.attest.json`), "utf8"));
}

/** Run the `attest` CLI (from PATH) as a user would. */
export function attest(args: string[], cwd = REPO): { status: number | null; stdout: string; stderr: string } {
  const done = spawnSync("attest", args, { cwd, encoding: "utf8" });
  if (done.error) throw done.error;
  return { status: done.status, stdout: done.stdout, stderr: done.stderr };
}

/** The error and its causes, outermost first (SDKs wrap connection errors). */
export function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && e !== null && chain.length < 10; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}
