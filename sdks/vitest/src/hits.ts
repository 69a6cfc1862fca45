/**
 * A session's hit table (attest_toolkit/replay/hits.py): what the worker needs to answer the session's
 * hits in its own process. The engine hands it when the session opens; a worker that holds the table
 * of the same loaded fixture gets its token alone. The worker cannot compute a call's key (that is the
 * engine's normalization), so it learns it: a call the engine answered on the link comes back with its
 * key, and the same call sent again (same method, path, type, encoding and body) is answered here, with
 * the next unused recording for that key, the engine told in a line it does not answer.
 */

/** A recording as the engine's fast path would send it: its HTTP head and its body, one chunk per event. */
export interface Frame {
  head: string;
  chunks: Buffer[];
}

/** The table as the engine hands it (replay/hits.py, `handed`). */
export interface Handed {
  token: string | null;
  keys?: string[];
  heads?: (string | null)[];
  bodies?: (string | null)[];
  events?: (number[] | null)[];
}

const CALLS_KEPT = 512; // distinct calls a table remembers the key of, as the engine's fixtures do
const BODY_KEPT = 256 * 1024; // characters of base64 body: a larger call always asks the engine

export class Table {
  /** The key of each call the engine answered, by the call as sent (see `callKey`). */
  readonly keys = new Map<string, string>();

  private constructor(
    readonly token: string | null,
    readonly byKey: Map<string, number[]>,
    readonly frames: (Frame | undefined)[],
  ) {}

  /** The table an open's answer hands; `held` when it names the one this worker holds; else undefined. */
  static handed(data: Handed, held: Table | undefined): Table | undefined {
    if (data.keys === undefined) return held !== undefined && held.token === data.token ? held : undefined;
    const byKey = new Map<string, number[]>();
    data.keys.forEach((key, position) => {
      const positions = byKey.get(key);
      if (positions === undefined) byKey.set(key, [position]);
      else positions.push(position);
    });
    const frames = data.keys.map((_, position) => frame(data.heads?.[position], data.bodies?.[position], data.events?.[position]));
    return new Table(data.token, byKey, frames);
  }

  remember(call: string, key: string): void {
    if (call.length > BODY_KEPT) return;
    if (this.keys.size >= CALLS_KEPT) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(call, key);
  }
}

function frame(head: string | null | undefined, body: string | null | undefined, events: number[] | null | undefined): Frame | undefined {
  if (head == null || body == null) return undefined;
  const bytes = Buffer.from(body, "base64");
  if (events == null) return { head, chunks: bytes.length > 0 ? [bytes] : [] };
  const chunks: Buffer[] = [];
  let at = 0;
  for (const length of events) {
    chunks.push(bytes.subarray(at, at + length));
    at += length;
  }
  return { head, chunks };
}

/** One session's use of a table: each recording taken once, a key's recordings in order. */
export class HitTable {
  private readonly used: Uint8Array;
  private readonly cursor = new Map<string, number>();
  served = 0; // recordings this worker answered with

  constructor(readonly table: Table) {
    this.used = new Uint8Array(table.frames.length);
  }

  /** The position of the next unused recording for `key` the worker can answer with. */
  next(key: string): number | undefined {
    const positions = this.table.byKey.get(key);
    if (positions === undefined) return undefined;
    let taken = this.cursor.get(key) ?? 0;
    while (taken < positions.length && this.used[positions[taken]] === 1) taken += 1;
    this.cursor.set(key, taken);
    if (taken === positions.length || this.table.frames[positions[taken]] === undefined) return undefined;
    return positions[taken];
  }

  take(position: number): Frame {
    this.used[position] = 1;
    this.served += 1;
    return this.table.frames[position] as Frame;
  }

  /** The engine took the recording at `position`. */
  mark(position: number): void {
    if (position >= 0 && position < this.used.length) this.used[position] = 1;
  }
}

/** What identifies a call within a session's table: everything its key is computed from, but the session. */
export function callKey(method: string, target: string, contentType: string | null, encoding: string | null, body: string): string {
  const rest = target.replace(/^\/r\/[^/]+\//, "");
  return `${method}\n${rest}\n${contentType ?? ""}\n${encoding ?? ""}\n${body}`;
}
