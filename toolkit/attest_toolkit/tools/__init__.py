"""The tool channel's shared format: the agent's tool servers (MCP over streamable HTTP or stdio, plain
HTTP tools), captured and replayed beside the model channel. The recording half is
`capture.tool_recorder`, the serving half `replay.tool_routes` and `replay.tool_index`, as the model
channel's format is `normalize` and its halves are in `capture` and `replay`.

- `declare`: which tool servers a run has (`--tool VAR[=URL]`, `attest tool stdio NAME`) and their env.
- `mcp`: JSON-RPC messages: what a message asks for, the caller's id put on a recorded reply.
- `match`: recordings keyed by server, call and normalized arguments (the call key).
- `stdio`: the `attest tool stdio NAME -- SERVER_CMD` wrapper an agent's MCP configuration runs.
"""
