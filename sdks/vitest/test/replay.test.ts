// useReplay against the bundled example and fixtures the Python side recorded, with the official SDKs.
import { describe, expect, it, onTestFinished } from "vitest";

import { ReplayError, useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "./agents/refund.mjs";
import { runWeatherAgent } from "./agents/weather.mjs";
import { EXAMPLE_FIXTURES, fixturesDir } from "./helpers.js";

// Every provider's variables, as the engine names them: the helper sets what the engine hands it.
const VARIABLES = [
  "OPENAI_BASE_URL",
  "ANTHROPIC_BASE_URL",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "GOOGLE_GEMINI_BASE_URL",
  "AZURE_OPENAI_ENDPOINT",
];

describe("replay", () => {
  it("replays the bundled example through the openai package: a tool call, then a stream", async () => {
    await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    const result = await runRefundAgent();
    expect(result.toolCalls.map((c: any) => c.function.name)).toEqual(["lookup_order"]);
    expect(result.toolCalls[0].id).toMatch(/^call_/);
    expect(result.answer).toContain("refunded twice");
  });

  it("replays a captured Anthropic run: tool_use, then a streamed answer", async () => {
    await useReplay("weather", { fixturesDir: fixturesDir(), mode: "strict" });
    const result = await runWeatherAgent("Paris");
    expect(result.toolUse.input).toEqual({ city: "Paris" });
    expect(result.toolUse.id).toMatch(/^toolu_/);
    expect(result.answer).toBe("It is sunny and 21°C in Paris.");
  });

  it("points the provider variables at the engine until the test ends, then restores them", async () => {
    const before = Object.fromEntries(VARIABLES.map((k) => [k, process.env[k]]));
    process.env.OPENAI_BASE_URL = "http://127.0.0.1:9/mine";
    onTestFinished(() => {
      // Runs after the replay's own hook (hooks run last-registered first): restored by now.
      expect(process.env.OPENAI_BASE_URL).toBe("http://127.0.0.1:9/mine");
      expect(process.env.ANTHROPIC_BASE_URL).toBe(before.ANTHROPIC_BASE_URL);
      if (before.OPENAI_BASE_URL === undefined) delete process.env.OPENAI_BASE_URL;
      else process.env.OPENAI_BASE_URL = before.OPENAI_BASE_URL;
    });
    const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    for (const name of VARIABLES) {
      expect(process.env[name]).toBe(replay.env[name]);
      expect(process.env[name]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    }
    await runRefundAgent();
  });

  it("runs one replay at a time in a process, with a clear error for a second", async () => {
    const first = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    const second = useReplay("weather", { fixturesDir: fixturesDir(), mode: "strict" });
    await expect(second).rejects.toThrow(ReplayError);
    await expect(second).rejects.toThrow(
      '"example" is still running; only one replay runs at a time in a process (it sets process-wide environment variables)',
    );
    await runRefundAgent();
    // Once the first stops, another can start in the same test.
    const summary = await first.stop();
    expect(summary?.replayed).toBe(2);
    await useReplay("weather", { fixturesDir: fixturesDir(), mode: "strict" });
    expect((await runWeatherAgent("Paris")).answer).toContain("sunny");
  });

  it("starts nothing in off mode", async () => {
    const before = process.env.OPENAI_BASE_URL;
    const replay = await useReplay("example", { fixturesDir: "/nonexistent", mode: "off" });
    expect(replay.env).toEqual({});
    expect(process.env.OPENAI_BASE_URL).toBe(before);
  });

  it("refuses a mode it does not know, and a missing fixture, in one line", async () => {
    await expect(useReplay("example", { mode: "sometimes" as never })).rejects.toThrow(
      'attest replay: mode must be strict, auto or off, not "sometimes"',
    );
    const missing = useReplay("no-such-fixture", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    await expect(missing).rejects.toThrow(/^attest replay: .*no-such-fixture\.attest\.json: no such fixture; record it with `attest capture`$/);
  });

  it("names a missing engine", async () => {
    const missing = useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict", enginePath: "/nonexistent/attest-engine" });
    await expect(missing).rejects.toThrow(
      'attest replay: cannot run /nonexistent/attest-engine: not found; install attest-toolkit (pip install "attest-toolkit @ git+https://github.com/attest-toolkit/attest-toolkit") or pass enginePath',
    );
  });
});
