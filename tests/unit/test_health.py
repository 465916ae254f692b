"""codeask.core.checks.health against real loopback endpoints: reachable or not, model there or not,
bounded in time, and never a credential in the report. Plus `codeask health` as a user runs it."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import pytest

from codeask import __version__
from codeask.config import LLMSettings, Settings
from codeask.core.checks.health import check, llm_health, redact_url
from support import codeask
from support.models_endpoint import closed_port, models_endpoint, silent_endpoint


def llm(port: int, provider: str = "openai", model: str = "stand-in", **kw: object) -> LLMSettings:
    base = kw.pop("base_url", f"http://127.0.0.1:{port}")
    return LLMSettings(provider=provider, base_url=base, model=model, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_reachable_endpoint_with_the_model(provider: str) -> None:
    with models_endpoint(["other", "stand-in"]) as seen:
        health = await llm_health(llm(seen.port, provider))
    path = "/v1/models" if provider == "openai" else "/api/tags"
    assert seen.paths == [path]
    assert health.reachable and health.model_present and health.models == 2
    assert health.error == "" and health.loopback
    assert health.endpoint == f"http://127.0.0.1:{seen.port}"
    assert health.models_url == f"http://127.0.0.1:{seen.port}{path}"
    assert (health.provider, health.model) == (provider, "stand-in")


async def test_ollama_serves_a_bare_name_as_latest() -> None:
    with models_endpoint(["qwen2.5-coder:latest"]) as seen:
        health = await llm_health(llm(seen.port, "ollama", model="qwen2.5-coder"))
    assert health.reachable and health.model_present


async def test_reachable_endpoint_without_the_model() -> None:
    with models_endpoint(["llama-3", "mistral"]) as seen:
        health = await llm_health(llm(seen.port, model="stand-in"))
    assert health.reachable and not health.model_present
    assert health.models == 2 and health.error == ""


async def test_closed_port_is_unreachable_at_once() -> None:
    port = closed_port()
    started = time.monotonic()
    health = await llm_health(llm(port), timeout=2.0)
    assert time.monotonic() - started < 2.0
    assert not health.reachable and not health.model_present and health.models == 0
    assert f"cannot connect to http://127.0.0.1:{port}/v1/models" in health.error
    assert "refused" in health.error


async def test_silent_endpoint_is_unreachable_within_the_timeout() -> None:
    """Accepts the connection, never answers: the probe stops at its timeout, not at the
    settings' 60 s read timeout."""
    with silent_endpoint() as port:
        started = time.monotonic()
        health = await llm_health(llm(port, read_timeout=60.0), timeout=1.0)
        elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 2.0, elapsed
    assert not health.reachable and health.error
    assert f"127.0.0.1:{port}" in health.error


async def test_credentials_in_the_url_and_the_api_key_never_reach_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEALTH_TEST_KEY", "sk-live-abcdef123456")
    with models_endpoint(["stand-in"]) as seen:
        base = f"http://alice:s3cr3t-pw@127.0.0.1:{seen.port}/v1"
        up = await llm_health(llm(seen.port, base_url=base, api_key_env="HEALTH_TEST_KEY"))
    port = closed_port()
    down = await llm_health(llm(port, base_url=f"http://alice:s3cr3t-pw@127.0.0.1:{port}"))
    assert up.reachable and up.model_present  # the probe itself used the full URL
    assert seen.auth[0].startswith("Basic ")  # httpx sends the URL's userinfo as Basic auth
    assert up.endpoint == f"http://***@127.0.0.1:{seen.port}/v1"
    assert down.endpoint == f"http://***@127.0.0.1:{port}"
    assert not down.reachable and f"http://***@127.0.0.1:{port}/v1/models" in down.error
    text = json.dumps([dataclasses.asdict(up), dataclasses.asdict(down)])
    for secret in ("alice", "s3cr3t-pw", "sk-live-abcdef123456"):
        assert secret not in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("https://user:pass@api.example.com/v1", "https://***@api.example.com/v1"),
        ("http://token@[::1]:8080", "http://***@[::1]:8080"),
        ("http://127.0.0.1:8080/v1?api_key=abc#x", "http://127.0.0.1:8080/v1?***"),
        ("http://[::1", "***"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_the_whole_report_from_sync_code() -> None:
    with models_endpoint(["stand-in"]) as seen:
        report = check(Settings(llm=llm(seen.port)))
    assert report.version == __version__
    assert report.python.startswith(".".join(map(str, sys.version_info[:2])))
    assert report.llm.reachable and report.llm.model_present
    assert [(t.name, t.available) for t in report.embedding.tiers] == [
        ("static", True),
        ("minilm", True),
    ]
    assert report.folders == ()


@pytest.mark.slow
def test_codeask_health_cli(tmp_path: Path) -> None:
    """Human output with exit 0 when all is well; `--json`; exit 1 with the model missing."""
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    with models_endpoint(["stand-in"]) as seen:
        env = {
            **os.environ,
            "CODEASK_LLM__PROVIDER": "openai",
            "CODEASK_LLM__BASE_URL": f"http://127.0.0.1:{seen.port}",
            "CODEASK_LLM__MODEL": "stand-in",
        }
        human = codeask("health", cwd=tmp_path, env=env)
        as_json = codeask("health", "--json", cwd=tmp_path, env=env)
        env["CODEASK_LLM__MODEL"] = "absent"
        missing = codeask("health", cwd=tmp_path, env=env)
    assert human.returncode == 0, human.stdout + human.stderr
    assert "ok reachable (1 models), 'stand-in' is among them" in human.stdout
    assert "no index yet" in human.stdout
    report = json.loads(as_json.stdout)
    assert report["llm"]["reachable"] and report["llm"]["model_present"]
    assert report["folders"][0]["root"] == str(tmp_path.resolve())
    assert missing.returncode == 1 and "'absent' is not among them" in missing.stdout
    assert not (tmp_path / ".codeask").exists()  # health only reads


async def test_a_one_letter_password_is_redacted_without_mangling_the_message() -> None:
    port = closed_port()
    health = await llm_health(llm(port, base_url=f"http://u:p@127.0.0.1:{port}"))
    assert health.error.startswith(f"cannot connect to http://***@127.0.0.1:{port}/v1/models: ")
    assert "u:p@" not in health.error and "refused" in health.error


def test_a_served_model_tier_names_its_server_not_a_download() -> None:
    """With `embed.provider` openai/ollama the model tier is the server's: health says so
    instead of "not packaged: downloaded on first use" (which a fastembed model would be)."""
    from codeask.config import build_settings
    from codeask.core.checks.health import embedding_health

    served, _ = build_settings(
        {"embed": {"provider": "openai", "endpoint": "http://127.0.0.1:9", "model": "nomic"}}
    )
    tier = next(t for t in embedding_health(served).tiers if t.name == "minilm")
    assert "served by openai at http://127.0.0.1:9" in tier.detail
    fastembed, _ = build_settings({"embed": {"model": "BAAI/bge-small-en-v1.5"}})
    tier = next(t for t in embedding_health(fastembed).tiers if t.name == "minilm")
    assert "downloaded on first use" in tier.detail
