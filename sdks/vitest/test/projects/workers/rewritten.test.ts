// A fixture rewritten after a test replayed it, so that its sessions hand out other variables (a tool
// server's variable renamed): the next test was told the old ones, so it fails saying why.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";
import { fixturesDir } from "./replays.js";

const copy = mkdtempSync(path.join(tmpdir(), "attest-rewritten-"));
const fixture = path.join(copy, "example.attest.json");
copyFileSync(path.join(fixturesDir, "example.attest.json"), fixture);
afterAll(() => rmSync(copy, { recursive: true, force: true }));

// The engine's own Python writes the fixture, with its digest, as `attest` would.
const engine = spawnSync("sh", ["-c", "command -v attest-engine"], { encoding: "utf8" }).stdout.trim();
const RENAME = [
  "import json, sys",
  "from attest_toolkit.fixtures.document import write_fixture",
  "doc = json.load(open(sys.argv[1]))",
  "doc['tools']['orders']['env'] = 'ORDERS_MCP_URL_RENAMED'",
  "write_fixture(sys.argv[1], doc)",
].join("\n");

it("replays the fixture", async () => {
  await useReplay("example", { fixturesDir: copy, mode: "strict" });
  expect((await runRefundAgent()).answer).toContain("refunded twice");
});

it("replays it once it was rewritten", async () => {
  const done = spawnSync(path.join(path.dirname(engine), "python"), ["-c", RENAME, fixture], { encoding: "utf8" });
  expect(done.status, done.stderr).toBe(0);
  await useReplay("example", { fixturesDir: copy, mode: "strict" });
});

it("replays it again, with its new variables", async () => {
  const replay = await useReplay("example", { fixturesDir: copy, mode: "strict" });
  expect(replay.env.ORDERS_MCP_URL_RENAMED).toContain("/tool/orders");
});
