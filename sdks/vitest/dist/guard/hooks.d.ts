/**
 * The socket hook behind the egress guard, and its counted installation.
 *
 * Every TCP client in Node (net.connect, tls.connect, http/https agents, and undici, which the global
 * `fetch` and so the official openai and @anthropic-ai/sdk packages use) connects through
 * `net.Socket.prototype.connect`, so the guard replaces that one method: a provider host fails the
 * connection the way a refused connection fails, asynchronously with an `error` event, and a
 * connection to an environment proxy gets its writes screened. Other sockets pay one host check.
 *
 * A worker thread has its own copy of `net`, so while the guard is on, `worker_threads.Worker` starts
 * each new worker with the guard preloaded (worker.cjs), on for that worker's whole life.
 */
/** Turn the guard on, or count one more user of a guard that is already on. */
export declare function install(): void;
/** Release one install; the guard goes off when the last user releases it. */
export declare function uninstall(): void;
/** True while at least one install has not been released. */
export declare function installed(): boolean;
