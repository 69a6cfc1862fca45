/** The HTTP proxies named by the environment, and whether a connection goes to one of them. */
// Either case. NO_PROXY is deliberately not read: a client that honors it connects to the provider
// directly, and the host check blocks that connection instead.
export const PROXY_VARIABLES = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];
/** The inspectable proxies the environment names right now (read on every connection). */
export function environmentProxies(env = process.env) {
    const found = [];
    for (const name of PROXY_VARIABLES) {
        const value = env[name];
        const proxy = value ? plainHttpProxy(value) : undefined;
        if (proxy && !found.some((p) => p.host === proxy.host && p.port === proxy.port))
            found.push(proxy);
    }
    return found;
}
/**
 * The address of a proxy URL the guard can read, or undefined. Only http:// proxies (or a bare
 * host:port, which clients treat as http://) carry readable request lines; an https:// proxy hides
 * them in TLS and a SOCKS proxy speaks another protocol.
 */
export function plainHttpProxy(value) {
    let text = value.trim();
    if (!text.includes("://"))
        text = `http://${text}`;
    let url;
    try {
        url = new URL(text);
    }
    catch {
        return undefined;
    }
    if (url.protocol !== "http:" || !url.hostname)
        return undefined;
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.+$/, "").toLowerCase();
    return { host, port: url.port ? Number(url.port) : 80 };
}
// A proxy on loopback is reached by any of its names: clients resolve `localhost` before connecting.
const LOOPBACK = new Set(["localhost", "127.0.0.1", "::1"]);
/** True when a connection to (host, port) reaches one of `proxies`. */
export function isProxy(host, port, proxies) {
    const name = host.toLowerCase().replace(/\.+$/, "");
    return proxies.some((proxy) => proxy.port === port && (proxy.host === name || (LOOPBACK.has(proxy.host) && LOOPBACK.has(name))));
}
//# sourceMappingURL=proxies.js.map