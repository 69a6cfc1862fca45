"""A real S3-compatible server on loopback for the object-store tests: moto's server, in this process
on a free port, with IAM authentication on, so every request must carry a valid SigV4 signature made
with keys the server issued. One server per test process (xdist workers get one each); one fresh
bucket per test.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
import typer
from attest_toolkit.cli import fixture, report, run, select
from botocore.config import Config
from conftest import clean_env
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

STORE_VARIABLES = (
    "OBJECT_STORE_ADDR",
    "OBJECT_STORE_ACCESS_KEY",
    "OBJECT_STORE_SECRET_KEY",
    "OBJECT_STORE_BUCKET",
    "OBJECT_STORE_SECURE",
)
ALLOW_S3 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}


@dataclass(frozen=True)
class S3:
    addr: str
    access_key: str
    secret_key: str

    @property
    def url(self) -> str:
        return f"http://{self.addr}"

    def client(self) -> Any:
        """boto3, signed with the issued keys: how the tests put and change objects behind attest's back."""
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def variables(self, bucket: str) -> dict[str, str]:
        """The store as ctxmesh configures it."""
        return {
            "OBJECT_STORE_ADDR": self.addr,
            "OBJECT_STORE_ACCESS_KEY": self.access_key,
            "OBJECT_STORE_SECRET_KEY": self.secret_key,
            "OBJECT_STORE_BUCKET": bucket,
        }

    def env(self, bucket: str, **extra: str) -> dict[str, str]:
        """A clean environment with the store, for a command in a child process."""
        return clean_env(**self.variables(bucket), **extra)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log in the tests' output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    try:
        # Authentication is off until reset-auth: issue a user, its policy and its keys first.
        iam = boto3.client(
            "iam", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
        )
        iam.create_user(UserName="ci")
        iam.put_user_policy(UserName="ci", PolicyName="s3", PolicyDocument=json.dumps(ALLOW_S3))
        key = iam.create_access_key(UserName="ci")["AccessKey"]
        requests.post(f"{url}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
        yield S3(f"{host}:{port}", key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        server.stop()


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """attest"""

    for group in (fixture, report, select):
        group.register(app)
    return app


@pytest.fixture
def attest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Callable[..., Done]:
    """`attest ARGS` in this process (a child process costs a second here), in tmp_path, with exactly
    the store variables given."""
    monkeypatch.chdir(tmp_path)

    def run_attest(variables: dict[str, str], *argv: str) -> Done:
        for name in STORE_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = run(_app(), list(argv))
        out = capsys.readouterr()
        return Done(code, out.out, out.err)

    return run_attest


@pytest.fixture
def bucket(s3: S3) -> str:
    name = f"attest-{uuid.uuid4().hex[:16]}"
    s3.client().create_bucket(Bucket=name)
    return name
