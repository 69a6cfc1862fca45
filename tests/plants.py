"""What a pull request can plant in its checkout to run in a step that merely works there.

Each plant, if it ever runs, leaves a marker file named after itself in the markers directory:
- `pip/` and `venv/` packages: `python -m pip` or `python -m venv` with the checkout as the working
  directory (which `-m` puts first on the module path) runs them instead of the real ones;
- `attest_toolkit/`: the same for `python -m attest_toolkit.cli`;
- `sitecustomize.py` and `usercustomize.py`: imported at start-up from any directory on the path;
- `plant.pth`: run by `site` for a directory taken as a site directory;
- `git`, `python3`, `python` and `gh` shims, at the top and in `bin/`: run by a step whose PATH holds
  the checkout (or `.`, or an empty entry, with the checkout as the working directory);
- `pyvenv.cfg` with `bin/python` (the real interpreter) and a site-packages `.pth`: the checkout as a
  virtual environment, which an interpreter started from `bin/` takes for its own.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

SHIMS = ("git", "python3", "python", "gh")


def _python_plant(markers: Path, what: str) -> str:
    name = what.replace("/", "-")
    return f"import os\nopen(os.path.join({str(markers)!r}, {name!r}), 'w').close()\n"


def _shim(markers: Path, what: str) -> str:
    name = what.replace("/", "-")
    return f"#!/bin/sh\n: >'{markers}/{name}'\nexit 1\n"


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def plant(checkout: Path, markers: Path) -> None:
    """Every plant in `checkout`; each leaves `markers/<what>` if it runs."""
    markers.mkdir(parents=True, exist_ok=True)
    for package in ("pip", "venv", "attest_toolkit"):
        for module in ("__init__", "__main__"):
            _write(checkout / package / f"{module}.py", _python_plant(markers, f"{package}/{module}.py"))
    _write(checkout / "attest_toolkit" / "cli" / "__init__.py", _python_plant(markers, "attest_toolkit/cli"))
    for module in ("sitecustomize", "usercustomize"):
        _write(checkout / f"{module}.py", _python_plant(markers, f"{module}.py"))
    _write(
        checkout / "plant.pth", _python_plant(markers, "plant.pth").replace("\n", "; ").rstrip("; ") + "\n"
    )
    for shim in SHIMS:
        _write(checkout / shim, _shim(markers, shim), 0o755)
        if shim != "python":
            _write(checkout / "bin" / shim, _shim(markers, f"bin/{shim}"), 0o755)
    real = Path(sys.executable).resolve()
    (checkout / "bin" / "python").symlink_to(real)
    _write(checkout / "pyvenv.cfg", f"home = {real.parent}\ninclude-system-site-packages = false\n")
    version = sysconfig.get_python_version()
    pth = _python_plant(markers, "pyvenv.cfg").replace("\n", "; ").rstrip("; ") + "\n"
    _write(checkout / "lib" / f"python{version}" / "site-packages" / "plant.pth", pth)


def ran(markers: Path) -> list[str]:
    """The plants that ran."""
    return sorted(p.name for p in markers.iterdir()) if markers.is_dir() else []
