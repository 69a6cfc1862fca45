"""Vertex AI through the official google-genai SDK with `vertexai=True`: captured against a scripted
upstream that speaks the wire format (project/location paths, the caller's own Google token
forwarded), replayed strict with no Google credentials at all and no network, missing by component."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import google.auth  # google-genai brings google-auth
import google.genai
import pytest
from attest_toolkit.fixtures import document as fx
from attest_toolkit.proxy.live import upstream_for
from attest_toolkit.replay.server import Engine
from capture_helpers import run_agent
from conftest import AGENTS, clean_env, run_cli
from google.auth.transport.requests import Request
from test_gemini import flow_replies as gemini_flow_replies
from upstream import (
    FakeUpstream,
    gemini_answer,
    gemini_error,
    google_token,
    vertex_embedding,
)

AGENT = AGENTS / "vertex_agent.py"
TOKEN = "ya29.a0AfB_" + "t" * 40  # the shape of a Google OAuth access token
QUOTA_PROJECT = "billing-project-7"
MODELS = "/v1beta1/projects/attest-demo/locations/us-central1/publishers/google/models/"
# Variables that would choose Vertex AI, a project, credentials or a base URL: a test sets what it means to.
_GOOGLE = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
)


def env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment whose home holds no gcloud credentials."""
    base = {k: v for k, v in clean_env().items() if k not in _GOOGLE}
    return {**base, "HOME": str(home), "PYTHONIOENCODING": "utf-8", **extra}


def credentials_file(folder: Path, token_uri: str) -> Path:
    """The user's own application default credentials, in a form whose token endpoint the file names
    (gcloud writes it for workforce identity federation)."""
    path = folder / "adc.json"
    info = {
        "type": "external_account_authorized_user",
        "audience": "//iam.googleapis.com/locations/global/workforcePools/pool/providers/idp",
        "client_id": "user-client-id",
        "client_secret": "user-client-secret",
        "refresh_token": "user-refresh-token",
        "token_url": token_uri,
        "quota_project_id": QUOTA_PROJECT,
    }
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def attest(fixtures_dir: Path, *args: str, home: Path, **extra: str):
    """`attest COMMAND [OPTIONS] --fixtures-dir DIR -- vertex_agent.py ARGS...`."""
    return run_agent(AGENT, fixtures_dir, args, env(home, **extra))


@dataclass
class Flow:
    fixtures_dir: Path
    home: Path
    upstream: FakeUpstream
    tokens: FakeUpstream
    out: str


def flow_replies() -> list:
    """The Gemini flow's answers, the embedding in Vertex AI's embedContent form."""
    return [*gemini_flow_replies()[:-1], vertex_embedding([0.25, -0.5, 0.125])]


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    root = tmp_path_factory.mktemp("vertex")
    home = root / "home"
    home.mkdir()
    with FakeUpstream(flow_replies()) as upstream, FakeUpstream([google_token(TOKEN)]) as tokens:
        adc = credentials_file(root, tokens.url + "/token")
        captured = attest(
            root / "fixtures", "capture", "--name", "vertex", "--", "flow", home=home,
            ATTEST_VERTEX_UPSTREAM=upstream.url, GOOGLE_APPLICATION_CREDENTIALS=str(adc),
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        yield Flow(root / "fixtures", home, upstream, tokens, captured.stdout)


def strict(flow: Flow, *agent_args: str, **extra: str):
    """A strict replay with no Google credentials configured: no variable, no gcloud file."""
    return attest(
        flow.fixtures_dir, "replay", "--mode", "strict", "--name", "vertex", "--", *agent_args,
        home=flow.home, **extra,
    )  # fmt: skip


def test_capture_forwards_the_callers_google_token_and_stores_none_of_it(flow: Flow) -> None:
    sent = flow.upstream.requests
    assert [s.path for s in sent] == [
        MODELS + "gemini-2.5-flash:generateContent",
        MODELS + "gemini-2.5-flash:generateContent",
        MODELS + "gemini-2.5-flash:streamGenerateContent",
        MODELS + "gemini-2.5-flash:countTokens",
        MODELS + "gemini-embedding-001:embedContent",
    ]
    assert sent[2].query == "alt=sse"
    for s in sent:
        headers = {k.lower(): v for k, v in s.headers.items()}
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert headers["x-goog-user-project"] == QUOTA_PROJECT
    text = (flow.fixtures_dir / "vertex.attest.json").read_text(encoding="utf-8")
    assert TOKEN not in text and "x-goog-user-project" not in text.lower() and QUOTA_PROJECT not in text
    model = fx.model_interactions(fx.read_fixture(flow.fixtures_dir / "vertex.attest.json"))
    assert {i["provider"] for i in model} == {"vertex"}
    assert [i["path"] for i in model] == [s.path for s in sent]  # no base-URL segment of attest's
    assert len(model[2]["response"]["body"]["sse"]) == 3


def test_a_capture_replays_strict_with_no_google_credentials_and_no_upstream_call(flow: Flow) -> None:
    calls, token_calls = len(flow.upstream.requests), len(flow.tokens.requests)
    replayed = strict(flow, "flow")
    assert replayed.returncode == 0, replayed.stderr
    assert (len(flow.upstream.requests), len(flow.tokens.requests)) == (calls, token_calls)
    assert replayed.stdout == flow.out + "attest replay: 5 replayed · 0 live model calls · $0.00\n"
    assert "tool multiply(1231, 2331) = 2869461" in flow.out
    assert "streamed: Two million, |eight hundred sixty-nine thousand, |four hundred sixty-one." in flow.out
    assert "tokens: 9" in flow.out and "embedding: [0.25, -0.5, 0.125]" in flow.out


def test_fixture_show_reads_vertex_replies(flow: Flow) -> None:
    shown = run_cli(
        ["fixture", "show", "vertex", "--fixtures-dir", str(flow.fixtures_dir)], env=env(flow.home)
    )
    assert shown.returncode == 0, shown.stderr
    assert "tool calls: multiply" in shown.stdout
    assert '→ 200 sse (3 events)  "Two million, eight hundred' in shown.stdout


def test_credentials_the_user_configured_are_used_in_replay_not_replaced(flow: Flow, tmp_path: Path) -> None:
    with FakeUpstream([google_token(TOKEN)]) as tokens:
        adc = credentials_file(tmp_path, tokens.url + "/token")
        replayed = strict(flow, "flow", GOOGLE_APPLICATION_CREDENTIALS=str(adc))
        assert replayed.returncode == 0, replayed.stderr
        assert [r.path for r in tokens.requests] == ["/token"]


def test_a_changed_prompt_misses_naming_the_messages(flow: Flow) -> None:
    replayed = strict(flow, "flow", "What is 1231 * 2332?")
    assert replayed.returncode == 2, replayed.stderr
    miss = "replay miss: messages changed: messages[0].parts[0].text (hash "
    assert f"google error 400: {miss}" in replayed.stderr


def test_vertex_chosen_by_the_environment_is_captured_and_replayed(tmp_path: Path) -> None:
    """genai.Client() with GOOGLE_GENAI_USE_VERTEXAI reads GOOGLE_GEMINI_BASE_URL, not the Vertex one:
    its calls are still Vertex AI's, forwarded to Vertex AI's upstream and replayed."""
    home = tmp_path / "home"
    home.mkdir()
    chosen = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "attest-demo"}
    chosen["GOOGLE_CLOUD_LOCATION"] = "us-central1"
    with FakeUpstream([gemini_answer("hi from Vertex")]) as up, FakeUpstream([google_token(TOKEN)]) as tokens:
        adc = credentials_file(tmp_path, tokens.url + "/token")
        captured = attest(
            tmp_path / "fixtures", "capture", "--name", "vertex", "--", "ask", home=home,
            ATTEST_VERTEX_UPSTREAM=up.url, GOOGLE_APPLICATION_CREDENTIALS=str(adc), **chosen,
        )  # fmt: skip
        assert captured.returncode == 0, captured.stderr
        assert [r.path for r in up.requests] == [MODELS + "gemini-2.5-flash:generateContent"]
    replayed = attest(
        tmp_path / "fixtures",
        "replay",
        "--mode",
        "strict",
        "--name",
        "vertex",
        "--",
        "ask",
        home=home,
        **chosen,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[0] == "answer: hi from Vertex"


def test_a_google_error_is_recorded_and_replayed_as_it_happened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    message = "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute."
    with FakeUpstream([gemini_error(429, message)]) as up, FakeUpstream([google_token(TOKEN)]) as tokens:
        adc = credentials_file(tmp_path, tokens.url + "/token")
        captured = attest(
            tmp_path / "fixtures", "capture", "--name", "e", "--expect-fail", "--", "flow", home=home,
            ATTEST_VERTEX_UPSTREAM=up.url, GOOGLE_APPLICATION_CREDENTIALS=str(adc),
        )  # fmt: skip
    assert captured.returncode == 0, captured.stderr
    replayed = attest(
        tmp_path / "fixtures", "replay", "--mode", "strict", "--name", "e", "--", "flow", home=home
    )
    expected = f"google error 429: {message}"
    assert expected in captured.stderr and expected in replayed.stderr
    doc = json.loads((tmp_path / "fixtures" / "e.attest.json").read_text(encoding="utf-8"))
    (interaction,) = fx.model_interactions(doc)
    assert interaction["response"]["body"]["json"]["error"]["status"] == "RESOURCE_EXHAUSTED"


@pytest.mark.parametrize(
    ("location", "endpoint"),
    [
        ("us-central1", "https://us-central1-aiplatform.googleapis.com"),
        ("global", "https://aiplatform.googleapis.com"),
        ("eu", "https://aiplatform.eu.rep.googleapis.com"),
    ],
)
def test_capture_goes_to_the_region_the_path_names(location: str, endpoint: str) -> None:
    path = (
        f"/v1beta1/projects/p/locations/{location}/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    assert upstream_for("vertex", {}).url(path) == endpoint + path


def test_the_engines_token_file_lives_as_long_as_its_session_and_serves_only_it(flow: Flow) -> None:
    """The credentials file a session hands out is google-auth's to read, its token endpoint answers
    only for an open session, and the file is gone once the session ends."""
    with Engine(env(flow.home)) as engine:
        sid, session = engine.open_session([flow.fixtures_dir / "vertex.attest.json"], "strict")
        path = Path(session["GOOGLE_APPLICATION_CREDENTIALS"])
        info = json.loads(path.read_text(encoding="utf-8"))
        credentials, _ = google.auth.load_credentials_from_file(str(path))
        credentials.refresh(Request())
        assert credentials.token == "attest-replay-no-token"
        other = info["token_url"].replace(f"/r/{sid}/", "/r/0000000000000000/")
        assert urlopen_status(other) == 403
        engine.close_session(sid)
        assert not path.exists()


def urlopen_status(url: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=b"grant_type=refresh_token")) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("location", ["attacker.example", "attacker.example#", "US-CENTRAL1", "a%2Fb", "x@y"])
def test_a_location_that_is_not_a_location_name_is_refused_not_made_a_host(location: str) -> None:
    path = (
        f"/v1beta1/projects/p/locations/{location}/publishers/google/models/gemini-2.5-flash:generateContent"
    )

    with pytest.raises(ValueError, match="not a Vertex AI location"):
        upstream_for("vertex", {}).url(path)
