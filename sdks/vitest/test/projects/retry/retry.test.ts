// The first attempt misses (the model changed); the retry replays cleanly.
import path from "node:path";
import { fileURLToPath } from "node:url";

import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { QUESTION, runRefundAgent } from "../../agents/refund.mjs";

const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");
let attempt = 0;

it("a miss, then a passing retry", { retry: 2 }, async () => {
  attempt += 1;
  await useReplay("example", { fixturesDir, mode: "strict" });
  const answer = await runRefundAgent(QUESTION, attempt === 1 ? { model: "gpt-4.1" } : {});
  expect(answer.answer).toContain("refunded twice");
});
