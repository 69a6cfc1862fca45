"""The documentation site (mkdocs.yml, docs/) and its front door, the README: the generated reference
pages are what the code makes today, every provider has its page, every code sample of a page runs in
a named test or says why it cannot, and the README stays a short front door with the quickstart."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from attest_toolkit.providers import PROVIDERS
from attest_toolkit.report.policy import DEFAULTS, parse_policy, parse_text
from conftest import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
# A fenced block with a language is a sample; its previous line says which test runs it, or why none does.
SAMPLE = re.compile(r"^(?P<note>.*)\n```(?P<lang>\w+)\n", re.MULTILINE)
NOTE = re.compile(r"<!-- sample: (?:not run: (?P<why>.+)|(?P<file>tests/[\w/.-]+\.py)::(?P<test>\w+)) -->$")
OUTPUT_LANGS = {"text", "mermaid"}  # what a command prints, or a picture: nothing to run


def _script(name: str) -> ModuleType:
    """A script of docs/gen/, loaded from its path (docs/ is no package), once."""
    if f"docs_{name}" in sys.modules:
        return sys.modules[f"docs_{name}"]
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / "gen" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def generator() -> ModuleType:
    return _script("reference")


def pictures() -> ModuleType:
    return _script("pictures")


def nav_pages() -> set[str]:
    def walk(node: object) -> set[str]:
        if isinstance(node, str):
            return {node}
        items = node.values() if isinstance(node, dict) else node
        return set().union(*(walk(item) for item in items)) if isinstance(node, dict | list) else set()

    # mkdocs.yml names a Python callable (!!python/name:) that safe_load refuses; the nav needs none.
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python/name:", "")
    return walk(yaml.safe_load(text)["nav"])


def test_every_generated_page_is_what_the_code_makes_now() -> None:
    stale = generator().stale()
    assert stale == [], f"stale generated pages (run `make docs-reference`): {stale}"


def test_a_changed_action_input_makes_its_page_stale(tmp_path: Path, monkeypatch) -> None:
    gen = generator()
    action = (REPO / "action.yml").read_text(encoding="utf-8")
    fake = tmp_path / "repo"
    (fake / "docs" / "reference").mkdir(parents=True)
    (fake / "action.yml").write_text(action.replace("Replay mode, strict", "Replay mode (changed), strict"))
    page = REPO / "docs" / "reference" / "action.md"
    (fake / "docs" / "reference" / "action.md").write_text(page.read_text(encoding="utf-8"))
    monkeypatch.setattr(gen, "REPO", fake)
    assert "Replay mode (changed)" in gen.action_page()
    assert gen.action_page() != page.read_text(encoding="utf-8")


def test_every_picture_shows_what_the_code_renders_now() -> None:
    stale = pictures().stale()
    assert stale == [], f"stale pictures (run `make docs-pictures`): {stale}"


def test_a_picture_keeps_the_digest_of_its_source() -> None:
    png = (DOCS / "img" / "pr-comment.png").read_bytes()
    assert pictures().source_of(png) == pictures().digest(pictures().comment_markdown())
    assert pictures().source_of(pictures().with_source(png, "another comment")) != (
        pictures().digest(pictures().comment_markdown())
    )


def test_every_provider_of_the_registry_has_a_page_in_the_nav() -> None:
    pages = nav_pages()
    missing = [name for name in PROVIDERS if f"providers/{name}.md" not in pages]
    assert missing == []


def test_every_code_sample_runs_in_a_named_test_or_says_why_not() -> None:
    problems = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for sample in SAMPLE.finditer(text):
            if sample["lang"] in OUTPUT_LANGS or page.name == "cli.md":  # cli.md: usage lines, generated
                continue
            where = f"{page.relative_to(REPO)}: a {sample['lang']} sample"
            note = NOTE.fullmatch(sample["note"].strip())
            if note is None:
                problems.append(
                    f"{where} names no test (<!-- sample: tests/FILE.py::TEST --> or not run: WHY)"
                )
            elif note["file"] and not re.search(
                rf"^def {note['test']}\(", (REPO / note["file"]).read_text(encoding="utf-8"), re.MULTILINE
            ):
                problems.append(f"{where} names {note['file']}::{note['test']}, which is not there")
    assert problems == []


def test_the_policy_sample_holds_every_default() -> None:
    text = (DOCS / "reference" / "policy.md").read_text(encoding="utf-8")
    sample = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    policy = parse_policy(parse_text(sample, "docs/reference/policy.md"))
    assert policy.settings == DEFAULTS
    assert len(policy.overrides) == 1


def test_the_readme_is_a_short_front_door_with_the_quickstart_first() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250
    start, end = lines.index("<!-- quickstart:start -->"), lines.index("<!-- quickstart:end -->")
    assert start < 60, "the quickstart is on the first screen"
    block = lines[start + 1 : end]
    assert block[0] == "```sh" and block[-1] == "```"
    commands = " ".join(block)
    assert all(step in commands for step in ("pip install", "attest init", "attest capture", "pytest"))
    assert "make example" in text and "make test" in text
    # every link into the site is a page the site has
    site = "https://attest-toolkit.github.io/attest-toolkit/"
    linked = {link.split("#")[0] for link in re.findall(rf"{re.escape(site)}([\w/.#-]*)", text)}
    assert linked - {url(page) for page in nav_pages()} == set()


def url(page: str) -> str:
    """The address MkDocs serves a page at, under the site (`guides/vitest.md`: `guides/vitest/`)."""
    stem = page.removesuffix(".md")
    return stem.removesuffix("index") if stem.endswith("index") else f"{stem}/"


def test_a_release_publishes_the_site_built_strict_and_only_the_deploy_job_may_write() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "docs.yml").read_text(encoding="utf-8"))
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML reads the key `on` as True
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert "mkdocs build --strict" in "".join(step.get("run", "") for step in jobs["build"]["steps"])
    writes = {name: job.get("permissions", {}) for name, job in jobs.items() if job.get("permissions")}
    assert writes == {"deploy": {"pages": "write", "id-token": "write"}}
    assert not any("actions/checkout" in step.get("uses", "") for step in jobs["deploy"]["steps"])


def test_the_package_metadata_links_the_site() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python/name:", ""))
    assert project["urls"]["Documentation"] == site["site_url"]
