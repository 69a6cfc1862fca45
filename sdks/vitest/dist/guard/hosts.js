/** Which hosts are model providers, and the error a connection to one of them fails with. */
import { readFileSync } from "node:fs";
// The one host list, shared with the Python guard: copied into the package beside this module at build.
const HOSTS = JSON.parse(readFileSync(new URL("./hosts.json", import.meta.url), "utf8"));
/** Exact provider API hosts (the same file as the Python guard reads). */
export const BLOCKED_HOSTS = new Set(HOSTS.hosts);
// The wildcard forms: Vertex AI regions, Azure resources, AWS Bedrock regions.
const BLOCKED_PATTERN = new RegExp(`^(?:${HOSTS.patterns.map((p) => `(?:${p.pattern})`).join("|")})$`);
/**
 * A connection from the test process to a known model provider, failed by the egress guard. HTTP
 * clients report it as a connection error with this error in the `cause` chain, the way they report
 * a refused connection.
 */
export class EgressBlockedError extends Error {
    code = "ATTEST_EGRESS_BLOCKED";
    host;
    port;
    constructor(host, port) {
        super(`attest egress guard: connection to ${port === undefined ? host : `${host}:${port}`} blocked`);
        this.name = "EgressBlockedError";
        this.host = host;
        this.port = port;
    }
}
/** True when `host` is a provider host the guard blocks (case-insensitive, trailing dot allowed). */
export function isBlockedHost(host) {
    const name = host.toLowerCase().replace(/\.+$/, "");
    return BLOCKED_HOSTS.has(name) || BLOCKED_PATTERN.test(name);
}
/** Throw EgressBlockedError when `host` is a provider host. */
export function checkHost(host, port) {
    if (isBlockedHost(host))
        throw new EgressBlockedError(host, port);
}
//# sourceMappingURL=hosts.js.map