"""The provider registry: every place that knows a provider asks it, and the two guards (Python and
the Vitest helper) block the same hosts because they read the same file."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from attest_toolkit import guard, providers
from attest_toolkit.normalize import volatile
from attest_toolkit.providers.env import ALL_VARS, KEY_VARS, proxy_env
from attest_toolkit.replay import lane
from conftest import REPO
from test_guard import ALLOWED_SAMPLES, BLOCKED_SAMPLES

SDK = REPO / "sdks" / "vitest"
HOSTS = REPO / "toolkit" / "attest_toolkit" / "providers" / "hosts.json"
SCHEMA = REPO / "toolkit" / "attest_toolkit" / "schemas" / "fixture.schema.json"

needs_tsc = pytest.mark.skipif(
    not (SDK / "node_modules" / "typescript").exists() or shutil.which("node") is None,
    reason="sdks/vitest has no node_modules: run `make test`, or `npm ci` in sdks/vitest",
)

# Checked by the TypeScript guard as built: what it blocks, one line of JSON.
_TS_CHECK = """
import { isBlockedHost } from "./dist/guard/hosts.js";
const hosts = JSON.parse(process.argv[1]);
console.log(JSON.stringify(Object.fromEntries(hosts.map((h) => [h, isBlockedHost(h)]))));
"""


@pytest.fixture(scope="module")
def built_sdk() -> Path:
    done = subprocess.run(
        ["npm", "run", "--silent", "build"], cwd=SDK, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return SDK / "dist"


@needs_tsc
def test_the_vitest_package_ships_the_host_file_the_python_guard_reads(built_sdk: Path) -> None:
    assert (built_sdk / "guard" / "hosts.json").read_bytes() == HOSTS.read_bytes()


@needs_tsc
def test_both_guards_block_the_same_hosts(built_sdk: Path) -> None:
    samples = [*BLOCKED_SAMPLES, *ALLOWED_SAMPLES]
    done = subprocess.run(
        ["node", "--input-type=module", "-e", _TS_CHECK, json.dumps(samples)],
        cwd=SDK,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    typescript = json.loads(done.stdout)
    python = {host: guard.is_blocked_host(host) for host in samples}
    assert typescript == python
    assert all(python[h] for h in BLOCKED_SAMPLES) and not any(python[h] for h in ALLOWED_SAMPLES)


def test_every_host_pattern_is_a_whole_name_in_python_and_javascript_syntax() -> None:
    # Named groups, lookbehinds and flags differ between the two languages: the file keeps to the
    # syntax both share, so a pattern cannot mean one thing to one guard and another to the other.
    data = json.loads(HOSTS.read_text(encoding="utf-8"))
    for entry in data["patterns"]:
        pattern = entry["pattern"]
        assert not any(mark in pattern for mark in ("(?P", "(?<", "(?i")), entry
        assert not pattern.startswith("^") and not pattern.endswith("$"), entry  # anchored by both guards


def test_the_fixture_schema_names_every_provider_of_the_registry() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    enum = schema["$defs"]["interaction"]["properties"]["provider"]["enum"]
    assert enum == list(providers.PROVIDERS)


def test_every_provider_variable_is_pointed_at_the_proxy_under_its_own_name() -> None:
    env = proxy_env("http://127.0.0.1:9/r/s")
    assert set(env) == set(ALL_VARS)
    for p in providers.PROVIDERS.values():
        for var in p.base_url_vars:
            assert env[var].startswith(f"http://127.0.0.1:9/r/s/{p.name}{p.proxy_path}")
    # google-genai keeps the project/location path only under a base URL ending in .googleapis.com;
    # LiteLLM's vendor variables include the version path its vendor's own SDK adds itself.
    assert env["GOOGLE_VERTEX_BASE_URL"] == "http://127.0.0.1:9/r/s/vertex/aiplatform.googleapis.com"
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9/r/s/gemini/generativelanguage.googleapis.com"
    assert (env["GROQ_BASE_URL"], env["GROQ_API_BASE"]) == (
        "http://127.0.0.1:9/r/s/groq",
        "http://127.0.0.1:9/r/s/groq/openai/v1",
    )
    assert {p.name: p.key_var for p in providers.PROVIDERS.values() if p.key_var} == KEY_VARS


def test_the_lane_answers_exactly_the_recorded_providers() -> None:
    assert {n for n, p in providers.PROVIDERS.items() if p.records} == lane.PROVIDERS
    assert lane.split_target("/r/s1/otlp/v1/traces") is None


def test_the_volatile_scan_knows_every_id_prefix_a_provider_issues() -> None:
    shaped = {prefix for p in providers.PROVIDERS.values() for prefix in p.ids}
    assert shaped == volatile.ID_PREFIXES
    assert all(prefix[-1] in "-_" for prefix in shaped)


@pytest.mark.parametrize(
    ("path", "hint", "provider"),
    [
        ("/v1/chat/completions", None, "openai"),
        ("/v1/messages", None, "anthropic"),
        ("/v1/messages/count_tokens", None, "anthropic"),
        ("/v1/traces", None, "otlp"),
        ("/v1/embeddings", None, "openai"),
        ("/v1/chat/completions", "api.anthropic.com", "anthropic"),
        ("/v1/messages", "my-gateway.openai.azure.com", "azure"),
        ("/openai/deployments/gpt-4o/chat/completions", None, "azure"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", None, "gemini"),
        ("/model/us.amazon.nova-pro-v1:0/converse", None, "bedrock"),
        ("/model/anthropic.claude-3-5-haiku-20241022-v1:0/invoke-with-response-stream", None, "bedrock"),
        ("/v1/chat/completions", "bedrock-runtime.eu-west-1.amazonaws.com", "bedrock"),
        (
            "/v1beta1/projects/p/locations/global/publishers/google/models/gemini-2.5-flash:countTokens",
            None,
            "vertex",
        ),
        ("/openai/v1/chat/completions", "api.groq.com", "groq"),
        ("/v1/chat/completions", "api.mistral.ai", "mistral"),
    ],
)
def test_a_path_or_host_names_its_provider(path: str, hint: str | None, provider: str) -> None:
    assert providers.provider_for(path, hint) == provider


@pytest.mark.parametrize("name", ["openai", "anthropic", "otlp", "no-such-provider"])
def test_an_error_the_proxy_answers_itself_carries_the_message_in_the_provider_form(name: str) -> None:
    body = providers.error_body(name, 400, "replay miss: model changed")
    error = body["error"]
    assert error["message"] == "replay miss: model changed"
    assert (body.get("type") == "error") == (name == "anthropic")


def test_a_bedrock_error_the_proxy_answers_carries_its_kind_in_the_header_botocore_reads() -> None:
    assert providers.error_body("bedrock", 400, "replay miss: model changed") == {
        "message": "replay miss: model changed"
    }
    assert providers.error_headers("bedrock", 400)["x-amzn-ErrorType"].startswith("ValidationException:")
    assert providers.error_headers("openai", 400) == {}


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/model/us.amazon.nova-pro-v1:0/converse-stream", "us.amazon.nova-pro-v1:0"),
        (
            "/model/arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-v1:0/invoke",
            "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-v1:0",
        ),
    ],
)
def test_a_bedrock_model_is_read_from_its_path(path: str, model: str) -> None:
    assert providers.model_of(path, {"anthropic_version": "bedrock-2023-05-31"}) == model


def _provider_comparisons(path: Path) -> list[str]:
    """`x == "otlp"`, `"vertex" in names`: a comparison with a provider's name as a literal."""
    names = set(providers.PROVIDERS)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            literals = [n.value for n in (node.left, *node.comparators) if isinstance(n, ast.Constant)]
            found += [f"{path.name}:{node.lineno} {v!r}" for v in literals if v in names]
    return found


def test_no_module_outside_the_registry_decides_by_a_providers_name() -> None:
    """Adding a provider is a module in providers/: what other code asks of a provider is a field of its
    record (`records`, `google_token`, `priced_as`, ...), never a comparison with its name."""
    package = REPO / "toolkit" / "attest_toolkit"
    outside = [p for p in package.rglob("*.py") if "providers" not in p.relative_to(package).parts]
    assert [hit for p in outside for hit in _provider_comparisons(p)] == []


def test_bedrock_model_ids_price_as_the_table_names_they_wrap() -> None:
    from attest_toolkit.pricing.cost import price_of

    assert price_of("us.anthropic.claude-sonnet-4-20250514-v1:0") == price_of("claude-sonnet-4")
    assert price_of("amazon.nova-pro-v1:0") == price_of("nova-pro") is not None
    assert sorted(providers.GOOGLE_TOKEN) == ["vertex"]
