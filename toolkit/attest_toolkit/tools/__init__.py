"""The tool channel: the agent's tool servers (MCP over streamable HTTP or stdio, plain HTTP tools),
captured and replayed beside the model channel.

- `declare`: which tool servers a run has (`--tool VAR[=URL]`, `attest tool stdio NAME`) and their env.
- `mcp`: JSON-RPC messages: what a message asks for, the caller's id put on a recorded reply.
- `match`: recordings keyed by server, call and normalized arguments (the call key).
- `record`: the capture side (forward to the real server, keep the exchange).
- `replay`: the engine side (serve from the fixture, or forward live in auto mode).
- `stdio`: the `attest tool stdio NAME -- SERVER_CMD` wrapper an agent's MCP configuration runs.
"""
