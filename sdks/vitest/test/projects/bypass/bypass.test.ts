// Clients built when the module is imported, before any replay: they keep the provider's URL. Run by
// ../../bypass.test.ts, which serves "the provider" on loopback (its port in FAKE_PORT) and reads the
// report. The provider's names resolve to loopback here, so nothing leaves the machine.
import dns from "node:dns";
import path from "node:path";
import { fileURLToPath } from "node:url";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { expect, it } from "vitest";

import { EgressBlockedError, useReplay } from "@attest-ai/vitest";

import { causes } from "../../helpers.js";

const PROVIDERS = new Set(["api.openai.com", "api.anthropic.com"]);
const lookup = dns.lookup;
(dns as { lookup: unknown }).lookup = (host: string, ...rest: unknown[]) =>
  (lookup as (...args: unknown[]) => void)(PROVIDERS.has(host) ? "127.0.0.1" : host, ...rest);

const port = process.env.FAKE_PORT;
const OPENAI = new OpenAI({ baseURL: `http://api.openai.com:${port}/v1`, apiKey: "sk-test-" + "m".repeat(40), maxRetries: 0 });
const ANTHROPIC = new Anthropic({ baseURL: `http://api.anthropic.com:${port}`, apiKey: "sk-ant-test-" + "m".repeat(40), maxRetries: 0 });

const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../../examples/fixtures");
const ask = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Say hello" }] };

it("strict: a module-level OpenAI client", async () => {
  await useReplay("example", { fixturesDir, mode: "strict" });
  await OPENAI.chat.completions.create(ask);
});

it("strict: a module-level Anthropic client", async () => {
  await useReplay("example", { fixturesDir, mode: "strict" });
  await ANTHROPIC.messages.create({ model: "claude-sonnet-4-6", max_tokens: 64, messages: [{ role: "user", content: "Say hello" }] });
});

it("auto: a module-level OpenAI client", async () => {
  await useReplay("example", { fixturesDir, mode: "auto" });
  const reply = await OPENAI.chat.completions.create(ask);
  expect(reply.choices[0].message.content).toBe("live");
});

it("auto: a module-level OpenAI client, streamed", async () => {
  await useReplay("example", { fixturesDir, mode: "auto" });
  let text = "";
  for await (const chunk of await OPENAI.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } })) {
    text += chunk.choices[0]?.delta.content ?? "";
  }
  expect(text).toBe("live");
});

it("egress blocked: module-level clients meet the guard", async () => {
  await useReplay("example", { fixturesDir, mode: "auto", egress: "block" });
  const key = "sk-test-" + "g".repeat(40);
  const openai = new OpenAI({ baseURL: "https://api.openai.com/v1", apiKey: key, maxRetries: 0 });
  expect(await guardError(openai.chat.completions.create(ask))).toBe("attest egress guard: connection to api.openai.com:443 blocked");
  const anthropic = new Anthropic({ baseURL: "https://api.anthropic.com", apiKey: key, maxRetries: 0 });
  const claude = anthropic.messages.create({ model: "claude-sonnet-4-6", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
  expect(await guardError(claude)).toBe("attest egress guard: connection to api.anthropic.com:443 blocked");
});

/** The guard's message, from the SDK error's cause chain. */
async function guardError(call: Promise<unknown>): Promise<string | undefined> {
  const error = await call.then(() => undefined, (e: unknown) => e);
  return (causes(error).find((e) => e instanceof EgressBlockedError) as Error | undefined)?.message;
}
