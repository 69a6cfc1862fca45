// The variants the Node suite compares, each answering the official openai package with the same
// recorded bytes (routes.json, written by ../node_suite.py from the engine's own recordings):
// attest (an `attest-engine serve` session, over HTTP or over the lane useReplay routes fetch to), msw,
// nock, aimock and a bare node:http server.
// Each has enable() and disable(), so the variants can take turns in one process.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SDK = path.resolve(HERE, "../../sdks/vitest");
export const OPENAI = "https://api.openai.com/v1";
export const spec = JSON.parse(readFileSync(process.env.BENCH_SPEC, "utf8"));
const encoder = new TextEncoder();

/** The route a request body asks for: the stream or the plain answer. */
function routeOf(body) {
  return body && body.stream ? spec.routes.stream : spec.routes.plain;
}

function headersOf(route) {
  return Object.fromEntries(route.headers);
}

function webBody(route) {
  if (!route.events) return route.body;
  return new ReadableStream({
    start(controller) {
      for (const event of route.events) controller.enqueue(encoder.encode(event));
      controller.close();
    },
  });
}

/** attest: a session on the worker's engine; with `lane`, fetch reaches it on its link as useReplay's does. */
export async function attest({ lane = false } = {}) {
  const { workerEngine } = await import(path.join(SDK, "dist", "engine.js"));
  const { route } = await import(path.join(SDK, "dist", "lane.js"));
  const engine = await workerEngine(process.env.BENCH_ENGINE ?? "attest-engine");
  let session;
  let unroute = () => undefined;
  return {
    name: lane ? "attest, lane" : "attest",
    async enable() {
      session = await engine.open({ fixture: spec.fixture, mode: "strict", noLive: true });
      if (lane) unroute = route(engine.origin, (call) => engine.call(call));
      return session.env.OPENAI_BASE_URL;
    },
    async disable() {
      unroute();
      const summary = await engine.close(session.id);
      if (summary.misses) throw new Error("attest missed: " + summary.miss_list[0].message);
    },
  };
}

export async function msw() {
  const { setupServer } = await import("msw/node");
  const { http: route, HttpResponse } = await import("msw");
  const server = setupServer(
    route.post(`${OPENAI}/chat/completions`, async ({ request }) => {
      const chosen = routeOf(await request.json());
      return new HttpResponse(webBody(chosen), { status: chosen.status, headers: headersOf(chosen) });
    }),
  );
  return {
    name: "msw",
    async enable() {
      server.listen({ onUnhandledRequest: "error" });
      return OPENAI;
    },
    async disable() {
      server.close();
    },
  };
}

export async function nock() {
  const { default: nock } = await import("nock");
  nock.restore();
  return {
    name: "nock",
    async enable() {
      nock.activate();
      nock("https://api.openai.com")
        .persist()
        .post("/v1/chat/completions")
        .reply((_uri, body) => {
          const chosen = routeOf(typeof body === "string" ? JSON.parse(body) : body);
          const payload = chosen.events ? Readable.from(chosen.events.map((e) => Buffer.from(e))) : chosen.body;
          return [chosen.status, payload, headersOf(chosen)];
        });
      return OPENAI;
    },
    async disable() {
      nock.cleanAll();
      nock.restore();
    },
  };
}

/** A bare node:http server on loopback: no lookup, the recorded bytes, one write per event. */
export function bareServer() {
  return http.createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const chosen = routeOf(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      response.writeHead(chosen.status, headersOf(chosen));
      if (chosen.events) for (const event of chosen.events) response.write(event);
      response.end(chosen.events ? undefined : chosen.body);
    });
  });
}

export async function bare() {
  const server = bareServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  return {
    name: "node:http",
    async enable() {
      return url;
    },
    async disable() {},
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * The same bare server in a process of its own, as the engine is: what crossing to another process
 * costs a call, with no lookup at all.
 */
export async function bareProcess() {
  const child = spawn(process.execPath, [path.join(HERE, "bare_server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((resolve) => child.stdout.once("data", (data) => resolve(String(data).trim())));
  return {
    name: "node:http, own process",
    async enable() {
      return `http://127.0.0.1:${port}/v1`;
    },
    async disable() {},
    close: async () => child.kill(),
  };
}

/** aimock answers from its own fixture format and builds its own bytes: the same text, its framing. */
export async function aimock() {
  const { LLMock } = await import("@copilotkit/aimock");
  const mock = new LLMock({ port: 0, chunkSize: spec.aimock.chunk_size });
  mock.onMessage(spec.question, { content: spec.aimock.content });
  await mock.start();
  return {
    name: "aimock",
    async enable() {
      return mock.url + "/v1";
    },
    async disable() {},
    close: () => mock.stop(),
  };
}

/**
 * The SDK alone: `fetch` answers at once with the same bytes (no interception, no lookup, no socket),
 * the cost no replay in the test's process can go below.
 */
export async function sdkAlone() {
  let saved;
  return {
    name: "the SDK alone",
    async enable() {
      saved = globalThis.fetch;
      globalThis.fetch = async (_url, init) => {
        const chosen = routeOf(JSON.parse(init.body));
        return new Response(webBody(chosen), { status: chosen.status, headers: headersOf(chosen) });
      };
      return OPENAI;
    },
    async disable() {
      globalThis.fetch = saved;
    },
  };
}

export const VARIANTS = {
  attest,
  "attest, lane": () => attest({ lane: true }),
  msw,
  nock,
  aimock,
  "node:http": bare,
  "node:http, own process": bareProcess,
  "the SDK alone": sdkAlone,
};
