// Per call, in one process, the variants taking turns block by block: the official openai package's
// non-streamed call and its 40-event stream read to the end, against each variant; and start-up:
// an engine to its first session (what the first useReplay in a worker waits for) and a test's
// session cycle on a running engine, against msw's setupServer().listen(). Prints JSON.
import OpenAI from "openai";

import { SDK, spec, VARIANTS } from "./mocks.mjs";

const { blocks, block, warmup } = spec.size;

async function plain(client, expected) {
  const reply = await client.chat.completions.create(spec.requests.plain);
  const text = reply.choices[0].message.content;
  if (expected !== undefined && text !== expected) throw new Error(`unexpected answer: ${text}`);
}

async function stream(client, expected) {
  let chunks = 0;
  for await (const _chunk of await client.chat.completions.create(spec.requests.stream)) chunks += 1;
  if (expected !== undefined && chunks !== expected) throw new Error(`expected ${expected} chunks, got ${chunks}`);
}

async function timed(calls, call) {
  const start = performance.now();
  for (let i = 0; i < calls; i += 1) await call();
  return (performance.now() - start) / calls;
}

async function turn(variant, calls, out) {
  const url = await variant.enable();
  const client = new OpenAI({ baseURL: url, apiKey: "bench-placeholder", maxRetries: 0 });
  const exact = variant.name !== "aimock"; // aimock frames the same text its own way
  out?.plain.push(await timed(calls, () => plain(client, exact ? spec.answer : undefined)));
  const streamed = await timed(calls, () => stream(client, exact ? spec.stream_chunks : undefined));
  out?.stream.push(streamed);
  await variant.disable();
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function perCall() {
  const variants = [];
  for (const make of Object.values(VARIANTS)) variants.push(await make());
  const samples = Object.fromEntries(variants.map((v) => [v.name, { plain: [], stream: [] }]));
  for (const variant of variants) await turn(variant, warmup);
  for (let b = 0; b < blocks; b += 1) {
    for (let i = 0; i < variants.length; i += 1) {
      const variant = variants[(b + i) % variants.length]; // each block starts with the next variant
      await turn(variant, block, samples[variant.name]);
    }
  }
  for (const variant of variants) await variant.close?.();
  return Object.fromEntries(
    Object.entries(samples).map(([name, s]) => [name, { plain: median(s.plain), stream: median(s.stream) }]),
  );
}

async function startup() {
  const { WorkerEngine, spawnLink } = await import(`${SDK}/dist/engine.js`);
  const { setupServer } = await import("msw/node");
  const engineStart = [];
  const cycle = [];
  const msw = [];
  for (let run = 0; run < spec.size.starts; run += 1) {
    let start = performance.now();
    const engine = new WorkerEngine(`bench-${run}`, spawnLink(process.env.BENCH_ENGINE ?? "attest-engine"));
    await engine.ready;
    const session = await engine.open({ fixture: spec.fixture, mode: "strict", noLive: true });
    engineStart.push(performance.now() - start);
    await engine.close(session.id);
    for (let i = 0; i < 20; i += 1) {
      start = performance.now();
      const next = await engine.open({ fixture: spec.fixture, mode: "strict", noLive: true });
      await engine.close(next.id);
      cycle.push(performance.now() - start);
    }
    engine.retire();
    start = performance.now();
    const server = setupServer();
    server.listen();
    server.close();
    msw.push(performance.now() - start);
  }
  return { engine_start: median(engineStart), session_cycle: median(cycle), msw_listen: median(msw) };
}

const result = { per_call: await perCall(), startup: await startup() };
process.stdout.write(JSON.stringify(result) + "\n");
