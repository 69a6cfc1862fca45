"""`attest init --forge gitlab`: the merge-request job, as .gitlab-ci.yml, written once.

Every key the template uses was checked against GitLab's CI schema
(`app/assets/javascripts/editor/schema/ci.json` in gitlab-org/gitlab: `stages`, and in `job_template`
`stage`, `image`, `rules[].if`, `variables` (jobVariables: strings), `before_script`, `script`,
`allow_failure.exit_codes` (an array of unique integers), `artifacts.when`, `artifacts.paths`,
`artifacts.expose_as` and `artifacts.reports.junit` / `codequality` / `dotenv`), and `expose_as`
against GitLab's own check of it (`lib/gitlab/ci/config/entry/artifacts.rb`: letters, digits, `-`,
`_` and spaces, at most 100; paths without `*`). Tests cannot reach the network and that schema
is GitLab's file, not ours to copy, so this test checks on a YAML load the structure the gate depends
on, key by key.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from attest_toolkit import starter
from conftest import run_cli

GITLAB_CI = Path(".gitlab-ci.yml")


def job_of(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    config = yaml.safe_load((root / GITLAB_CI).read_text(encoding="utf-8"))
    return config, config["attest"]


def test_init_writes_the_gitlab_job_and_the_starter_files_not_the_github_workflows(tmp_path: Path) -> None:
    done = run_cli(["init", str(tmp_path), "--forge", "gitlab"])
    assert done.returncode == 0, done.stderr
    assert f"wrote: {GITLAB_CI}" in done.stdout.splitlines()
    assert (tmp_path / ".attest" / "policy.yml").is_file() and (
        tmp_path / "tests" / "test_attest_hello.py"
    ).is_file()
    assert not (tmp_path / ".github").exists()


def test_running_it_again_overwrites_nothing(tmp_path: Path) -> None:
    run_cli(["init", str(tmp_path), "--forge", "gitlab"])
    (tmp_path / GITLAB_CI).write_text("# ours\n", encoding="utf-8")
    done = run_cli(["init", str(tmp_path), "--forge", "gitlab"])
    assert done.returncode == 0, done.stderr
    assert f"exists, left as it is: {GITLAB_CI}" in done.stdout.splitlines()
    assert (tmp_path / GITLAB_CI).read_text(encoding="utf-8") == "# ours\n"


def test_the_job_gates_with_the_network_off_and_publishes_what_gitlab_shows(tmp_path: Path) -> None:
    starter.init(tmp_path, "gitlab")
    config, job = job_of(tmp_path)
    assert job["stage"] in config["stages"]
    assert isinstance(job["image"], str) and job["image"]
    assert all(isinstance(v, str) for v in job["variables"].values())  # GitLab's jobVariables
    variables = job["variables"]
    assert variables["GIT_DEPTH"] == "0"  # selection needs the base commit: no shallow clone
    assert variables["ATTEST_CI_NETWORK"] == "none" and variables["ATTEST_CI_SELECT"] == "true"
    # Merge requests, and the default branch, whose Code Quality report the widget compares with.
    assert [rule["if"] for rule in job["rules"]] == [
        '$CI_PIPELINE_SOURCE == "merge_request_event"',
        "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH",
    ]
    script = job["script"]
    assert all(isinstance(line, str) for line in [*job["before_script"], *script])
    steps = [line.split()[2] for line in script if line.startswith("attest ci ")]
    assert steps == ["select", "run", "policy", "html", "publish", "gate"]
    assert "exec attest ci gate" in "\n".join(script)  # nothing ran: the gate ends the job at once
    reports = job["artifacts"]["reports"]
    assert f"--output {reports['junit']}" in "\n".join(script)
    assert (
        f'attest report codequality --report "$ATTEST_CI_REPORT" --output {reports["codequality"]}' in script
    )
    assert reports["dotenv"] == variables["ATTEST_CI_DOTENV"]
    assert job["artifacts"]["when"] == "always"
    # 0 pass, 1 blocked, 3 error fail the job; 2 (not evaluated) is an allowed failure.
    assert job["allow_failure"] == {"exit_codes": [2]}


def test_the_html_page_is_exposed_in_the_merge_request_by_the_path_gitlab_requires() -> None:
    # expose_as shows nothing for a path with a variable or a leading ./, and refuses a `*`.
    _, job = job_of_template()
    artifacts = job["artifacts"]
    assert re.fullmatch(r"\w[-\w ]*", artifacts["expose_as"]) and len(artifacts["expose_as"]) <= 100
    page = job["variables"]["ATTEST_CI_PAGE"]
    assert page in artifacts["paths"]
    assert not [p for p in artifacts["paths"] if "$" in p or "*" in p or p.startswith("./")]
    assert '"$CI_JOB_URL/artifacts/file/$attest_page"' in "\n".join(job["script"])


def test_the_store_is_pulled_before_the_set_up_which_never_gets_its_keys() -> None:
    _, job = job_of_template()
    setup = job["before_script"]
    [pull] = [i for i, line in enumerate(setup) if "attest ci pull" in line]
    [unset] = [i for i, line in enumerate(setup) if line.startswith("unset ")]
    [requirements] = [i for i, line in enumerate(setup) if "requirements.txt" in line]
    assert pull < unset < requirements
    assert setup[unset].split()[1:3] == ["OBJECT_STORE_ACCESS_KEY", "OBJECT_STORE_SECRET_KEY"]
    assert 'ATTEST_CI_HEAD_REPO="${CI_MERGE_REQUEST_SOURCE_PROJECT_PATH:-}"' in setup[pull]
    assert 'ATTEST_CI_BASE_REPO="${CI_MERGE_REQUEST_PROJECT_PATH:-}"' in setup[pull]
    assert job["variables"]["ATTEST_FIXTURES_STORE"] == ""  # off until the project asks for it


def test_the_template_says_how_the_network_is_kept_off_where_unshare_is_refused() -> None:
    text = starter.read_workflow("gitlab/gitlab-ci.yml")
    assert "unshare" in text and 'cap_add = ["SYS_ADMIN"]' in text and '"guard"' in text


def test_the_package_is_pinned_to_the_release_it_was_written_by(tmp_path: Path) -> None:
    starter.init(tmp_path, "gitlab")
    _, job = job_of(tmp_path)
    assert job["variables"]["ATTEST_TOOLKIT"].endswith(
        f"attest-toolkit/attest-toolkit@{starter.release_ref()}"
    )


def test_an_output_is_read_back_as_written_never_evaluated(tmp_path: Path) -> None:
    _, job = job_of_template()
    define = job["script"][0]
    dotenv = tmp_path / "attest.env"
    dotenv.write_text("ATTEST_REASON=old\nATTEST_REASON=$(touch pwned) `touch pwned` a b\n", encoding="utf-8")
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", f'{define}\nprintf %s "$(attest_out REASON)"'],
        cwd=tmp_path,
        env={"ATTEST_CI_DOTENV": str(dotenv), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "$(touch pwned) `touch pwned` a b"
    assert not (tmp_path / "pwned").exists()


def job_of_template() -> tuple[dict[str, Any], dict[str, Any]]:
    config = yaml.safe_load(starter.read_workflow("gitlab/gitlab-ci.yml"))
    return config, config["attest"]
