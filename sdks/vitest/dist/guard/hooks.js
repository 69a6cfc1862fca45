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
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { fileURLToPath } from "node:url";
import workerThreads from "node:worker_threads";
import { EgressBlockedError, isBlockedHost } from "./hosts.js";
import { environmentProxies, isProxy } from "./proxies.js";
import { RequestScreen } from "./screen.js";
let installs = 0;
let realConnect;
const RealWorker = workerThreads.Worker;
const PRELOAD = fileURLToPath(new URL("./worker.cjs", import.meta.url));
/** Turn the guard on, or count one more user of a guard that is already on. */
export function install() {
    if (installs === 0)
        patch();
    installs += 1;
}
/** Release one install; the guard goes off when the last user releases it. */
export function uninstall() {
    if (installs === 0)
        throw new Error("attest egress guard: uninstall() without a matching install()");
    installs -= 1;
    if (installs === 0)
        unpatch();
}
/** True while at least one install has not been released. */
export function installed() {
    return installs > 0;
}
function patch() {
    const real = net.Socket.prototype.connect;
    realConnect = real;
    const guarded = function guardedConnect(...args) {
        const target = connectTarget(args);
        if (target && isBlockedHost(target.host)) {
            refuse(this, new EgressBlockedError(target.host, target.port));
            return this;
        }
        if (target && isProxy(target.host, target.port, environmentProxies()))
            screenWrites(this);
        return real.apply(this, args);
    };
    net.Socket.prototype.connect = guarded;
    setWorker(GuardedWorker);
}
/** A Worker that preloads the guard; the parent's options otherwise unchanged. */
class GuardedWorker extends RealWorker {
    constructor(filename, options = {}) {
        super(filename, { ...options, execArgv: [...(options.execArgv ?? process.execArgv), "--require", PRELOAD] });
    }
}
/** Swap the Worker class that `node:worker_threads` exports, for require and import alike. */
function setWorker(worker) {
    workerThreads.Worker = worker;
    syncBuiltinESMExports();
}
function unpatch() {
    if (realConnect)
        net.Socket.prototype.connect = realConnect;
    realConnect = undefined;
    setWorker(RealWorker);
}
/** The host and port of a TCP connect call, in any of its forms; undefined for a Unix socket. */
function connectTarget(args) {
    // net.connect() passes its normalized [options, callback] array as the only argument.
    const first = Array.isArray(args[0]) ? args[0][0] : args[0];
    if (first !== null && typeof first === "object") {
        const options = first;
        if (options.path !== undefined && options.port === undefined)
            return undefined;
        return { host: typeof options.host === "string" && options.host ? options.host : "localhost", port: Number(options.port) };
    }
    if (typeof first === "string" && !/^[0-9]+$/.test(first))
        return undefined; // a Unix socket path
    const host = typeof args[1] === "string" ? args[1] : "localhost";
    return { host, port: Number(first) };
}
/** Fail the connection the way a refused one fails: an `error` event on the next tick. */
function refuse(socket, error) {
    process.nextTick(() => socket.destroy(error));
}
/** Screen what the socket sends to the proxy; a request naming a provider fails the socket unsent. */
function screenWrites(socket) {
    const screen = new RequestScreen();
    const writable = socket;
    const write = writable._write;
    const writev = writable._writev;
    const admit = (chunks) => {
        try {
            for (const { chunk, encoding } of chunks) {
                if (screen.opaque)
                    return undefined;
                screen.feed(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk);
            }
        }
        catch (error) {
            return error;
        }
        return undefined;
    };
    writable._write = function (chunk, encoding, callback) {
        const refused = admit([{ chunk, encoding }]);
        if (refused)
            callback(refused);
        else
            write.call(this, chunk, encoding, callback);
    };
    if (writev) {
        writable._writev = function (chunks, callback) {
            const refused = admit(chunks);
            if (refused)
                callback(refused);
            else
                writev.call(this, chunks, callback);
        };
    }
}
//# sourceMappingURL=hooks.js.map