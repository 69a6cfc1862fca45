"""attest-toolkit: capture an agent's model traffic once, replay it offline, gate pull requests on it."""

# The single source of the version (pyproject reads it); a literal, because reading package metadata
# at import costs the engine's start tens of milliseconds.
__version__ = "0.1.0"

__all__ = ["__version__"]
