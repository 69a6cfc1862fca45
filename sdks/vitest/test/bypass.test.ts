// Runs test/projects/bypass with real Vitest and the reporter: module-level clients (built before
// useReplay) call "the provider" directly. Strict blocks them with one line naming the host and the
// likely cause; auto lets them out, counted live and priced, in the report and the run's end.
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PACKAGE } from "./helpers.js";

const PROJECT = path.join(PACKAGE, "test", "projects", "bypass");
const FILE = "sdks/vitest/test/projects/bypass/bypass.test.ts";
const VITEST = path.join(PACKAGE, "node_modules", "vitest", "vitest.mjs");
// gpt-4o-mini: $0.15 per 1M input tokens + $0.60 per 1M output tokens.
const USAGE = { prompt_tokens: 1_000_000, completion_tokens: 1_000_000, total_tokens: 2_000_000 };

const line = (host: string, client: string) =>
  `attest replay: a call to ${host} went around the replay; the likely cause is a client built before useReplay ` +
  `(a module-level new ${client}() keeps the provider's URL): build it after useReplay`;

interface Row {
  id: string;
  outcome: string;
  message: string | null;
  replay?: { live: number; live_cost_usd: number; misses: number; miss?: { component: string; message: string } };
}

/** A provider on loopback: every chat completion answers "live", with usage worth $0.75. */
function provider(requests: string[]): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      requests.push(`${request.headers.host} ${request.url}`);
      const base = { id: "chatcmpl-1", created: 1764569740, model: "gpt-4o-mini" };
      if (!(JSON.parse(body) as { stream?: boolean }).stream) {
        const message = { role: "assistant", content: "live", refusal: null };
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: "stop" }], usage: USAGE }));
        return;
      }
      const chunk = (choices: unknown[], usage: unknown = null) => `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, usage })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(chunk([{ index: 0, delta: { role: "assistant", content: "live" }, finish_reason: null }]) + chunk([{ index: 0, delta: {}, finish_reason: "stop" }]) + chunk([], USAGE) + "data: [DONE]\n\n");
    });
  };
}

/** Run the project as a user would (`npx vitest run`), outside CI, while this process serves the provider. */
function runProject(report: string, port: number): Promise<{ status: number | null; output: string }> {
  const dropped = new Set(["CI", "ATTEST_REPLAY", "ATTEST_EGRESS", "FORCE_COLOR"]);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !dropped.has(k)));
  const child = spawn("node", [VITEST, "run"], { cwd: PROJECT, env: { ...env, ATTEST_REPORT: report, FAKE_PORT: String(port), NO_COLOR: "1" } });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  return new Promise((resolve) => child.on("close", (status) => resolve({ status, output })));
}

describe("clients built before useReplay", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attest-bypass-"));
  const requests: string[] = [];
  const server = createServer(provider(requests));
  let rows: Record<string, Row> = {};
  let output = "";

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const report = path.join(dir, "attest-report.json");
    const run = await runProject(report, (server.address() as AddressInfo).port);
    output = run.output;
    expect(run.status, output).toBe(1);
    rows = Object.fromEntries((JSON.parse(readFileSync(report, "utf8")).tests as Row[]).map((row) => [row.id.slice(FILE.length + 2), row]));
  }, 300_000);

  afterAll(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("in strict mode are blocked, and the test fails with one line naming the host and the cause", () => {
    for (const [host, client] of [["api.openai.com", "OpenAI"], ["api.anthropic.com", "Anthropic"]]) {
      const name = `strict: a module-level ${client} client`;
      expect(rows[name], name).toMatchObject({ outcome: "failed", message: line(host, client), replay: { live: 0, misses: 1, miss: { component: "bypass" } } });
      expect(output).toContain(line(host, client));
    }
    // With the egress guard on, the agent met the guard's error (the test checked it) and the test
    // still failed with the line, the first call's, counting both.
    expect(rows["egress blocked: module-level clients meet the guard"]).toMatchObject({
      outcome: "failed",
      message: line("api.openai.com", "OpenAI"),
      replay: { live: 0, misses: 2 },
    });
    // Nothing was sent for them: the provider saw only the two auto calls.
    expect(requests).toHaveLength(2);
  });

  it("in auto mode go out, counted live and priced, in the report row and the run's end", () => {
    for (const name of ["auto: a module-level OpenAI client", "auto: a module-level OpenAI client, streamed"]) {
      expect(rows[name], name).toMatchObject({ outcome: "passed", replay: { live: 1, live_cost_usd: 0.75, misses: 0 } });
      expect(output).toContain(`went live: ${FILE}::${name} → gpt-4o-mini, $0.75`);
    }
    expect(output).toMatch(/^attest replay: 0 replayed · 2 live model calls · \$1\.50 .*· 4 missed · 3 failed$/m);
  });
});
