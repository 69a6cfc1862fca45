"""attest-toolkit: capture an agent's model traffic once, replay it offline, gate pull requests on it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("attest-toolkit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
