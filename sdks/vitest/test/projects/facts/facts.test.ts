// Run by ../../facts.test.ts, which reads the report: a replay that leaves a recording unused and
// calls a recorded tool, and one whose changed requests the fixture's ignore rules serve as drift.
import path from "node:path";
import { fileURLToPath } from "node:url";

import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { QUESTION, runRefundAgent } from "../../agents/refund.mjs";

const examples = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");

it("one model call of two, and the recorded tool", async () => {
  await useReplay("example", { fixturesDir: examples, mode: "strict" });
  const call = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "lookup_order", arguments: { order_id: "O-1042" } } };
  const answer = await fetch(process.env.ORDERS_MCP_URL!, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify(call),
  });
  expect(await answer.text()).toContain("O-1042");
  expect((await runRefundAgent(QUESTION, { firstCallOnly: true })).toolCalls).toHaveLength(1);
});

it("a changed temperature the fixture's rules allow", async () => {
  await useReplay("example-ignore", { fixturesDir: process.env.ATTEST_VITEST_FIXTURES, mode: "strict" });
  expect((await runRefundAgent(QUESTION, { temperature: 0.5 })).answer).toContain("refunded twice");
});
