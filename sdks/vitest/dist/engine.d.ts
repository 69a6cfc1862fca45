/**
 * One `attest-engine serve` per Vitest worker: it prints {"ready": ...}, then answers one JSON line per
 * request line ({"open": {...}} or {"close": id}) until its standard input ends, so it ends with the
 * worker that started it. Each replay is one session on it: a test pays two lines, not a process start.
 *
 * A session's variables differ from another's of the same fixture, mode and guard only by its id, so
 * the first such open asks the engine for a template (attest_toolkit/replay/ahead.py): a prefix and a
 * key with which this side makes the next sessions' ids itself. Such a test writes no open at all: its
 * variables are known at once, and the engine opens its session on the first call naming the id (or
 * at its close). Only the close is waited for (the verdict needs its summary); an open that failed
 * after all fails its test there, with the engine's line.
 */
import type { Readable, Writable } from "node:stream";
import type { BypassReport, Refusal } from "./bypass.js";
import type { Call, Hit } from "./lane.js";
import { type Mode } from "./mode.js";
/** One miss as the engine reports it. */
export interface Miss {
    message: string;
    component: string;
    fixture: string;
    not_evaluated: boolean;
    /** Where the request changed (`params.max_tokens`, `messages[3] added`), never its values. */
    paths?: string[];
}
/** The engine's account of one replay session. */
export interface ReplaySummary {
    mode: Mode;
    fixtures: string[];
    replayed: number;
    live: number;
    live_cost_usd: number;
    unpriced: number;
    misses: number;
    not_evaluated: number;
    miss_list: Miss[];
    live_list?: LiveCall[];
    otlp_requests: number;
    /** With faults (`useReplay(name, { faults })`): how many were injected, and each one. */
    faults?: number;
    fault_list?: {
        call: number;
        fault: string;
        kind: string;
    }[];
}
/** One call that went live (auto mode): its model and cost (null when unpriced). */
export interface LiveCall {
    model: string | null;
    cost_usd: number | null;
}
export interface SessionSpec {
    fixture: string;
    mode: Mode;
    noLive: boolean;
    /** The SPECs its model requests meet (attest_toolkit/replay/faults.py); a session with faults is
     * served over HTTP only, so a timeout, a disconnect and a cut reach `fetch` as its own errors. */
    faults?: string[];
}
/** A session open on the worker's engine; `env` points the provider SDKs at it. */
export interface OpenSession {
    id: string;
    env: Record<string, string>;
}
export declare const DEFAULT_ENGINE = "attest-engine";
/**
 * Start the worker's default engine now, without waiting for it, so that its start overlaps the test
 * file's own imports rather than the first test. A failure to start is not reported here: the first
 * useReplay starts it again and reports it.
 */
export declare function startEarly(enginePath?: string): void;
/** startEarly for the default engine, unless replay is off (ATTEST_REPLAY=off starts nothing). */
export declare function startDefault(): void;
/** The worker's engine for `enginePath`, started on first use and replaced when it died. */
export declare function workerEngine(enginePath: string): Promise<WorkerEngine>;
/**
 * A digest of the environment the engine would start with: it reads provider keys, base URLs,
 * upstreams and the secrets to redact from it once, at start, so a test that changed any variable
 * gets an engine started with its own environment, as it did when every test started one.
 */
export declare function environmentPrint(): string;
export declare const SPARE_VAR = "ATTEST_VITEST_SPARE";
export declare const SPARE_SOCKET = "engine.sock";
export declare const SPARE_STDERR = "engine.err";
/** Where the engine's lines go and come from, and how it ends: its own pipes, or a claimed socket. */
export interface Link {
    input: Writable;
    output: Readable & {
        ref(): void;
        unref(): void;
    };
    /** Resolves once the link is up (the process spawned, the socket connected). */
    up: Promise<void>;
    /** Calls back once with the engine's exit code (null when unknown) when the link ends. */
    onEnd(callback: (code: number | null) => void): void;
    /** What the engine last wrote on standard error. */
    stderr(): string;
    kill(): void;
    idle(): void;
}
/** An engine of the worker's own: `attest-engine serve` on its pipes. */
export declare function spawnLink(enginePath: string): Link;
export declare class WorkerEngine {
    private readonly environment;
    private readonly link;
    readonly ready: Promise<void>;
    private readonly awaiting;
    private readonly templates;
    private readonly made;
    private readonly tables;
    private readonly held;
    private notes;
    private exitCode;
    /** The engine's origin (`http://127.0.0.1:PORT`), once ready. */
    origin: string;
    constructor(environment: string, link: Link);
    /** True while it runs and was started with this environment. */
    usable(environment: string): boolean;
    /** End it: it exits when its input ends. */
    retire(): void;
    open(spec: SessionSpec): Promise<OpenSession>;
    /** End the session; the engine counts what went around it (`bypass`) in its summary. */
    close(id: string, bypass?: BypassReport): Promise<ReplaySummary>;
    /**
     * A call this process would make over HTTP (./lane.js): the hit, or undefined. A call the engine
     * answered before in a session of the same table is answered here (./hits.js); any other is sent on
     * the link, and the engine's answer teaches the table its key.
     */
    call(call: Call): Promise<Hit | undefined>;
    /** The answer a call that went around the replay gets, in the engine's words. */
    refusal(host: string): Promise<Refusal>;
    private start;
    /** One request, once the engine is ready, and its answer. */
    private request;
    /** Write one request now; its answer when it comes. */
    private send;
    /**
     * A line the engine does not answer: written with the next request, or once this turn of the event
     * loop ends, whichever comes first (a test's calls answered here cost one write between them, and
     * the engine reads every note before it serves the session or closes it).
     */
    private note;
    private takeNotes;
    private checked;
    private died;
    /** The next answer, in the order asked; undefined once the engine has exited. */
    private expect;
    /** An answer to whoever asked first; anything that is not a JSON object line is skipped. */
    private deliver;
    private exited;
}
