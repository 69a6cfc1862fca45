// Three tests that each replay the whole example: a session that kept another test's counters,
// fixtures or variables would miss (an extra identical call) or point at the wrong session.
import path from "node:path";
import { fileURLToPath } from "node:url";

import { expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "../../agents/refund.mjs";

export const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");
// The engine the outer test wraps, so it can count the engines and see them end.
export const enginePath = process.env.ATTEST_TEST_ENGINE;

export function replayingTests(file: string): void {
  const seen = new Set<string>();
  for (const n of [1, 2, 3]) {
    it(`${file} replays the example, test ${n}`, async () => {
      const replay = await useReplay("example", { fixturesDir, mode: "strict", enginePath });
      expect(seen.has(replay.env.OPENAI_BASE_URL)).toBe(false); // a session of its own
      seen.add(replay.env.OPENAI_BASE_URL);
      expect((await runRefundAgent()).answer).toContain("refunded twice");
      expect((await replay.stop())?.replayed).toBe(2);
    });
  }
}
