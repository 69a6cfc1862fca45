// A fixture removed after a test replayed it: the next test that asks for it fails with the engine's
// line (that open is not waited for, so the test learns it when its replay ends).
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";
import { enginePath, fixturesDir } from "./replays.js";

const copy = mkdtempSync(path.join(tmpdir(), "attest-gone-"));
copyFileSync(path.join(fixturesDir, "example.attest.json"), path.join(copy, "example.attest.json"));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

it("replays the fixture", async () => {
  await useReplay("example", { fixturesDir: copy, mode: "strict", enginePath });
  expect((await runRefundAgent()).answer).toContain("refunded twice");
});

it("asks for it once it is gone", async () => {
  rmSync(path.join(copy, "example.attest.json"));
  await useReplay("example", { fixturesDir: copy, mode: "strict", enginePath });
});
