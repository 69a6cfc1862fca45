// Real OpenAI and Anthropic exchanges (vcrpy cassettes from ../shared, imported by `attest fixture
// import`) replayed to the official TypeScript SDKs: every recorded request, sent as recorded,
// streams its recorded answer to the end.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { fixturesDir, readFixture, SHARED, SHARED_REASON } from "./helpers.js";

const NAMES = ["real-openai-tools-stream", "real-openai-responses-tools", "real-anthropic-tools-stream", "real-anthropic-tools-roundtrip"];

/** Send one recorded request through the SDK its provider has; the stream's last event type. */
async function send(provider: string, route: string, body: Record<string, any>): Promise<string> {
  let last = "";
  if (provider === "anthropic") {
    const anthropic = new Anthropic({ maxRetries: 0 });
    if (!body.stream) return ((await anthropic.messages.create(body as never)) as Anthropic.Message).stop_reason ?? "";
    const stream = await anthropic.messages.create(body as never);
    for await (const event of stream as AsyncIterable<{ type: string }>) last = event.type;
    return last;
  }
  const openai = new OpenAI({ maxRetries: 0 });
  if (route === "/v1/responses") {
    const stream = await openai.responses.create(body as never);
    for await (const event of stream as AsyncIterable<{ type: string }>) last = event.type;
    return last;
  }
  const stream = await openai.chat.completions.create(body as never);
  for await (const chunk of stream as AsyncIterable<OpenAI.ChatCompletionChunk>) {
    last = chunk.choices[0]?.finish_reason ?? (chunk.usage ? "usage" : last);
  }
  return last;
}

const ENDS: Record<string, string[]> = {
  anthropic: ["message_stop", "tool_use", "end_turn"],
  "/v1/responses": ["response.completed"],
  "/v1/chat/completions": ["tool_calls", "stop", "usage"],
};

describe.skipIf(!SHARED)(`real cassettes${SHARED ? "" : ` (skipped: ${SHARED_REASON})`}`, () => {
  it.each(NAMES)("%s replays to the official SDK", async (name) => {
    const dir = fixturesDir();
    const interactions = readFixture(dir, name).channels.model;
    const replay = await useReplay(name, { fixturesDir: dir, mode: "strict" });
    for (const { provider, path, request } of interactions) {
      const end = await send(provider, path, request.json);
      expect(ENDS[provider === "anthropic" ? provider : path]).toContain(end);
    }
    const summary = await replay.stop();
    expect(summary).toMatchObject({ replayed: interactions.length, misses: 0, live: 0 });
  });
});
