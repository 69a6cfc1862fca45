// Every way a test that replays can end. Run by ../../verdicts.test.ts, which reads the report.
import path from "node:path";
import { fileURLToPath } from "node:url";

import OpenAI from "openai";
import { expect, it, onTestFinished } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { QUESTION, runRefundAgent } from "../../agents/refund.mjs";

const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");
const replay = (mode?: "strict" | "auto") => useReplay("example", { fixturesDir, mode });

it("replays", async () => {
  await replay("strict");
  expect((await runRefundAgent()).answer).toContain("refunded twice");
});

it("system prompt changed", async () => {
  await replay("strict");
  await runRefundAgent(QUESTION, { system: "You are a careful refund agent." });
});

it("messages changed", async () => {
  await replay("strict");
  await runRefundAgent("Was order O-2000 refunded twice?");
});

it("tools changed", async () => {
  await replay("strict");
  await runRefundAgent(QUESTION, { toolDescription: "Find an order." });
});

it("params changed", async () => {
  await replay("strict");
  await runRefundAgent(QUESTION, { temperature: 0.5 });
});

it("model changed", async () => {
  await replay("strict");
  await runRefundAgent(QUESTION, { model: "gpt-4.1" });
});

it("more calls than recorded", async () => {
  await replay("strict");
  await runRefundAgent();
  await new OpenAI({ maxRetries: 0 }).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "and?" }] });
});

it("an extra identical call", async () => {
  await replay("strict");
  await runRefundAgent();
  await runRefundAgent();
});

it("a miss the agent caught", async () => {
  await replay("strict");
  try {
    await runRefundAgent(QUESTION, { model: "gpt-4.1" });
  } catch {
    // the agent swallows the provider error and carries on
  }
  expect(true).toBe(true);
});

it.fails("it.fails does not pass a miss", async () => {
  await replay("strict");
  await runRefundAgent(QUESTION, { model: "gpt-4.1" });
});

it.fails("it.fails without a miss", async () => {
  await replay("strict");
  await runRefundAgent();
  expect("the agent's answer").toBe("something else");
});

it("auto miss without a key", async () => {
  await replay("auto");
  await runRefundAgent(QUESTION, { model: "gpt-4.1" });
});

it("auto miss with a key, egress blocked", async () => {
  process.env.OPENAI_API_KEY = "sk-test-" + "e".repeat(40);
  onTestFinished(() => {
    delete process.env.OPENAI_API_KEY;
  });
  await useReplay("example", { fixturesDir, mode: "auto", egress: "block" });
  await runRefundAgent(QUESTION, { model: "gpt-4.1" });
});

it("auto miss without a key, ATTEST_STRICT=1", async () => {
  process.env.ATTEST_STRICT = "1";
  // Registered before the replay, so it runs after the verdict has read the variable.
  onTestFinished(() => {
    delete process.env.ATTEST_STRICT;
  });
  await replay("auto");
  await runRefundAgent(QUESTION, { model: "gpt-4.1" });
});
