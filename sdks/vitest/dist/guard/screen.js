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
import { checkHost, EgressBlockedError } from "./hosts.js";
// Request and header lines longer than this are cut: a proxy refuses them, and the host comes first.
const MAX_LINE = 64 * 1024;
// A TLS handshake record header: content type 0x16, version 0x03 0x00 (SSL 3) to 0x03 0x04 (TLS 1.3).
const TLS_PREFIX_LENGTH = 3;
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/;
const DEFAULT_PORTS = { http: 80, https: 443, ws: 80, wss: 443 };
const LF = 0x0a;
const LINE_STATES = new Set(["request line", "headers", "chunk size", "trailers"]);
/** The screening state of one client-to-proxy connection. */
export class RequestScreen {
    state = "request line";
    line = []; // the incomplete line (or tunnel prefix) seen so far
    lineLength = 0;
    remaining = 0; // body or chunk bytes still to skip
    connect = false;
    chunked = false;
    length = 0;
    refusal;
    /** True once a tunnel carries TLS: nothing more is inspected on this connection. */
    get opaque() {
        return this.state === "opaque";
    }
    /** Advance over `data`; throw EgressBlockedError if a completed line names a provider. */
    feed(data) {
        if (this.refusal)
            throw new EgressBlockedError(this.refusal.host, this.refusal.port);
        try {
            this.advance(data);
        }
        catch (error) {
            if (error instanceof EgressBlockedError)
                this.refusal = error;
            throw error;
        }
    }
    advance(data) {
        let pos = 0;
        while (pos < data.length && this.state !== "opaque") {
            if (LINE_STATES.has(this.state))
                pos = this.feedLine(data, pos);
            else if (this.state === "tunnel start")
                pos = this.feedTunnelStart(data, pos);
            else
                pos = this.skipBody(data, pos);
        }
    }
    feedLine(data, pos) {
        const end = data.indexOf(LF, pos);
        this.append(data.subarray(pos, end < 0 ? data.length : end));
        if (end < 0)
            return data.length;
        let line = Buffer.concat(this.line).toString("latin1");
        if (line.endsWith("\r"))
            line = line.slice(0, -1);
        this.clearLine();
        this.onLine(line);
        return end + 1;
    }
    append(chunk) {
        const room = MAX_LINE - this.lineLength;
        if (room > 0 && chunk.length > 0) {
            const kept = chunk.subarray(0, room);
            this.line.push(Buffer.from(kept));
            this.lineLength += kept.length;
        }
    }
    clearLine() {
        this.line = [];
        this.lineLength = 0;
    }
    skipBody(data, pos) {
        const taken = Math.min(this.remaining, data.length - pos);
        this.remaining -= taken;
        if (this.remaining === 0)
            this.state = this.state === "chunk data" ? "chunk size" : "request line";
        return pos + taken;
    }
    feedTunnelStart(data, pos) {
        const taken = Math.min(TLS_PREFIX_LENGTH - this.lineLength, data.length - pos);
        this.append(data.subarray(pos, pos + taken));
        const prefix = Buffer.concat(this.line);
        if (mayBeTlsPrefix(prefix)) {
            if (prefix.length === TLS_PREFIX_LENGTH) {
                this.clearLine();
                this.state = "opaque";
            }
            return pos + taken;
        }
        // Not TLS (a refused CONNECT, or plain HTTP through the tunnel): screen it as requests.
        this.clearLine();
        this.state = "request line";
        this.advance(prefix);
        return pos + taken;
    }
    onLine(line) {
        if (this.state === "request line")
            this.onRequestLine(line);
        else if (this.state === "headers")
            this.onHeaderLine(line);
        else if (this.state === "chunk size")
            this.onChunkSize(line);
        else if (!line)
            this.state = "request line"; // the blank line that ends the trailers
    }
    onRequestLine(line) {
        if (!line.trim())
            return; // empty lines before a request are allowed (RFC 9112, 2.2)
        this.state = "headers";
        this.connect = false;
        this.chunked = false;
        this.length = 0;
        const parts = line.trim().split(/\s+/);
        if (parts.length < 2)
            return;
        const target = parts[1];
        if (parts[0].toUpperCase() === "CONNECT") {
            this.connect = true;
            checkAuthority(target, 443);
        }
        else if (target.includes("://")) {
            checkAbsolute(target);
        }
    }
    onHeaderLine(line) {
        if (!line) {
            this.endHeaders();
            return;
        }
        const colon = line.indexOf(":");
        const field = (colon < 0 ? line : line.slice(0, colon)).trim().toLowerCase();
        const value = colon < 0 ? "" : line.slice(colon + 1).trim();
        if (field === "host")
            checkAuthority(value, 80);
        else if (field === "content-length")
            this.length = intOrZero(value, 10);
        else if (field === "transfer-encoding")
            this.chunked = value.toLowerCase().endsWith("chunked");
    }
    endHeaders() {
        if (this.connect) {
            this.state = "tunnel start";
        }
        else if (this.chunked) {
            this.state = "chunk size";
        }
        else if (this.length > 0) {
            this.state = "body";
            this.remaining = this.length;
        }
        else {
            this.state = "request line";
        }
    }
    onChunkSize(line) {
        if (!line.trim())
            return; // the CRLF some clients leave between chunks
        const size = intOrZero(line.split(";", 1)[0].trim(), 16);
        if (size > 0) {
            this.state = "chunk data";
            this.remaining = size + 2; // the data and its CRLF
        }
        else {
            this.state = "trailers";
        }
    }
}
/** True when `prefix` is the start (or the whole) of a TLS handshake record header. */
function mayBeTlsPrefix(prefix) {
    return ((prefix.length < 1 || prefix[0] === 0x16) &&
        (prefix.length < 2 || prefix[1] === 0x03) &&
        (prefix.length < 3 || prefix[2] <= 0x04));
}
function checkAuthority(authority, defaultPort) {
    const [host, port] = splitAuthority(authority);
    if (host)
        checkHost(host, port ?? defaultPort);
}
function checkAbsolute(target) {
    const match = ABSOLUTE_FORM.exec(target);
    if (!match)
        return;
    const [host, port] = splitAuthority(match[2]);
    if (host)
        checkHost(host, port ?? DEFAULT_PORTS[match[1].toLowerCase()] ?? 80);
}
/** Host and port of `[user@]host[:port]`, bracketed IPv6 included; no port when it is not a number. */
function splitAuthority(authority) {
    const text = authority.slice(authority.lastIndexOf("@") + 1);
    let host;
    let port;
    if (text.startsWith("[")) {
        const close = text.indexOf("]");
        host = close < 0 ? text.slice(1) : text.slice(1, close);
        const rest = close < 0 ? "" : text.slice(close + 1);
        port = rest.startsWith(":") ? rest.slice(1) : "";
    }
    else {
        const colon = text.indexOf(":");
        host = colon < 0 ? text : text.slice(0, colon);
        port = colon < 0 ? "" : text.slice(colon + 1);
    }
    return [host, /^[0-9]+$/.test(port) ? Number(port) : undefined];
}
function intOrZero(text, base) {
    const pattern = base === 10 ? /^[0-9]+$/ : /^[0-9A-Fa-f]+$/;
    return pattern.test(text) ? parseInt(text, base) : 0;
}
//# sourceMappingURL=screen.js.map