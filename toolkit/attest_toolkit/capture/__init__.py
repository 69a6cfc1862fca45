"""Recording: the recording proxy and `attest capture`, refreshing only what missed, rebase,
the spend ceiling.
"""
