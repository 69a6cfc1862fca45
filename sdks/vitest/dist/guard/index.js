/**
 * The in-process egress guard: connections from the test process to model providers fail with
 * `attest egress guard: connection to HOST:PORT blocked` (EgressBlockedError). Loopback and every
 * other host are untouched. Installs are counted. See the package README for what it does not cover.
 */
export { install, installed, uninstall } from "./hooks.js";
export { BLOCKED_HOSTS, EgressBlockedError, isBlockedHost } from "./hosts.js";
//# sourceMappingURL=index.js.map