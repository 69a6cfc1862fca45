"""The replay engine: fixtures indexed by request key, served on loopback to the official SDKs.

The package itself imports none of its modules: a test runner that only talks to an engine in another
process (`pytest_plugin.client`) must not pay for importing the server. Import what you use from its module
(`replay.server.Engine`, `replay.runner.run_command`, `replay.modes.MODES`).
"""
