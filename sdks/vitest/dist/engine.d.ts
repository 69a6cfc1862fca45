/**
 * One `attest-engine replay --serve` process: it prints {"env": {...}}, serves the fixture until a
 * stop line arrives on its standard input, then prints {"summary": {...}} and exits.
 */
import { type Mode } from "./mode.js";
/** One miss as the engine reports it. */
export interface Miss {
    message: string;
    component: string;
    fixture: string;
    not_evaluated: boolean;
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
}
/** One call that went live (auto mode): its model and cost (null when unpriced). */
export interface LiveCall {
    model: string | null;
    cost_usd: number | null;
}
export interface ServeOptions {
    enginePath: string;
    fixture: string;
    mode: Mode;
    noLive: boolean;
}
/** A running `--serve` session; `env` points the provider SDKs at it. */
export declare class ServeSession {
    private readonly child;
    readonly env: Record<string, string>;
    private readonly lines;
    private readonly exited;
    private readonly output;
    private constructor();
    /** Start the engine and wait for its {"env"} line. */
    static start(options: ServeOptions): Promise<ServeSession>;
    /** Send the stop line and read the summary. */
    stop(): Promise<ReplaySummary>;
}
