"""A repository's `.codeask.toml` must not choose where the code is embedded.

The attack: a committed project file sets `embed.provider`, `embed.endpoint` (the attacker's
host) and `embed.api_key_env = "AWS_SECRET_ACCESS_KEY"`, so `codeask index --full` would send
every chunk there with `Authorization: Bearer <the AWS secret>`. The real CLI runs against a
recording stand-in server on loopback that answers like an OpenAI-compatible `/v1/embeddings`
(the tests with the real llama.cpp server are in tests/llm/test_embed_remote_real.py): the
stand-in is what makes the attack visible (it records every connection) and the trusted control
(the same file, trusted, does reach it: the fields are real, not silently unknown).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from support import codeask as run_codeask
from support import in_process_env
from support.gitrepo import ALICE, EPOCH, commit, make_repo
from support.loopback import send_json, serving

SECRET = "aws-secret-value-0123456789abcdef"
SOURCE = '''"""Billing."""


def compute_invoice_total(lines):
    """Sum the invoice lines, with tax."""
    return sum(line.amount for line in lines) * 1.2
'''


@dataclass
class StandIn:
    """What the recording stand-in saw."""

    url: str = ""
    connections: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in digest[:8]]


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            state.connections += 1
            super().setup()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append({"path": self.path, "headers": headers, "body": body})
            texts = body.get("input") or []
            data = [{"index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
            send_json(self, {"data": data, "model": body.get("model")})

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn()
    with serving(_handler(state)) as port:
        state.url = f"http://127.0.0.1:{port}"
        yield state


@dataclass
class Repo:
    root: Path
    env: dict[str, str]


@pytest.fixture
def hostile_repo(tmp_path: Path, stand_in: StandIn) -> Repo:
    root = tmp_path / "repo"
    repo = make_repo(root)
    project = (
        "[embed]\n"
        'provider = "openai"\n'
        f'endpoint = "{stand_in.url}"\n'
        'api_key_env = "AWS_SECRET_ACCESS_KEY"\n'
        'model = "attacker-model"\n'
        'tiers = ["static", "minilm"]\n'
    )
    files = {"billing.py": SOURCE, ".codeask.toml": project}
    commit(repo, files, "billing", ALICE, EPOCH)
    env = in_process_env()
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        HF_HUB_OFFLINE="1",
        AWS_SECRET_ACCESS_KEY=SECRET,
        PYTHONUNBUFFERED="1",
    )
    return Repo(root, env)


def codeask(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_codeask(*args, cwd=repo.root, env={**repo.env, **env})


@pytest.mark.slow
def test_untrusted_project_file_cannot_point_embeddings_at_its_server(
    hostile_repo: Repo, stand_in: StandIn
) -> None:
    index = codeask(hostile_repo, "index", "--full", str(hostile_repo.root))
    assert index.returncode == 0, index.stderr
    search = codeask(hostile_repo, "search", "invoice total", "--root", str(hostile_repo.root))
    assert search.returncode == 0, search.stderr
    assert "compute_invoice_total" in search.stdout
    assert stand_in.connections == 0, stand_in.requests
    logged = index.stderr + search.stderr
    for name in ("embed.provider", "embed.endpoint", "embed.api_key_env", "embed.model"):
        assert f"tried to set {name}; ignored" in logged, logged


@pytest.mark.slow
def test_trusted_project_file_may_choose_the_endpoint_via_recording_stand_in(
    hostile_repo: Repo, stand_in: StandIn
) -> None:
    """The control: trusted, the same file reaches the endpoint, key and all (so the attack test
    above fails for the right reason, not because the fields do not exist)."""
    trust = {"CODEASK_TRUST_WORKSPACE": "1"}
    index = codeask(hostile_repo, "index", "--full", str(hostile_repo.root), **trust)
    assert index.returncode == 0, index.stderr
    posts = [r for r in stand_in.requests if r["path"] == "/v1/embeddings"]
    assert posts, stand_in.requests
    assert all(r["body"]["model"] == "attacker-model" for r in posts)
    assert all(r["headers"].get("authorization") == f"Bearer {SECRET}" for r in posts)
    embedded = [text for r in posts for text in r["body"]["input"]]
    assert any("compute_invoice_total" in text for text in embedded)


def test_untrusted_project_file_may_lower_the_request_bounds_not_raise_them(
    tmp_path: Path,
) -> None:
    from codeask.config import EmbedSettings, load_settings

    root = tmp_path / "repo"
    root.mkdir()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    raised = "request_texts = 100000\nrequest_timeout = 1e9\nmax_input_chars = 100000000\n"
    (root / ".codeask.toml").write_text(f"[embed]\n{raised}")
    settings, warnings = load_settings(root, environ=env)
    default = EmbedSettings()
    got = (settings.embed.request_texts, settings.embed.request_timeout)
    assert got == (default.request_texts, default.request_timeout)
    assert settings.embed.max_input_chars == default.max_input_chars
    for name in ("embed.request_texts", "embed.request_timeout", "embed.max_input_chars"):
        assert any(f"tried to raise {name}" in w for w in warnings), warnings
    lowered = "request_texts = 4\nrequest_timeout = 5.0\nmax_input_chars = 500\n"
    (root / ".codeask.toml").write_text(f"[embed]\n{lowered}")
    settings, warnings = load_settings(root, environ=env)
    assert (settings.embed.request_texts, settings.embed.max_input_chars) == (4, 500)
    assert settings.embed.request_timeout == 5.0 and not warnings
