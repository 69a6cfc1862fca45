/** Which hosts are model providers, and the error a connection to one of them fails with. */
/** Exact provider API hosts (the same file as the Python guard reads). */
export declare const BLOCKED_HOSTS: ReadonlySet<string>;
/**
 * A connection from the test process to a known model provider, failed by the egress guard. HTTP
 * clients report it as a connection error with this error in the `cause` chain, the way they report
 * a refused connection.
 */
export declare class EgressBlockedError extends Error {
    readonly code = "ATTEST_EGRESS_BLOCKED";
    readonly host: string;
    readonly port: number | undefined;
    constructor(host: string, port?: number);
}
/** True when `host` is a provider host the guard blocks (case-insensitive, trailing dot allowed). */
export declare function isBlockedHost(host: string): boolean;
/** Throw EgressBlockedError when `host` is a provider host. */
export declare function checkHost(host: string, port: number | undefined): void;
