/** The HTTP proxies named by the environment, and whether a connection goes to one of them. */
export declare const PROXY_VARIABLES: string[];
/** Where a plain-HTTP proxy listens: a lower-case host name or IP literal, and a port. */
export interface ProxyAddress {
    host: string;
    port: number;
}
/** The inspectable proxies the environment names right now (read on every connection). */
export declare function environmentProxies(env?: NodeJS.ProcessEnv): ProxyAddress[];
/**
 * The address of a proxy URL the guard can read, or undefined. Only http:// proxies (or a bare
 * host:port, which clients treat as http://) carry readable request lines; an https:// proxy hides
 * them in TLS and a SOCKS proxy speaks another protocol.
 */
export declare function plainHttpProxy(value: string): ProxyAddress | undefined;
/** True when a connection to (host, port) reaches one of `proxies`. */
export declare function isProxy(host: string, port: number, proxies: readonly ProxyAddress[]): boolean;
