/**
 * Reading what a client sends to an HTTP proxy, request by request, for provider host names.
 *
 * The screen follows the byte stream a client writes on one proxy connection: each request's line
 * (the target of a CONNECT, the host of an absolute-form target) and its Host headers are checked
 * before the chunk that completes them is sent, so a proxy never receives a usable request naming a
 * provider. Bodies (Content-Length or chunked) are skipped, not read, so a body that mentions a
 * provider is not mistaken for a request. After a CONNECT the screen goes opaque on a TLS record
 * prefix; anything else after it is screened as requests again. Once a request is refused the
 * connection is refused for good. The same rules as the Python guard's screen.
 */
/** The screening state of one client-to-proxy connection. */
export declare class RequestScreen {
    private state;
    private line;
    private lineLength;
    private remaining;
    private connect;
    private chunked;
    private length;
    private refusal;
    /** True once a tunnel carries TLS: nothing more is inspected on this connection. */
    get opaque(): boolean;
    /** Advance over `data`; throw EgressBlockedError if a completed line names a provider. */
    feed(data: Buffer): void;
    private advance;
    private feedLine;
    private append;
    private clearLine;
    private skipBody;
    private feedTunnelStart;
    private onLine;
    private onRequestLine;
    private onHeaderLine;
    private endHeaders;
    private onChunkSize;
}
