"""What a GitLab CI job is about, from its predefined variables, and the token publishing uses.

GitLab's notes API takes no CI_JOB_TOKEN: publishing needs a project or group access token, given as
ATTEST_GITLAB_TOKEN (else GITLAB_TOKEN). A merge request from a fork runs its pipeline in the fork,
without the parent's variables: no token, so no note, and the gate still ends with its verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_VARIABLES = ("ATTEST_GITLAB_TOKEN", "GITLAB_TOKEN")
DOTENV = "attest.env"  # the dotenv report the template declares; ATTEST_CI_DOTENV names another


def on_gitlab(env: Mapping[str, str]) -> bool:
    return env.get("GITLAB_CI") == "true"


def token(env: Mapping[str, str]) -> str:
    return next((env[name] for name in TOKEN_VARIABLES if env.get(name)), "")


@dataclass(frozen=True)
class Pipeline:
    api_url: str  # CI_API_V4_URL
    project_id: str
    merge_request_iid: str  # empty: not a merge request's pipeline
    sha: str
    server_url: str
    project_path: str
    diff_base_sha: str  # the merge request's base, what selection compares with

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Pipeline:
        return cls(
            env.get("CI_API_V4_URL", "").rstrip("/"),
            env.get("CI_PROJECT_ID", ""),
            env.get("CI_MERGE_REQUEST_IID", ""),
            env.get("CI_COMMIT_SHA", ""),
            env.get("CI_SERVER_URL", "").rstrip("/"),
            env.get("CI_PROJECT_PATH", ""),
            env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", ""),
        )

    def note_url(self, note_id: int) -> str:
        return (
            f"{self.server_url}/{self.project_path}/-/merge_requests/{self.merge_request_iid}#note_{note_id}"
        )
