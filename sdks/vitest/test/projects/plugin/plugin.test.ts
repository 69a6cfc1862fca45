// With attestReplay(), the worker's engine starts before the test file (and the package) is loaded.
import { expect, it } from "vitest";

import { fixturesDir } from "../workers/replays.js";

it("has the worker's engine starting before the user's setup file ran", () => {
  expect((globalThis as Record<string, unknown>).enginesAtOwnSetup).toEqual(["attest-engine"]);
});

for (const n of [1, 2]) {
  it(`replays on the engine the plugin started, test ${n}`, async () => {
    const { useReplay } = await import("@attest-ai/vitest");
    const { runRefundAgent } = await import("../../agents/refund.mjs");
    await useReplay("example", { fixturesDir, mode: "strict" });
    expect((await runRefundAgent()).answer).toContain("refunded twice");
  });
}
