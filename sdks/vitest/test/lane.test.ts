// The lane (src/lane.ts): while a replay runs, a replayed call made with Node's fetch reaches the engine
// on the worker's own link, not over HTTP; a call the lane does not take (a Request, a form body) goes
// over HTTP as before. What goes over HTTP is seen at undici's global dispatcher, which every fetch
// of this process that opens a connection passes through.
import { readFileSync } from "node:fs";
import path from "node:path";

import OpenAI from "openai";
import { describe, expect, it, vi } from "vitest";

import { useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "./agents/refund.mjs";
import { EXAMPLE_FIXTURES, fixturesDir } from "./helpers.js";

// Where undici (Node's fetch) keeps the global dispatcher.
const DISPATCHER = Symbol.for("undici.globalDispatcher.1");

interface Dispatcher {
  dispatch(options: { origin?: string | URL }, handler: unknown): boolean;
}

/** Record the origin of every request Node's fetch sends over HTTP from now on, until `stop`. */
function watchHttp(): { origins: string[]; stop(): void } {
  void globalThis.Response; // loading Node's fetch sets its global dispatcher
  const slot = globalThis as unknown as Record<symbol, Dispatcher>;
  const inner = slot[DISPATCHER];
  const origins: string[] = [];
  slot[DISPATCHER] = new Proxy(inner, {
    get(target, property) {
      if (property === "dispatch") {
        return (options: { origin?: string | URL }, handler: unknown) => {
          origins.push(String(options.origin));
          return target.dispatch(options, handler);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { origins, stop: () => void (slot[DISPATCHER] = inner) };
}

interface LaneStream {
  request: Record<string, unknown>;
  words: string[];
  events: number;
}

function laneStream(): LaneStream {
  return JSON.parse(readFileSync(path.join(fixturesDir(), "lane-stream.request.json"), "utf8")) as LaneStream;
}

const origin = (url: string) => new URL(url).origin;

/** The words of a streamed call made with the openai package, its base URL from the replay's variables. */
async function streamedWords(request: Record<string, unknown>): Promise<string[]> {
  const client = new OpenAI({ apiKey: "sk-placeholder", maxRetries: 0 });
  const seen: string[] = [];
  for await (const chunk of (await client.chat.completions.create(request as never)) as unknown as AsyncIterable<any>) {
    if (chunk.choices[0]?.delta?.content) seen.push(chunk.choices[0].delta.content);
  }
  return seen;
}

describe("the lane", () => {
  it("answers an agent's replayed calls on the worker's link: none reaches the engine over HTTP", async () => {
    const http = watchHttp();
    try {
      const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
      const result = await runRefundAgent(); // the openai package: a tool call, then a stream
      expect(result.answer).toContain("refunded twice");
      expect(http.origins).not.toContain(origin(replay.env.OPENAI_BASE_URL));
      expect((await replay.stop())?.replayed).toBe(2);
    } finally {
      http.stop();
    }
  });

  it("gives a stream one chunk per recorded event, the bytes HTTP gives", async () => {
    const { request, words, events } = laneStream();
    const read = async (response: Response) => {
      const chunks: string[] = [];
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) chunks.push(decoder.decode(chunk));
      return chunks;
    };
    const ask = (base: string, viaRequest: boolean) => {
      const url = `${base}/chat/completions`;
      const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) };
      return viaRequest ? fetch(new Request(url, init)) : fetch(url, init);
    };

    const http = watchHttp();
    try {
      const laned = await useReplay("lane-stream", { fixturesDir: fixturesDir(), mode: "strict" });
      const base = laned.env.OPENAI_BASE_URL;
      const response = await ask(base, false);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(response.url).toBe(`${base}/chat/completions`);
      const chunks = await read(response);
      expect(chunks).toHaveLength(events);
      const content = (chunk: string) => (chunk.startsWith("data: [DONE]") ? null : JSON.parse(chunk.slice("data: ".length)).choices[0].delta.content);
      expect(chunks.map(content)).toEqual([...words, null]);
      expect(http.origins).toEqual([]);
      expect((await laned.stop())?.replayed).toBe(1);

      // A Request is not taken by the lane: over HTTP, the same recording gives the same text.
      const overHttp = await useReplay("lane-stream", { fixturesDir: fixturesDir(), mode: "strict" });
      const again = await ask(overHttp.env.OPENAI_BASE_URL, true);
      expect((await read(again)).join("")).toBe(chunks.join(""));
      expect(http.origins).toEqual([origin(base)]);
      expect((await overHttp.stop())?.replayed).toBe(1);
    } finally {
      http.stop();
    }
  });

  it("rejects an aborted call as fetch does, taking nothing", async () => {
    const { request, words } = laneStream();
    const replay = await useReplay("lane-stream", { fixturesDir: fixturesDir(), mode: "strict" });
    const url = `${replay.env.OPENAI_BASE_URL}/chat/completions`;
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) };
    const aborted = new AbortController();
    aborted.abort();
    await expect(fetch(url, { ...init, signal: aborted.signal })).rejects.toMatchObject({ name: "AbortError" });
    // The recording is still there for the call that is not aborted, through the openai package.
    expect(await streamedWords(request)).toEqual(words);
    expect((await replay.stop())?.replayed).toBe(1);
  });

  it("answers a call the engine answered before in the worker itself, and the engine counts it", async () => {
    // The package's own engine module, as the package loaded it: what the worker asks the engine.
    const { WorkerEngine } = await import("../dist/engine.js");
    type Asking = { request(message: Record<string, unknown>, doing: string): Promise<unknown> };
    const asked = vi.spyOn(WorkerEngine.prototype as unknown as Asking, "request");
    const { request, words } = laneStream();
    const http = watchHttp();
    try {
      const calls = () => asked.mock.calls.filter(([message]) => "call" in message).length;
      let first = 0;
      for (let n = 0; n < 3; n += 1) {
        if (n === 1) first = calls();
        const replay = await useReplay("lane-stream", { fixturesDir: fixturesDir(), mode: "strict" });
        expect(await streamedWords(request)).toEqual(words);
        expect((await replay.stop())?.replayed).toBe(1);
      }
      // Each session was opened and closed through the engine module the spy watches (its first open
      // on a line, the others from its template)...
      expect(asked.mock.calls.filter(([message]) => "close" in message)).toHaveLength(3);
      // ...and only the first session's call could have gone to the engine, to learn its key (an earlier
      // test of this file may have sent it already): the later ones were answered in this worker.
      expect(first).toBeLessThanOrEqual(1);
      expect(calls()).toBe(first);
      expect(http.origins).toEqual([]);
    } finally {
      http.stop();
      asked.mockRestore();
    }
  });

  it("sends every call over HTTP with ATTEST_LANE=off", async () => {
    process.env.ATTEST_LANE = "off";
    const http = watchHttp();
    try {
      const before = globalThis.fetch;
      const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
      expect(globalThis.fetch).toBe(before);
      await runRefundAgent();
      expect(http.origins.filter((o) => o === origin(replay.env.OPENAI_BASE_URL))).toHaveLength(2);
      expect((await replay.stop())?.replayed).toBe(2);
    } finally {
      http.stop();
      delete process.env.ATTEST_LANE;
    }
  });

  it("steps aside for a fetch replaced before the replay (a spy): it sees every call, sent over HTTP", async () => {
    const spy = vi.spyOn(globalThis, "fetch");
    const http = watchHttp();
    try {
      const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
      expect(globalThis.fetch).toBe(spy);
      await runRefundAgent();
      const engine = origin(replay.env.OPENAI_BASE_URL);
      expect(spy.mock.calls.filter(([url]) => String(url).startsWith(engine))).toHaveLength(2);
      expect(http.origins.filter((o) => o === engine)).toHaveLength(2);
      expect((await replay.stop())?.replayed).toBe(2);
    } finally {
      http.stop();
      spy.mockRestore();
    }
  });

  it("puts fetch back when the replay stops", async () => {
    const before = globalThis.fetch;
    const replay = await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict" });
    expect(globalThis.fetch).not.toBe(before);
    await runRefundAgent();
    await replay.stop();
    expect(globalThis.fetch).toBe(before);
  });
});
