"""The container engine's command line for an agent image, and the only environment it gets.

The container's environment is the image's own plus the variables passed here with `--env`: the
provider, OTLP and tool variables pointing at the engine, and the placeholder keys. The engine is
started with the caller's environment (it needs PATH and its own configuration), but nothing of it
crosses into the container: no `--env-host`, and `--http-proxy=false` stops podman copying the
caller's proxy variables (which can carry credentials) in.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import AttestError
from .netns import privileged

ENGINES = ("podman", "docker")
# podman's own failures (an unknown option, the runtime failing to start the container): never the agent's.
ENGINE_FAILED = 125
# The container may not get its network back: no capability to configure, leave or make namespaces.
CONFINEMENT = ("--cap-drop", "NET_ADMIN,NET_RAW,SYS_ADMIN,SYS_PTRACE", "--security-opt", "no-new-privileges")


class ContainerError(AttestError):
    """The image cannot be run (no engine binary, no such image): one line, exit 3."""


@dataclass(frozen=True)
class ImageRun:
    """What to run: IMAGE with its entrypoint unchanged; `args`, when given, replace its command."""

    image: str
    args: list[str] = field(default_factory=list)
    engine: str = "podman"

    def binary(self) -> str:
        """The engine's executable, checked to exist and to be able to join a namespace by path."""
        if self.engine not in ENGINES:
            raise ContainerError(f"--engine must be podman or docker, not {self.engine!r}")
        if self.engine == "docker":
            raise ContainerError(
                "docker cannot join a network namespace by path (--network ns:...): use --engine podman"
            )
        found = shutil.which(self.engine)
        if found is None:
            raise ContainerError(
                f"{self.engine} not found: install it to run an image (apt-get install podman)"
            )
        return found

    def ready(self) -> str:
        """The engine's executable, once it and the image are known to be there."""
        binary = self.binary()
        self.check_image(binary)
        return binary

    def run(self, binary: str, netns: str, env: Mapping[str, str]) -> int:
        """Run the container to its end; its exit code, or ContainerError when the engine itself failed."""
        done = subprocess.run(self.argv(binary, netns, env), stdin=subprocess.DEVNULL, check=False)
        if done.returncode == ENGINE_FAILED:
            raise ContainerError(f"{self.engine} could not run {self.image!r} (it exited {ENGINE_FAILED})")
        return done.returncode

    def check_image(self, binary: str) -> None:
        """The image exists locally: nothing is ever pulled."""
        done = subprocess.run(
            privileged([binary, "image", "exists", self.image]), capture_output=True, check=False
        )
        if done.returncode != 0:
            raise ContainerError(
                f"image {self.image!r} not found by {self.engine} (build or load it first; nothing is pulled)"
            )

    def argv(self, binary: str, netns: str, env: Mapping[str, str]) -> list[str]:
        """`podman run` of the image in the namespace at `netns`, with exactly `env` added."""
        argv = [binary, "run", "--rm", "--pull", "never", "--network", f"ns:{netns}", "--http-proxy=false"]
        argv += list(CONFINEMENT)
        for name in sorted(env):
            argv += ["--env", f"{name}={env[name]}"]
        return privileged([*argv, self.image, *self.args])
