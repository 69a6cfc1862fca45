"""`mkdocs build --strict` of the documentation site (mkdocs.yml, docs/), as `make docs-build` runs it:
it passes on the site as committed, a broken link or anchor fails it naming the page, and every link
the READMEs make into the site reaches a page and a heading it has."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def build(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    found = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(
            "mkdocs is not installed: `make test` installs the docs extra (pip install -e '.[test,docs]')"
        )
    env = {"PATH": str(Path(sys.executable).parent), "NO_MKDOCS_2_WARNING": "1", "HOME": str(out)}
    return subprocess.run(
        [found, "build", "--strict", "--site-dir", str(out / "site")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def copy_of_the_site(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "mkdocs.yml", root)
    shutil.copy(REPO / "README.md", root)  # the home page takes its sections
    shutil.copytree(REPO / "workflows", root / "workflows")  # the GitLab guide shows its job
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = build(REPO, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "providers" / "bedrock" / "index.html").is_file()
    home = re.sub(r"<[^>]+>", "", (tmp_path / "site" / "index.html").read_text(encoding="utf-8"))
    assert "attest capture --name hello -- python agent.py" in home  # the README's quickstart, taken in
    assert unreachable(tmp_path / "site") == []
    # a pipe in a code span of a table cell is shown as written (the `base` input's default)
    action = (tmp_path / "site" / "reference" / "action" / "index.html").read_text(encoding="utf-8")
    assert "github.event.pull_request.base.sha || github.event.merge_group.base_sha" in action


SITE = "https://attest-toolkit.github.io/attest-toolkit/"
READMES = ("README.md", "sdks/vitest/README.md")


def unreachable(built: Path) -> list[str]:
    """The links of the READMEs into the site whose page or heading the built site does not have."""
    missing = []
    for readme in READMES:
        for link in re.findall(rf"{re.escape(SITE)}([\w/.#-]*)", (REPO / readme).read_text(encoding="utf-8")):
            page, _, anchor = link.partition("#")
            html = built / page / "index.html"
            if not html.is_file() or (anchor and f'id="{anchor}"' not in html.read_text(encoding="utf-8")):
                missing.append(f"{readme}: {SITE}{link}")
    return missing


@pytest.mark.parametrize(
    ("link", "said"),
    [
        ("[gone](../guides/no-such-page.md)", "no-such-page.md"),
        ("[gone](../security.md#no-such-heading)", "no-such-heading"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_build_naming_the_page(
    tmp_path: Path, link: str, said: str
) -> None:
    root = copy_of_the_site(tmp_path)
    page = root / "docs" / "getting-started" / "replay.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\nSee {link}.\n", encoding="utf-8")
    done = build(root, tmp_path)
    assert done.returncode != 0
    assert "getting-started/replay.md" in done.stderr and said in done.stderr
