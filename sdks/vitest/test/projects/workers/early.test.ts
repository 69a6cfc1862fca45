// The default engine (attest-engine on PATH): started while this file imports, used by every test.
import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";
import { fixturesDir } from "./replays.js";

it("has the worker's engine starting before any test replays", () => {
  const engines = (globalThis as Record<symbol, Map<string, unknown> | undefined>)[Symbol.for("@attest-ai/vitest.engines")];
  expect([...(engines?.keys() ?? [])]).toEqual(["attest-engine"]);
});

for (const n of [1, 2]) {
  it(`replays on the engine started early, test ${n}`, async () => {
    await useReplay("example", { fixturesDir, mode: "strict" });
    expect((await runRefundAgent()).answer).toContain("refunded twice");
  });
}
