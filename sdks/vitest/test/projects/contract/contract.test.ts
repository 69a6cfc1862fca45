// Run by ../../contract.test.ts, which reads the report: each miss vector's calls, sent through a real
// engine as an agent would send them, in a replay of the fixture tests/system/test_vitest.py wrote for it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

const here = path.dirname(fileURLToPath(import.meta.url));
const VECTORS = path.resolve(here, "../../../../../tests/contract/miss_kinds.json");

interface Call {
  path: string;
  body: unknown;
}

const { cases } = JSON.parse(readFileSync(VECTORS, "utf8")) as { cases: { name: string; sent: Call[] }[] };

for (const vector of cases) {
  it(vector.name, async () => {
    const replay = await useReplay(`contract-${vector.name}`, { fixturesDir: process.env.ATTEST_VITEST_FIXTURES, mode: "strict" });
    // The base URL ends with the SDK's `/v1`; a vector's path is the provider's whole path.
    const origin = replay.env.OPENAI_BASE_URL.replace(/\/v1\/?$/, "");
    for (const call of vector.sent) {
      const answer = await fetch(origin + call.path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-contract" },
        body: JSON.stringify(call.body),
      });
      await answer.arrayBuffer();
    }
  });
}
