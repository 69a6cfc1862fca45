/**
 * The lane: while a replay runs, a call this process makes with Node's global `fetch` to the worker's
 * engine is answered without HTTP. The official openai and @anthropic-ai/sdk packages, and most others,
 * call `fetch`. A call the engine answered before in a session of the same fixture is answered in this
 * process from the session's hit table (./hits.js), the engine told in one line it does not answer; any
 * other goes to the engine on the link the worker already holds (./engine.js), one line each way.
 *
 * Either way the answer is exactly what the engine's HTTP fast path would send: the recording, taken
 * and counted, with its head and its body one chunk per recorded event (a stream's events arrive as
 * they would). Anything else (a miss, a live call, lenient matching, an ended session, a body fetch
 * would stream) is answered "not here" with nothing taken, and the call goes over HTTP as before,
 * where the engine diagnoses and counts it. A call made with a `Request`, or a body that is not bytes
 * or text, goes over HTTP too; so do clients given their own `fetch`, subprocesses and other languages.
 * `ATTEST_LANE=off` sends every call over HTTP, as it does for the pytest helper's lane.
 *
 * The lane steps aside when something else replaced `fetch` since the package was loaded (a spy, msw,
 * a polyfill): that `fetch` stays in charge and sees every call, which goes over HTTP through it.
 */

/** A call as the engine's fast path reads it (replay/fastpath.py, answer_call). */
export interface Call {
  method: string;
  target: string;
  body: string; // base64
  content_type: string | null;
  content_encoding: string | null;
}

/** A hit: the HTTP head the engine would have sent, and the body's chunks. */
export interface Hit {
  head: string;
  chunks: Uint8Array[];
}

export type Ask = (call: Call) => Promise<Hit | undefined>;

interface Route {
  prefix: string; // `<engine origin>/r/`: the session URLs the engine hands out
  ask: Ask;
}

type Fetch = typeof globalThis.fetch;

// The methods fetch writes in upper case whatever case it is given (the Fetch standard's normalize).
const NORMALIZED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);
// Statuses whose Response has no body.
const NULL_BODY = new Set([204, 205, 304]);

let current: Route | undefined;

// The fetch the process had when this module first loaded in it (./start.js loads it before any
// setup file of the user's when attestReplay() is in the config).
const FIRST = Symbol.for("@attest-ai/vitest.fetch");
const scope = globalThis as Record<symbol, unknown>;
scope[FIRST] ??= globalThis.fetch;

/**
 * Send this process's `fetch` calls to the engine at `origin` over `ask` until the returned function
 * is called. `globalThis.fetch` is wrapped meanwhile; a client that kept the wrapper uses HTTP after.
 * Nothing is wrapped with ATTEST_LANE=off, or when another fetch is in charge (see the module comment).
 */
export function route(origin: string, ask: Ask): () => void {
  const original = globalThis.fetch;
  if (process.env.ATTEST_LANE === "off" || original !== scope[FIRST]) return () => undefined;
  const own: Route = { prefix: origin + "/r/", ask };
  const wrapper = laneFetch(original);
  current = own;
  globalThis.fetch = wrapper;
  return () => {
    if (current === own) current = undefined;
    if (globalThis.fetch === wrapper) globalThis.fetch = original;
  };
}

function laneFetch(original: Fetch): Fetch {
  return async function fetch(input: Parameters<Fetch>[0], init?: RequestInit): Promise<Response> {
    const via = current;
    const call = via === undefined ? undefined : laneCall(via.prefix, input, init);
    if (via === undefined || call === undefined) return original(input, init);
    refuseAborted(init?.signal);
    const hit = await via.ask(call);
    if (hit === undefined) return original(input, init);
    refuseAborted(init?.signal); // as fetch rejects when aborted before its answer
    return answer(hit, call.url);
  } as Fetch;
}

/** Reject as fetch does for an aborted signal: with its reason. */
function refuseAborted(signal: AbortSignal | null | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** The call to send on the lane, or undefined when this request goes over HTTP. */
function laneCall(prefix: string, input: Parameters<Fetch>[0], init: RequestInit | undefined): (Call & { url: string }) | undefined {
  if (typeof input !== "string" && !(input instanceof URL)) return undefined;
  const text = typeof input === "string" ? input : input.href;
  if (!text.startsWith(prefix)) return undefined;
  const body = bytesOf(init?.body);
  if (body === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined; // fetch gives its own error
  }
  if (url.username || url.password || !url.href.startsWith(prefix)) return undefined;
  url.hash = ""; // fetch never sends it
  const headers = new Headers(init?.headers);
  const given = init?.method ?? "GET";
  const method = NORMALIZED.has(given.toUpperCase()) ? given.toUpperCase() : given;
  // fetch labels a text body it is given without a type (the Fetch standard's extract a body).
  const type = headers.get("content-type") ?? (typeof init?.body === "string" ? "text/plain;charset=UTF-8" : null);
  return {
    method,
    target: url.pathname + url.search,
    body: body.toString("base64"),
    content_type: type,
    content_encoding: headers.get("content-encoding"),
    url: url.href,
  };
}

/** A body fetch sends as it is (text or bytes); undefined for one it streams or encodes (a form, a stream). */
function bytesOf(body: RequestInit["body"]): Buffer | undefined {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return undefined;
}

/** The Response fetch would have made of the engine's answer. */
function answer(hit: Hit, url: string): Response {
  const [statusLine, ...lines] = hit.head.split("\r\n");
  const [, code, ...reason] = statusLine.split(" ");
  const status = Number(code);
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  // The engine serves a body as it was recorded, never encoded (it sends no content-encoding).
  const chunks = hit.chunks;
  const body = NULL_BODY.has(status)
    ? null
    : new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
  const response = new Response(body, { status, statusText: reason.join(" "), headers });
  Object.defineProperty(response, "url", { value: url }); // as fetch sets it
  return response;
}
