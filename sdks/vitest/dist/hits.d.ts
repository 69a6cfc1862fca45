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
export declare class Table {
    readonly token: string | null;
    readonly byKey: Map<string, number[]>;
    readonly frames: (Frame | undefined)[];
    /** The key of each call the engine answered, by the call as sent (see `callKey`). */
    readonly keys: Map<string, string>;
    private constructor();
    /** The table an open's answer hands; `held` when it names the one this worker holds; else undefined. */
    static handed(data: Handed, held: Table | undefined): Table | undefined;
    remember(call: string, key: string): void;
}
/** One session's use of a table: each recording taken once, a key's recordings in order. */
export declare class HitTable {
    readonly table: Table;
    private readonly used;
    private readonly cursor;
    served: number;
    constructor(table: Table);
    /** The position of the next unused recording for `key` the worker can answer with. */
    next(key: string): number | undefined;
    take(position: number): Frame;
    /** The engine took the recording at `position`. */
    mark(position: number): void;
}
/** What identifies a call within a session's table: everything its key is computed from, but the session. */
export declare function callKey(method: string, target: string, contentType: string | null, encoding: string | null, body: string): string;
