"""`attest fixture import|show|list|diff|verify|seal|rebase|download|push|pull`: bring cassettes and
ctxmesh runs in, read, check and rebase fixtures, keep them in an object store pinned by digest."""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path

import typer

from ..capture import rebase as rebasing
from ..errors import AttestError, UsageError
from ..fixtures import catalog, ctxmesh, importer
from ..fixtures import document as fx
from ..fixtures.remote import ctxmesh_run, pinned
from ..fixtures.remote.client import DEFAULT_BUCKET, config_from_env
from ..fixtures.sequence import diagram
from ..fixtures.verify import seal_fixture, verify_fixture
from ..fixtures.view import describe
from ..progress import ProgressLine, counted
from ..replay import last_miss as kept_miss
from .command import command_group

EXIT_OK, EXIT_BAD_FIXTURE = 0, 3

CASSETTES = typer.Argument(
    None,
    help="vcrpy / pytest-recording cassettes (YAML or JSON), imported in order; or one ctxmesh fixture "
    "file or directory of its blobs.",
)
MCP_ENV = typer.Option(
    "MCP_URL", "--mcp-env", help="ctxmesh: the variable the agent reads its MCP endpoint from."
)
NAME = typer.Option(None, "--name", "-n", help="The fixture's name: <fixtures-dir>/<name>.attest.json.")
TREE = typer.Option(
    None,
    "--tree",
    help="Import every cassette in a `cassettes` directory under DIR, each into its own fixture named "
    "as the vcr marker looks it up (run it where pytest runs).",
    metavar="DIR",
)
FIXTURES_DIR = typer.Option(
    None, "--fixtures-dir", help="Where fixtures live (default tests/attest/fixtures)."
)
FORCE = typer.Option(False, "--force", help="Overwrite an existing fixture.")
SHOWN = typer.Argument(..., help="A fixture name, or the path of a fixture file.")
PATHS = typer.Argument(..., help="Fixture files to check, or directories: every fixture in each.")


def import_(
    cassettes: list[Path] | None = CASSETTES,
    name: str | None = NAME,
    fixtures_dir: Path | None = FIXTURES_DIR,
    force: bool = FORCE,
    mcp_env: str = MCP_ENV,
    tree: Path | None = TREE,
) -> int:
    """Import vcrpy cassettes, or a ctxmesh fixture, into one fixture (ids templated, credentials
    redacted; a ctxmesh credential refuses the import); or, with --tree, every cassette under a
    directory into a fixture of its own."""
    if tree is not None:
        if cassettes or name:
            raise AttestError(
                "--tree names each fixture after its cassette: drop --name and the cassette paths"
            )
        return import_tree(tree, fixtures_dir, force)
    if not cassettes or not name:
        raise AttestError(
            "name the fixture (--name) and its cassettes, or import a directory with --tree DIR"
        )
    line = ProgressLine()
    if len(cassettes) == 1 and ctxmesh.is_ctxmesh(cassettes[0]):
        path, model, tools = ctxmesh.import_ctxmesh(
            cassettes[0], name, fixtures_dir, mcp_env=mcp_env, force=force
        )
        line.finish(
            f"attest fixture import: {model} model call(s), {tools} tool message(s) from ctxmesh → {path}"
        )
        return EXIT_OK

    def progress(done: int, total: int) -> None:
        line.update(f"attest fixture import: {done}/{total} interactions")

    result = importer.import_cassettes(cassettes, name, fixtures_dir, force=force, progress=progress)
    others = "".join(
        f"; {n} with {h} kept as plain HTTP (not a model provider)" for h, n in result.plain.items()
    )
    line.finish(
        f"attest fixture import: {result.interactions} interaction(s) from {result.cassettes} cassette(s)"
        f" → {result.path}{others}"
    )
    return EXIT_OK


def import_tree(tree: Path, fixtures_dir: Path | None, force: bool) -> int:
    line = ProgressLine()

    def progress(done: int, total: int, cassette: str) -> None:
        line.update(f"attest fixture import: {done}/{total} cassettes ({cassette})")

    rows = importer.import_tree(tree, fixtures_dir, force=force, progress=progress)
    imported = [r for r in rows if r.imported is not None]
    line.finish(
        f"attest fixture import: {len(imported)} imported, {len(rows) - len(imported)} skipped, "
        f"of {len(rows)} cassettes under {tree}"
    )
    for row in rows:
        print(tree_line(row))
    return EXIT_OK


def tree_line(row: importer.TreeRow) -> str:
    """One cassette of the closing table: what became of it, and why when it was skipped."""
    if row.imported is None:
        return f"skipped   {row.cassette}: {row.skipped}"
    others = row.imported.plain
    note = (
        f"; not a model provider, kept as plain HTTP: {', '.join(f'{h} ({n})' for h, n in others.items())}"
        if others
        else ""
    )
    return (
        f"imported  {row.cassette} → {row.name} ({counted(row.imported.interactions, 'interaction')}{note})"
    )


def resolve(name_or_path: str, fixtures_dir: Path | None) -> Path:
    """A fixture by name (under the fixtures directory), or by path when given a file; a bare file
    name that is not here (`hello.attest.json`) is looked for in the fixtures directory."""
    candidate = Path(name_or_path)
    if candidate.is_file() and (fixtures_dir is None or name_or_path.endswith(fx.SUFFIX)):
        return candidate
    if not name_or_path.endswith(fx.SUFFIX):
        return fx.fixture_path(name_or_path, fixtures_dir)
    if candidate.name == name_or_path:
        return fx.fixture_path(fx.name_of(candidate), fixtures_dir)
    return candidate


class ShowFormat(str, Enum):
    text = "text"
    mermaid = "mermaid"


class ListFormat(str, Enum):
    table = "table"
    json = "json"


SHOW_FORMAT = typer.Option(
    ShowFormat.text, "--format", "-f", help="text, or mermaid: the agent's path as a sequence diagram."
)
LIST_FORMAT = typer.Option(ListFormat.table, "--format", "-f", help="table or json.")


def show(
    name: str = SHOWN,
    fixtures_dir: Path | None = FIXTURES_DIR,
    fmt: ShowFormat = SHOW_FORMAT,
) -> int:
    """Print a readable summary of a fixture's interactions, or its calls as a Mermaid diagram."""
    path = resolve(name, fixtures_dir)
    doc = fx.read_fixture(path)
    print(diagram(doc) if fmt is ShowFormat.mermaid else describe(doc, path))
    return EXIT_OK


def list_(fixtures_dir: Path | None = FIXTURES_DIR, fmt: ListFormat = LIST_FORMAT) -> int:
    """List the fixtures: name, age, calls, models, tools, size and source (a bad file: exit 3)."""
    entries, errors = catalog.catalog(fixtures_dir or fx.DEFAULT_DIR)
    for error in errors:
        print(f"attest: {error}", file=sys.stderr)
    if fmt is ListFormat.json:
        print(catalog.as_json(entries))
    else:
        print(catalog.table(entries))
    return EXIT_BAD_FIXTURE if errors else EXIT_OK


LAST_MISS = typer.Option(
    False, "--last-miss", help="Show the last replay miss: the recorded and the sent request side by side."
)


def diff(name: str = SHOWN, fixtures_dir: Path | None = FIXTURES_DIR, last_miss: bool = LAST_MISS) -> int:
    """Show what the code sent beside what the fixture recorded (secrets redacted as capture would);
    never with CI set."""
    if not last_miss:
        raise UsageError("attest fixture diff: say what to compare (--last-miss)")
    print(kept_miss.shown(resolve(name, fixtures_dir)))
    return EXIT_OK


def verified_files(paths: list[Path]) -> list[Path]:
    """The files to verify: each path given, a directory standing for the fixtures in it."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        found = fx.fixture_files(path)
        if not found:
            raise UsageError(f"no fixtures (*{fx.SUFFIX}) in this directory", path)
        files += found
    return files


def verify(paths: list[Path] = PATHS) -> int:
    """Validate, scan and check fixtures (a directory: every fixture in it): `ok` per sound file, one
    error line per bad one (exit 3)."""
    failed = 0
    for path in verified_files(paths):
        try:
            result = verify_fixture(path)
        except AttestError as exc:
            failed += 1
            print(f"attest: {exc}", file=sys.stderr)
            continue
        print(f"ok {path} ({result.interactions} interaction(s), {result.digest[:19]}…)")
    return EXIT_BAD_FIXTURE if failed else EXIT_OK


SEALED = typer.Argument(..., help="The hand-edited fixture: a name, or the path of a fixture file.")


def seal(
    name: str = SEALED,
    fixtures_dir: Path | None = FIXTURES_DIR,
) -> int:
    """Accept a deliberate hand edit: recompute the stored hashes and the digest, print what changed.
    Replay refuses a fixture whose digest does not match until it is sealed. Exit 0 ok; 3 a bad fixture."""
    path = resolve(name, fixtures_dir)
    changes = seal_fixture(path)
    for change in changes:
        print(f"  {change}")
    print(f"attest fixture seal: {path}: " + ("sealed" if changes else "already sealed, nothing changed"))
    return EXIT_OK


REBASED = typer.Argument(..., help="The fixture to rebase: <fixtures-dir>/<name>.attest.json.")
COMMAND = typer.Argument(None, metavar="-- CMD", help="The command to run, after `--`.", show_default=False)


def rebase(
    name: str = REBASED, command: list[str] = COMMAND, fixtures_dir: Path | None = FIXTURES_DIR
) -> int:
    """Run CMD with the fixture served call by call in order, and rewrite the requests that drifted
    (a raised max_tokens, reordered content) to what CMD sends now, every response kept byte for
    byte; no provider is called and no key is needed. A table shows each drifted call's changed
    components and paths, never values. A structural change (another number of calls, another
    endpoint or provider, other tool calls answered) is refused on one line, the file unchanged.
    Exit 0 rebased or nothing drifted; 1 CMD failed (nothing written); 2 refused; 3 could not run."""
    try:
        lines = rebasing.rebase_command(command or [], name, fixtures_dir)
    except rebasing.Refused as exc:  # its line names the fixture already
        print(exc, file=sys.stderr)
        return exc.exit_code
    for line in lines:
        print(line)
    return EXIT_OK


RUN_ID = typer.Argument(
    "", metavar="RUN_ID", show_default=False, help="The ctxmesh run id (the run's key in the store)."
)
OUTPUT = typer.Option(
    None, "--output", "-o", help="The file to write (default <fixtures-dir>/<run id>.attest.json)."
)
RUN_NAME = typer.Option(None, "--name", "-n", help="The fixture's name (default the run id, or -o's name).")
PUSHED = typer.Argument(..., help="The names of the fixtures to upload and pin.")
PULLED = typer.Argument(None, help="The pinned fixtures to fetch (default every one in the lock).")
LOCK = typer.Option(
    None, "--lock", help="The lock file (default <fixtures-dir>.lock: tests/attest/fixtures.lock)."
)
PREFIX = typer.Option(
    pinned.DEFAULT_PREFIX,
    "--prefix",
    envvar=pinned.PREFIX_VARIABLE,
    help="Key prefix of pinned fixtures in the bucket: <prefix>/<name>/<sha256>.attest.json.",
)
STORE_HELP = (
    "The store: OBJECT_STORE_ADDR (host:port), OBJECT_STORE_ACCESS_KEY, OBJECT_STORE_SECRET_KEY, "
    f"OBJECT_STORE_BUCKET (default {DEFAULT_BUCKET}), OBJECT_STORE_SECURE=true for https."
)


def download(
    run_id: str = RUN_ID,
    output: Path | None = OUTPUT,
    name: str | None = RUN_NAME,
    fixtures_dir: Path | None = FIXTURES_DIR,
    mcp_env: str = MCP_ENV,
) -> int:
    """Download a ctxmesh run (every *.json under fixtures/<run id>/) as one fixture, mode 0600.
    Exit 0 ok; 1 usage (blank run id, no store configured); 2 no fixture for the run, or a fetch,
    validation, credential or write error (nothing written)."""
    got = ctxmesh_run.download_run(
        run_id, output=output, name=name, fixtures_dir=fixtures_dir, mcp_env=mcp_env
    )
    print(
        f"attest fixture download: run {run_id}: {got.model} model call(s), {got.tools} tool message(s) "
        f"from {got.blobs} blob(s)"
    )
    print(f"wrote {got.path} (mode 0600; it holds full prompts and tool results: do not commit it)")
    if output is not None:
        where = f"--fixture {shlex.quote(str(got.path))}"
    else:
        where = f"--name {got.name}" + (
            f" --fixtures-dir {shlex.quote(str(fixtures_dir))}" if fixtures_dir else ""
        )
    print(f"replay: attest replay {where} -- <your agent command>")
    return EXIT_OK


def push(
    names: list[str] = PUSHED,
    fixtures_dir: Path | None = FIXTURES_DIR,
    lock: Path | None = LOCK,
    prefix: str = PREFIX,
) -> int:
    """Upload fixtures to the object store by content digest and pin them in the lock file (commit
    the lock, not the fixtures). Exit 0 ok; 1 usage or no store; 2 a store, fixture or write error."""
    path, done = pinned.push(config_from_env(), names, fixtures_dir, lock, prefix)
    for item in done:
        print(f"pushed {item.name} {item.digest}" + ("" if item.transferred else " (already in the store)"))
    print(f"attest fixture push: {len(done)} pinned in {path}: commit it")
    return EXIT_OK


def pull(
    names: list[str] | None = PULLED,
    fixtures_dir: Path | None = FIXTURES_DIR,
    lock: Path | None = LOCK,
    prefix: str = PREFIX,
) -> int:
    """Fetch the fixtures the lock file pins, each verified against its digest (a mismatch is
    refused); fixtures already here with the pinned digest are not downloaded again. Exit 0 ok;
    1 usage or no store; 2 a store error, a digest mismatch or a bad fixture."""
    path, done = pinned.pull(config_from_env(), names, fixtures_dir, lock, prefix)
    print(pinned.pulled_line(path, done))
    return EXIT_OK


def register(app: typer.Typer) -> None:
    fixture_app = command_group(
        "fixture",
        "Import vcrpy cassettes and ctxmesh runs as fixtures; show, list, verify, diff, seal and rebase "
        "fixtures; keep them in an object store pinned by digest (push, pull: their --help names the "
        "store's settings).",
    )
    fixture_app.command("import")(import_)
    fixture_app.command("show")(show)
    fixture_app.command("list")(list_)
    fixture_app.command("verify")(verify)
    fixture_app.command("diff")(diff)
    fixture_app.command("seal")(seal)
    fixture_app.command("rebase")(rebase)
    fixture_app.command("download", epilog=STORE_HELP)(download)
    fixture_app.command("push", epilog=STORE_HELP)(push)
    fixture_app.command("pull", epilog=STORE_HELP)(pull)
    app.add_typer(fixture_app, name="fixture")
