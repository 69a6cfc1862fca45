/** Which hosts are model providers, and the error a connection to one of them fails with. */
/** Exact provider API hosts (the same list as the Python guard). */
export const BLOCKED_HOSTS = new Set([
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.together.ai",
]);
// The wildcard forms: Vertex AI regions (<region>-aiplatform), Azure OpenAI resources at any depth
// under openai.azure.com, and AWS Bedrock regions.
const BLOCKED_PATTERN = /^(?:[^.]+-aiplatform\.googleapis\.com|(?:[^.]+\.)+openai\.azure\.com|bedrock-runtime\.[^.]+\.amazonaws\.com)$/;
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