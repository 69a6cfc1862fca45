// The example agent's first call meets faults: openai's own maxRetries recovers from a 429, and a
// disconnect and a cut stream reach it as fetch's own errors (the test's fetch would otherwise be
// answered on the worker's link: a session with faults is served over HTTP only).
import path from "node:path";
import { fileURLToPath } from "node:url";

import OpenAI from "openai";
import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { QUESTION, runRefundAgent } from "../../agents/refund.mjs";

const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");

it("recovers from a rate limit", async () => {
  await useReplay("example", { fixturesDir, mode: "strict", faults: ["status=429,retry-after=0"] });
  const answer = await runRefundAgent(QUESTION, { maxRetries: 1 });
  expect(answer.answer).toContain("refunded twice");
});

it("meets a disconnect as a connection error", async () => {
  await useReplay("example", { fixturesDir, mode: "strict", faults: ["disconnect"] });
  await expect(runRefundAgent(QUESTION)).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
});

it("meets a cut stream as an error after exactly its first events' text", async () => {
  await useReplay("example", { fixturesDir, mode: "strict", faults: ["call=2:cut=3"] });
  const seen: string[] = [];
  await expect(runRefundAgent(QUESTION, { onText: (text: string) => seen.push(text) })).rejects.toThrow();
  expect(seen.join("")).toBe("Yes: order O-1042 was refunded twice");
});
