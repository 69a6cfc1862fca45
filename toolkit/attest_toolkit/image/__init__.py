"""Replaying (and capturing) an agent's own container image with no route outside.

`netns` makes the network namespace the container joins (loopback only, probed) and hands the
toolkit listening sockets inside it; `container` builds the engine's command line and the only
environment the container gets; `replay` and `capture` run the image against the replay engine or
the recording proxy, which listen on those sockets from the host's side.
"""

from __future__ import annotations
