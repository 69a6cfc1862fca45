"""Recording: the recording proxy, `attest capture` running a command through it, the refresh,
refreshing only what missed, rebase, the spend ceiling.
"""
