// The engine dies during a test: that test fails with one line, the next gets a new engine.
import { readFileSync } from "node:fs";

import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";
import { enginePath, fixturesDir } from "./replays.js";

it("sees its engine die", async () => {
  await useReplay("example", { fixturesDir, mode: "strict", enginePath });
  const pids = readFileSync(process.env.ATTEST_TEST_PIDS!, "utf8").trim().split("\n");
  process.kill(Number(pids[pids.length - 1]), "SIGKILL");
});

it("replays on a new engine", async () => {
  await useReplay("example", { fixturesDir, mode: "strict", enginePath });
  expect((await runRefundAgent()).answer).toContain("refunded twice");
});
