// A Vitest file of 100 tests, each building the openai client and making one non-streamed call, as
// a test suite would, against one variant: useReplay for attest (a session per test), else the
// variant set up once for the file, as its documentation sets it up.
import OpenAI from "openai";
import { afterAll, beforeAll, expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { spec, VARIANTS } from "../mocks.mjs";

export const TESTS = 100;

export function hundredTests(name) {
  let variant;
  let url;
  if (name !== "attest") {
    beforeAll(async () => {
      variant = await VARIANTS[name]();
      url = await variant.enable();
    });
    afterAll(async () => {
      await variant.disable();
      await variant.close?.();
    });
  }
  for (let n = 0; n < TESTS; n += 1) {
    it(`${name} test ${n}`, async () => {
      if (name === "attest") await useReplay(spec.per_test_fixture, { fixturesDir: spec.fixtures_dir, mode: "strict" });
      const client = new OpenAI({ baseURL: url, apiKey: "bench-placeholder", maxRetries: 0 });
      const reply = await client.chat.completions.create(spec.requests.plain);
      expect(reply.choices[0].message.content).toBeTruthy();
    });
  }
}
