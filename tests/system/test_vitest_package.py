"""The Vitest package installs as a user installs it: the folder or its packed tarball, with no
`npm ci` first. It ships its built dist/ (which must be what src/ builds to), needs nothing from its
devDependencies at install time, and carries the project's licence."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdks" / "vitest"
TSC = SDK / "node_modules" / "typescript" / "bin" / "tsc"
needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def manifest() -> dict:
    return json.loads((SDK / "package.json").read_text(encoding="utf-8"))


def test_nothing_runs_at_install_and_the_licence_is_the_projects() -> None:
    scripts = manifest().get("scripts", {})
    assert not {"prepare", "preinstall", "install", "postinstall"} & set(scripts)
    found = re.search(r'^license = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None and manifest()["license"] == found.group(1) == "Apache-2.0"


@pytest.mark.skipif(not TSC.is_file(), reason="sdks/vitest has no node_modules: run `make test`")
def test_the_shipped_dist_is_what_src_builds_to(tmp_path: Path) -> None:
    # Built beside a copy of src/, so the source maps' relative paths are the shipped ones.
    copy = tmp_path / "vitest"
    shutil.copytree(SDK / "src", copy / "src")
    for name in ("tsconfig.json", "package.json"):  # package.json: "type": "module" decides the output
        shutil.copy(SDK / name, copy)
    (copy / "node_modules").symlink_to(SDK / "node_modules")
    done = subprocess.run(
        ["node", str(TSC), "-p", "tsconfig.json"], cwd=copy, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # the build's second step (scripts/copy-data.mjs): the guard's host list and the modes, shared with Python
    shutil.copy(ROOT / "toolkit" / "attest_toolkit" / "providers" / "hosts.json", copy / "dist" / "guard")
    shutil.copy(ROOT / "toolkit" / "attest_toolkit" / "replay" / "modes.json", copy / "dist")
    built, shipped = files(copy / "dist"), files(SDK / "dist")
    stale = sorted(str(p) for p in built.keys() | shipped.keys() if built.get(p) != shipped.get(p))
    assert not stale, f"sdks/vitest/dist differs from a build of src/ (run `npm run build` there): {stale}"


def files(root: Path) -> dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@needs_npm
def test_the_packed_tarball_installs_in_a_fresh_project_and_its_reporter_loads(tmp_path: Path) -> None:
    packed = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(tmp_path)],
        cwd=SDK,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert packed.returncode == 0, packed.stderr
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "fresh", "private": true, "type": "module"}\n')
    install = ["npm", "install", "--offline", "--no-audit", "--no-fund", "--legacy-peer-deps", str(tarball)]
    done = subprocess.run(install, cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    load = "import('@attest-ai/vitest/reporter').then((m) => console.log(typeof m.default))"
    loaded = subprocess.run(["node", "-e", load], cwd=project, capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip() == "function", loaded.stderr
