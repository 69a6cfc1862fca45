// The egress guard: provider hosts fail for both official SDKs, directly and through an HTTP proxy
// named by the environment; loopback and other hosts are untouched.
import Anthropic from "@anthropic-ai/sdk";
import { spawnSync } from "node:child_process";
import net from "node:net";
import { Worker } from "node:worker_threads";
import OpenAI from "openai";
import { EnvHttpProxyAgent } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { EgressBlockedError, guard, isBlockedHost, useReplay } from "@attest-ai/vitest";

import { runRefundAgent } from "./agents/refund.mjs";
import { causes, EXAMPLE_FIXTURES, PACKAGE } from "./helpers.js";

const KEY = "sk-test-" + "c".repeat(40);

/** The EgressBlockedError somewhere in an SDK error's cause chain. */
async function blockedBy(call: Promise<unknown>): Promise<EgressBlockedError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  const blocked = causes(error).find((e) => e instanceof EgressBlockedError);
  if (!blocked) throw new Error(`not blocked by the guard: ${String(error)}`);
  return blocked as EgressBlockedError;
}

function ask(openai: OpenAI) {
  return openai.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
}

function askClaude(anthropic: Anthropic) {
  return anthropic.messages.create({ model: "claude-sonnet-4-6", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
}

describe("the provider hosts", () => {
  it("blocks the seed's list, wildcards included, and nothing else", () => {
    for (const host of [
      "api.openai.com",
      "API.OpenAI.com.",
      "api.anthropic.com",
      "generativelanguage.googleapis.com",
      "aiplatform.googleapis.com",
      "europe-west4-aiplatform.googleapis.com",
      "my-resource.openai.azure.com",
      "bedrock-runtime.us-east-1.amazonaws.com",
      "api.mistral.ai",
      "api.groq.com",
      "openrouter.ai",
      "api.together.xyz",
      "api.together.ai",
    ]) {
      expect(isBlockedHost(host), host).toBe(true);
    }
    for (const host of ["127.0.0.1", "localhost", "openai.com", "example.com", "s3.us-east-1.amazonaws.com", "openai.azure.com"]) {
      expect(isBlockedHost(host), host).toBe(false);
    }
  });
});

describe('useReplay(name, { egress: "block" })', () => {
  // A client with a hard-coded provider URL inside such a replay meets the guard, and its test fails
  // as a call that went around the replay: test/bypass.test.ts runs that.
  it("fails a plain socket to a provider host while the replay itself works", async () => {
    await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict", egress: "block" });
    expect((await runRefundAgent()).answer).toContain("refunded twice");

    const socket = net.connect(80, "api.groq.com");
    const error = await new Promise((resolve) => socket.once("error", resolve));
    expect(error).toBeInstanceOf(EgressBlockedError);
  });

  it("covers a worker thread the test starts: it cannot reach a provider host either", async () => {
    await useReplay("example", { fixturesDir: EXAMPLE_FIXTURES, mode: "strict", egress: "block" });
    const code = [
      'const { parentPort } = require("node:worker_threads");',
      'require("node:net").connect(443, "api.openai.com")',
      '  .on("error", (e) => parentPort.postMessage(e.name + ": " + e.message))',
      '  .on("connect", () => parentPort.postMessage("connected"));',
    ].join("\n");
    const worker = new Worker(code, { eval: true });
    const said = await new Promise((resolve, reject) => worker.once("message", resolve).once("error", reject));
    await worker.terminate();
    expect(said).toBe("EgressBlockedError: attest egress guard: connection to api.openai.com:443 blocked");
  });

  it("is off again once the test that turned it on has ended", () => {
    expect(guard.installed()).toBe(false);
  });
});

/** A plain HTTP proxy on loopback that records every byte it receives and refuses every request. */
class RecordingProxy {
  received = "";
  private readonly server = net.createServer((socket) => {
    socket.on("data", (data) => {
      this.received += data.toString("latin1");
      if (this.received.includes("\r\n\r\n")) socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
    });
    socket.on("error", () => undefined);
  });
  port = 0;

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Write raw bytes to the proxy; the error the socket fails with, if any. */
function sendRaw(port: number, bytes: Buffer | string): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
    socket.once("error", resolve);
    socket.once("close", () => resolve(undefined));
    socket.on("data", () => undefined);
  });
}

describe("a proxy named by HTTPS_PROXY, HTTP_PROXY or ALL_PROXY", () => {
  const proxy = new RecordingProxy();
  let url = "";
  const saved = { ...process.env };

  beforeEach(async () => {
    url = await proxy.start();
    proxy.received = "";
    guard.install();
  });

  afterEach(async () => {
    guard.uninstall();
    for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await proxy.stop();
  });

  it("refuses a CONNECT to a provider from both SDKs before the proxy sees it", async () => {
    process.env.HTTPS_PROXY = url;
    const dispatcher = new EnvHttpProxyAgent();
    const openai = new OpenAI({ apiKey: KEY, maxRetries: 0, fetchOptions: { dispatcher } as never });
    expect((await blockedBy(ask(openai))).message).toBe("attest egress guard: connection to api.openai.com:443 blocked");
    const anthropic = new Anthropic({ apiKey: KEY, maxRetries: 0, fetchOptions: { dispatcher } as never });
    expect((await blockedBy(askClaude(anthropic))).host).toBe("api.anthropic.com");
    expect(proxy.received).not.toMatch(/openai|anthropic/);
  });

  it("lets a CONNECT to any other host reach the proxy", async () => {
    process.env.https_proxy = url;
    const dispatcher = new EnvHttpProxyAgent();
    const error = await fetch("https://models.internal.example/v1", { dispatcher } as RequestInit).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(causes(error).some((e) => e instanceof EgressBlockedError)).toBe(false);
    expect(proxy.received).toMatch(/^CONNECT models\.internal\.example:443 HTTP\/1\.1\r\n/);
  });

  it("screens absolute-form request lines and Host headers, not bodies", async () => {
    process.env.ALL_PROXY = url;
    const absolute = await sendRaw(proxy.port, "GET http://api.mistral.ai/v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(absolute?.message).toBe("attest egress guard: connection to api.mistral.ai:80 blocked");
    const host = await sendRaw(proxy.port, "GET / HTTP/1.1\r\nHost: api.openai.com\r\n\r\n");
    expect(host?.message).toBe("attest egress guard: connection to api.openai.com:80 blocked");
    expect(proxy.received).toBe("");

    const body = "CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n";
    const post = `POST http://tools.internal/run HTTP/1.1\r\nHost: tools.internal\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    expect(await sendRaw(proxy.port, post)).toBeUndefined();
    expect(proxy.received).toBe(post);
  });

  it("does not screen a proxy the environment does not name", async () => {
    const sent = "GET http://api.openai.com/v1/models HTTP/1.1\r\nHost: api.openai.com\r\n\r\n";
    expect(await sendRaw(proxy.port, sent)).toBeUndefined();
    expect(proxy.received).toBe(sent);
  });
});

describe("ATTEST_EGRESS=block", () => {
  it("guards a process from the moment it imports the package", () => {
    // Connects only when the guard is on: without it this would reach for the provider.
    const script = [
      'import("@attest-ai/vitest").then(({ guard }) => {',
      '  console.log("installed=" + guard.installed());',
      "  if (!guard.installed()) return;",
      '  const socket = require("node:net").connect(443, "api.anthropic.com");',
      '  socket.on("error", (e) => console.log(e.name + ": " + e.message));',
      "});",
    ].join("\n");
    const run = (egress: string) =>
      spawnSync("node", ["-e", script], { cwd: PACKAGE, env: { ...process.env, ATTEST_EGRESS: egress }, encoding: "utf8", timeout: 30_000 });
    expect(run("block").stdout.trim().split("\n")).toEqual([
      "installed=true",
      "EgressBlockedError: attest egress guard: connection to api.anthropic.com:443 blocked",
    ]);
    expect(run("off").stdout.trim()).toBe("installed=false");
  });
});
