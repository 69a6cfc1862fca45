"""The in-process egress guard: connections from the test process to model providers fail.

With the guard on (`pytest --attest-egress=block`, `ATTEST_EGRESS=block`, or `install()` /
`blocking()` here), a connection to a known provider host fails with
`attest egress guard: connection to HOST:PORT blocked` (EgressBlockedError, a ConnectionError, so
HTTP clients report it as a connection error with this error in the cause chain). Loopback and every
other host are untouched. Installs are counted: a guard turned on by the runner stays on until every
user releases it.

Blocked hosts: api.openai.com, api.anthropic.com, generativelanguage.googleapis.com,
aiplatform.googleapis.com and *-aiplatform.googleapis.com (Vertex AI), *.openai.azure.com (Azure
OpenAI), bedrock-runtime.<region>.amazonaws.com (AWS Bedrock; Agent Runtime, FIPS and the
dual-stack *.api.aws hosts too), api.mistral.ai, api.groq.com,
openrouter.ai, and api.together.xyz / api.together.ai. Names match case-insensitively, with or
without a trailing dot.

Direct connections are refused by name: `socket.getaddrinfo` fails before any DNS query, and
`socket.connect` / `connect_ex` given a provider name fail before connecting.

Proxies. A call through a proxy connects to the proxy, not the provider, so the guard also screens
the requests a client sends to the proxy named by HTTPS_PROXY, HTTP_PROXY or ALL_PROXY (either case,
read when the socket connects): the target of every CONNECT and the host of every absolute-form
request line (GET http://host/...), plus the Host header. A request that names a provider host fails
the same way as a direct connection, before the line that names it reaches the proxy. NO_PROXY is
not read: a client that honors it connects to the provider directly, and the host check blocks that
connection.

Limits. The guard is a best-effort tripwire for trusted test code, not an isolation boundary.

- It covers the process that runs your tests. Child processes are not inspected: the engine
  subprocess and anything the agent spawns keep their own network access.
- It matches the host name a client connects to. A client that connects to a literal IP address is
  not caught. A client that resolves names without socket.getaddrinfo, such as uvloop or aiodns, is
  not caught.
- SOCKS proxies, an https:// proxy connection (TLS hides the request line) and a proxy set only
  through a client option, not the environment, are not inspected. Neither is a proxy connection
  opened before the guard was installed, nor bytes written to a socket's descriptor without its
  send methods (os.write, a duplicated descriptor, uvloop's transports).
- After an allowed CONNECT the guard goes opaque on a three-byte TLS record prefix (0x16 0x03
  0x00-0x04) and does not check what the tunnel carries, and a client that forges the prefix and
  then writes plaintext is not inspected. Anything else after the CONNECT (the proxy refused it, or
  plain HTTP follows) is screened request by request again.

For a hard guarantee, run the job without network access or provider keys.
"""

from __future__ import annotations

from .hooks import blocking, install, installed, uninstall
from .hosts import BLOCKED_HOSTS, EgressBlockedError, is_blocked_host

__all__ = [
    "BLOCKED_HOSTS",
    "EgressBlockedError",
    "blocking",
    "install",
    "installed",
    "is_blocked_host",
    "uninstall",
]
