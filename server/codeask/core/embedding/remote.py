"""The model tier computed by a server: an OpenAI-compatible POST /v1/embeddings (llama.cpp's
server in embedding mode, vLLM, a team's GPU box) or Ollama's POST /api/embed.

Only the user chooses it: `embed.provider`, `embed.endpoint` and `embed.api_key_env` are
protected settings (config.PROTECTED), so a repository's project file cannot send its reader's
code, or their key, to its own server. Requests are bounded (texts per request, characters per
text, seconds per request, bytes per answer) and never follow a redirect (the key would go
along). The vector size is the first answer's, remembered beside the local cache so the index
can be opened later without asking the server (see `remote_dim`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import httpx
import msgspec
import numpy as np

from codeask.config import DEFAULT_EMBED_MODEL, EmbedSettings
from codeask.core.embedding.base import EmbedError
from codeask.core.embedding.blend import blend_lead
from codeask.core.llm import LLMError, read_body_sync
from codeask.core.llm.urls import is_loopback
from codeask.core.runtime import private_files
from codeask.core.source.redact_outbound import redact_secrets

log = logging.getLogger(__name__)

#: Ollama's own address; `openai` has no default (any of many servers).
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
PATHS = {"openai": "/v1/embeddings", "ollama": "/api/embed"}
#: Seconds to wait for a connection (capped by embed.request_timeout): a dead host fails fast.
CONNECT_TIMEOUT = 5.0
#: Decoded bytes of one answer: 32 texts x 8,192 floats as JSON is ~6 MB; 64 MiB stops a runaway
#: server. Read by the LLM client's bounded reader (core/llm/bounded.py): a compressed answer is
#: inflated piece by piece under this cap, never a whole network read at once.
MAX_ANSWER_BYTES = 64 << 20
#: Widest vector taken from a server: the widest common embedding models answer 3,072-4,096
#: floats; 50,000 would grow a 2.4 MB index to 121 MB (and every search's scan with it).
MAX_DIM = 8192
#: Characters of a server's error message kept in ours.
MAX_ERROR_CHARS = 300
#: The text of the one request that learns the vector size when it is not known yet.
PROBE_TEXT = "def probe(): return 'codeask'"
#: Seconds a search waits for its query vector (capped by embed.request_timeout).
QUERY_TIMEOUT = 10.0
#: After a failed query vector, searches skip the endpoint this long (no wait on a dead host).
QUERY_REST = 30.0
#: What a search gets instead of a query vector when the endpoint cannot answer: a vector of no
#: size matches no stored vector, so the model tier adds nothing and lexical + static rank alone.
NO_VECTOR = np.zeros(0, dtype=np.float32)


class RemoteError(EmbedError):
    """The endpoint cannot give vectors now; the message says where and why, and what to do."""


class RemoteSpec(NamedTuple):
    """Where vectors come from: provider, base URL, the model's name there, the key's variable."""

    provider: str
    endpoint: str
    model: str
    api_key_env: str

    @property
    def identity(self) -> str:
        """Provider, endpoint and model: vectors of two identities never share a local cache."""
        return f"{self.provider}:{self.endpoint}#{self.model}"

    @property
    def url(self) -> str:
        """The full URL requests go to."""
        return self.endpoint + PATHS[self.provider]


def remote_spec(settings: EmbedSettings) -> RemoteSpec:
    """The endpoint of `settings` (provider `openai` or `ollama`); RemoteError when incomplete."""
    provider = settings.provider
    endpoint = settings.endpoint.strip().rstrip("/") or (
        OLLAMA_DEFAULT if provider == "ollama" else ""
    )
    for suffix in ("/v1", "/api"):  # people paste the API prefix too
        if endpoint.endswith(suffix):
            endpoint = endpoint[: -len(suffix)]
    if not endpoint:
        raise RemoteError(
            "embed.provider = 'openai' needs embed.endpoint (the server's base URL, e.g. "
            "http://127.0.0.1:8080) in your own config"
        )
    if not endpoint.startswith(("http://", "https://")):
        raise RemoteError(f"embed.endpoint must be an http:// or https:// URL, not {endpoint!r}")
    if settings.model == DEFAULT_EMBED_MODEL or not settings.model.strip():
        raise RemoteError(
            f"embed.provider = '{provider}' needs embed.model: the model's name as the endpoint "
            "knows it (e.g. nomic-embed-text)"
        )
    return RemoteSpec(provider, endpoint, settings.model.strip(), settings.api_key_env)


def cache_stem(spec: RemoteSpec) -> str:
    """File-name stem of the local cache and dimension record of `spec` (readable + unique)."""
    readable = "".join(c if c.isalnum() or c in "._-" else "_" for c in spec.model)[:60]
    digest = hashlib.sha256(spec.identity.encode()).hexdigest()[:16]
    return f"remote-{spec.provider}-{readable}-{digest}"


class _OpenAIItem(msgspec.Struct):
    embedding: list[float]
    index: int = -1


class _OpenAIAnswer(msgspec.Struct):
    data: list[_OpenAIItem]


class _OllamaAnswer(msgspec.Struct):
    embeddings: list[list[float]]


class RemoteEmbedder:
    """Texts → L2-normalised float32 rows, from the endpoint, `embed.request_texts` at a time."""

    def __init__(self, settings: EmbedSettings, spec: RemoteSpec, dim: int = 0) -> None:
        self.spec = spec
        #: The vectors' name in the index and the team database: the model's name.
        self.name = spec.model
        #: 0 until known (the first answer's size, or the remembered one).
        self.dim = dim
        self.batch = settings.request_texts
        self.max_chars = settings.max_input_chars
        #: Off this machine, literals assigned to secret-looking names are blanked too (known
        #: secret formats were redacted when the file was indexed), as for a remote LLM.
        self.redacts = not is_loopback(spec.endpoint)
        timeout = settings.request_timeout
        self._timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
        quick = min(QUERY_TIMEOUT, timeout)
        self._query_timeout = httpx.Timeout(quick, connect=min(CONNECT_TIMEOUT, quick))
        self._client: httpx.Client | None = None
        self._rest_until = 0.0

    # ---- requests -----------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        name = self.spec.api_key_env
        if not name:
            return {}
        key = os.environ.get(name, "")
        if not key:
            raise RemoteError(
                f"embed.api_key_env names ${name}, which is not set: export it, or empty the "
                "setting for a server without a key"
            )
        return {"authorization": f"Bearer {key}"}

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self._timeout, follow_redirects=False)
        return self._client

    def _body(self, texts: list[str]) -> dict[str, object]:
        if self.spec.provider == "ollama":
            return {"model": self.spec.model, "input": texts, "truncate": True}
        return {"model": self.spec.model, "input": texts, "encoding_format": "float"}

    def _post(self, texts: list[str], timeout: httpx.Timeout) -> bytes:
        where = f"{self.spec.provider} embedding endpoint {self.spec.url}"
        try:
            body_json = self._body(texts)
            request = self._http().build_request(
                "POST", self.spec.url, json=body_json, headers=self._headers(), timeout=timeout
            )
            deadline = time.monotonic() + float(timeout.read or 0)
            response = self._http().send(request, stream=True)
            try:
                body = read_body_sync(response, deadline, MAX_ANSWER_BYTES)
            finally:
                response.close()
        except LLMError as exc:  # the shared bounded reader: too large, undecodable, too slow
            raise RemoteError(
                f"the {self.spec.provider} embedding endpoint: {exc.message}"
            ) from exc
        except httpx.TimeoutException as exc:
            raise RemoteError(
                f"{where} did not answer within {timeout.read:g} s: {type(exc).__name__}"
            ) from exc
        except httpx.HTTPError as exc:
            raise RemoteError(f"cannot reach the {where}: {exc or type(exc).__name__}") from exc
        if response.status_code != 200:
            raise RemoteError(_status_message(where, response.status_code, body))
        return body

    def _vectors(self, texts: list[str], timeout: httpx.Timeout | None = None) -> np.ndarray:
        body = self._post(texts, timeout or self._timeout)
        where = f"the {self.spec.provider} embedding endpoint {self.spec.url}"
        try:
            if self.spec.provider == "ollama":
                rows = msgspec.json.decode(body, type=_OllamaAnswer).embeddings
            else:
                items = msgspec.json.decode(body, type=_OpenAIAnswer).data
                if all(item.index >= 0 for item in items):
                    items = sorted(items, key=lambda item: item.index)
                rows = [item.embedding for item in items]
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise RemoteError(f"{where} sent an answer that is not embeddings: {exc}") from exc
        return self._checked(rows, len(texts), where)

    def _checked(self, rows: list[list[float]], wanted: int, where: str) -> np.ndarray:
        sizes = {len(row) for row in rows}
        if len(rows) != wanted or len(sizes) != 1 or 0 in sizes:
            raise RemoteError(
                f"{where} answered {len(rows)} vectors of sizes {sorted(sizes)} for {wanted} texts"
            )
        size = sizes.pop()
        if size > MAX_DIM:
            raise RemoteError(
                f"{where} answered {size}-dimensional vectors of '{self.spec.model}'; codeask "
                f"takes at most {MAX_DIM:,} (docs/embeddings.md): choose a model with smaller "
                "vectors, or have the server shorten them"
            )
        matrix = np.asarray(rows, dtype=np.float32)
        if not np.isfinite(matrix).all():
            raise RemoteError(f"{where} answered vectors holding NaN or infinity")
        if self.dim and size != self.dim:
            raise RemoteError(
                f"{where} now answers {size}-dimensional vectors of '{self.spec.model}', the "
                f"index holds {self.dim}: another model answers under that name. Give it its "
                "own embed.model name (the index is then rebuilt)"
            )
        if not self.dim:
            self.dim = size
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)

    # ---- the Embedder protocol ------------------------------------------------------------
    def _sendable(self, text: str) -> str:
        """What goes to the server: redacted when it is remote, cut, never empty."""
        if self.redacts:
            text = redact_secrets(text)[0]
        return text[: self.max_chars] or " "

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """One row per text, in order; each text cut to `embed.max_input_chars` (`lanes`:
        the server runs at its own pace)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clipped = [self._sendable(text) for text in texts]
        parts = [
            self._vectors(clipped[start : start + self.batch])
            for start in range(0, len(clipped), self.batch)
        ]
        return np.concatenate(parts)

    def embed_query(self, text: str, lead: str = "", lead_weight: float = 0.0) -> np.ndarray:
        """A search's query vector from the same endpoint (a report's `lead` embedded beside it
        and blended in); `NO_VECTOR` when the endpoint cannot answer: the search goes on with
        lexical + static, one warning says why, and the endpoint rests `QUERY_REST` seconds so
        the next searches do not wait on it either."""
        if time.monotonic() < self._rest_until:
            return NO_VECTOR
        texts = [self._sendable(text)]
        if lead and lead_weight > 0:
            texts.append(self._sendable(lead))
        try:
            rows = self._vectors(texts, self._query_timeout)
        except RemoteError as exc:
            self._rest_until = time.monotonic() + QUERY_REST
            log.warning("search without the model tier (for %g s): %s", QUERY_REST, exc)
            return NO_VECTOR
        return blend_lead(rows[0], rows[1], lead_weight) if len(rows) > 1 else rows[0]

    def probe(self) -> int:
        """The vector size, asking the endpoint once when it is not known yet (within a
        search's timeout: opening an index waits on it)."""
        if not self.dim:
            self._vectors([PROBE_TEXT], self._query_timeout)
        return self.dim

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _status_message(where: str, status: int, body: bytes) -> str:
    """A refusal in one line: the server's own message (escaped, cut) and what to check."""
    said = body.decode("utf-8", errors="replace")
    try:
        error = msgspec.json.decode(body).get("error", said)
        said = str(error.get("message", error) if isinstance(error, dict) else error)
    except (msgspec.DecodeError, AttributeError):
        pass
    said = said.encode("unicode_escape").decode("ascii")[:MAX_ERROR_CHARS]
    hint = {
        401: "check embed.api_key_env and the key it names",
        403: "check embed.api_key_env and the key it names",
        404: "check embed.endpoint and embed.model (does the server offer that model?)",
    }.get(status, "")
    if "too large" in said or "too long" in said or "context" in said:
        hint = "lower embed.max_input_chars, or raise the server's batch (llama.cpp: -ub/-b)"
    return f"{where} answered HTTP {status}: {said}" + (f" ({hint})" if hint else "")


# ---- the remembered vector size -------------------------------------------------------------
class DimRecord(msgspec.Struct):
    """Beside the local cache: the size the endpoint's model answers, and whose it is."""

    identity: str
    dim: int


def read_dim(path: Path, spec: RemoteSpec) -> int:
    """The remembered size (0: none, unreadable, another identity's, or wider than MAX_DIM)."""
    try:
        record = msgspec.json.decode(path.read_bytes(), type=DimRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return 0
    known = record.identity == spec.identity and 0 < record.dim <= MAX_DIM
    return record.dim if known else 0


def write_dim(path: Path, spec: RemoteSpec, dim: int) -> None:
    """Remember the size (atomically: a reader never sees half a record)."""
    private_files.make_dir(path.parent)
    private_files.replace_bytes(path, msgspec.json.encode(DimRecord(spec.identity, dim)))
