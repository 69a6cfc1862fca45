"""The HTTP kit replay and capture share: the loop thread, live forwarding under deadlines, attest's own
listeners, the environment that points SDKs at them, the deferred CA store, the answers every proxy
gives an SDK (a recording served, a miss).
"""
