// The engine attestReplay() started for the run, claimed by this worker, dies during a test: that test
// fails with one line, the next gets a new engine.
import { readFileSync } from "node:fs";

import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";
import { fixturesDir } from "../workers/replays.js";

it("sees the run's engine die", async () => {
  await useReplay("example", { fixturesDir, mode: "strict" });
  const pids = readFileSync(process.env.ATTEST_TEST_PIDS!, "utf8").trim().split("\n");
  process.kill(Number(pids[0]), "SIGKILL"); // the first engine started: the run's
});

it("replays on a new engine", async () => {
  await useReplay("example", { fixturesDir, mode: "strict" });
  expect((await runRefundAgent()).answer).toContain("refunded twice");
});
