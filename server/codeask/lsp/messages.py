"""Typed params and results of codeask's custom messages (docs/protocol.md).

msgspec Structs, so handlers get validated objects (never raw dicts or namedtuples) and a
malformed request fails with msgspec's precise reason, e.g. "Expected `str`, got `int` - at
`$.query`", which the server returns as JSON-RPC InvalidParams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

from codeask.core.source.limits import LimitError, max_chars
from codeask.core.source.names import bad_text

SEMANTIC_SEARCH = "workspace/semanticSearch"
ASK_CODE = "workspace/askCode"
INDEX_STATUS = "codeask/indexStatus"
HEALTH = "codeask/health"
ANSWER_DELTA = "codeask/answerDelta"

CMD_SEARCH = "codeask.search"
CMD_REINDEX = "codeask.reindex"
CMD_CANCEL = "codeask.cancelIndexing"
CMD_RELATED = "codeask.related"

Kind = Literal["function", "method", "class", "module", "section", "window", "commit", "hunk"]
Scope = Literal["code", "history", "all"]
IndexPhase = Literal["empty", "indexing", "ready", "error"]
TeamKind = Literal["base", "off", "unreachable", "unpublished", "unusable"]
K = Annotated[int, msgspec.Meta(ge=1, le=200)]


def _doc(text: str) -> msgspec.Meta:
    """A field's description: it reaches the JSON schema, hence the generated clients and docs."""
    return msgspec.Meta(description=text)


# Strings bounded by their entry in the one limits table, core/source/limits.py (a longer one
# is InvalidParams).
Query = Annotated[str, msgspec.Meta(min_length=1, max_length=max_chars("lsp", "query"))]
Question = Annotated[str, msgspec.Meta(min_length=1, max_length=max_chars("lsp", "question"))]
Uri = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "uri"))]
PathGlob = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "pathGlob"))]
Language = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "language"))]
Author = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "author"))]
Date = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "since"))]
StreamToken = Annotated[str, msgspec.Meta(max_length=max_chars("lsp", "streamToken"))]


class Position(msgspec.Struct):
    """LSP position (0-based)."""

    line: Annotated[int, msgspec.Meta(ge=0)]
    character: Annotated[int, msgspec.Meta(ge=0)]


class Range(msgspec.Struct):
    """LSP range (end exclusive)."""

    start: Position
    end: Position


class SearchFilters(msgspec.Struct, rename="camel", omit_defaults=True):
    """Narrow a search; every field optional (see codeask.core.search.retrieve.Filters)."""

    language: Language | None = None
    path_glob: PathGlob | None = None
    kind: Kind | None = None
    scope: Scope = "code"
    author: Author | None = None
    since: Date | None = None
    until: Date | None = None


class SemanticSearchParams(msgspec.Struct, rename="camel"):
    """`workspace/semanticSearch` and the `codeask.search` command."""

    query: Query
    k: K | None = None
    filters: SearchFilters | None = None


class AskCodeParams(msgspec.Struct, rename="camel"):
    """`workspace/askCode`."""

    question: Question
    uri: Uri | None = None
    range: Range | None = None
    k: K | None = None
    filters: SearchFilters | None = None
    stream_token: StreamToken | int | None = None


class IndexStatusParams(msgspec.Struct):
    """`codeask/indexStatus` takes no params ({}, null, or [] — what Lua encodes `{}` as)."""


class HealthParams(msgspec.Struct):
    """`codeask/health` takes no params ({}, null, or [])."""


#: Requests without params: `null` and `[]` (Lua's empty table) are read as `{}`.
NO_PARAMS: tuple[type[msgspec.Struct], ...] = (IndexStatusParams, HealthParams)

#: Custom request → its params type; the features decode their params with these.
CUSTOM_PARAMS: dict[str, type[msgspec.Struct]] = {
    SEMANTIC_SEARCH: SemanticSearchParams,
    ASK_CODE: AskCodeParams,
    INDEX_STATUS: IndexStatusParams,
    HEALTH: HealthParams,
}


class InvalidParams(ValueError):
    """Params that do not fit the protocol; the message is the reason sent to the client."""


def check_text(value: Any, where: str = "params") -> None:
    """Every string inside decoded JSON `value` is well-formed text (called after the length
    limits): a NUL or an unpaired surrogate breaks tokenizers, tree-sitter and UTF-8 further on."""
    if isinstance(value, str):
        problem = bad_text(value)
        if problem:
            raise LimitError(f"`{where}` {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(item, f"{where}.{key}" if where != "params" else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_text(item, f"{where}[{index}]")


def decode_params(method: str, raw: Any) -> msgspec.Struct:
    """Validate raw JSON params of a custom request; InvalidParams says what is wrong."""
    kind = CUSTOM_PARAMS[method]
    if raw in (None, []) and kind in NO_PARAMS:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams(f"{method}: params must be an object, got {type(raw).__name__}")
    try:
        params = msgspec.convert(raw, kind)
        check_text(raw)  # after the length limits: never walks an oversized string
    except (msgspec.ValidationError, LimitError) as exc:
        raise InvalidParams(f"{method}: {exc}") from None
    return params


# ---- results ---------------------------------------------------------------------------------
class SearchItem(msgspec.Struct, rename="camel", omit_defaults=True):
    """One search result."""

    uri: str
    range: Range
    symbol: str
    kind: str
    score: float
    preview: str
    retrievers: list[str]
    meta: Annotated[
        dict[str, str], _doc("History hits only: sha, author, email, date, subject.")
    ] = msgspec.field(default_factory=dict)


class TeamState(msgspec.Struct, rename="camel", omit_defaults=True):
    """A folder's team side (`index.backend`): the published revision it reads, or why none."""

    backend: Annotated[Literal["local", "postgres"], _doc("`index.backend`.")]
    kind: Annotated[
        TeamKind,
        _doc(
            "`base` when it reads one; else why not: `unreachable` (the database did not "
            "answer: retried), `unpublished` (nothing near HEAD), `unusable`; `off`: local."
        ),
    ] = "off"
    base: Annotated[str, _doc("`repository@sha[:12]` of the revision read; empty without.")] = ""
    behind: Annotated[int, _doc("Commits from that revision to HEAD.")] = 0
    overlay_files: Annotated[
        int, _doc("Files that differ from the base (edited, new, deleted): the local overlay.")
    ] = 0
    reason: Annotated[str, _doc("Why there is no base, one line, no password.")] = ""
    retry_in: Annotated[
        int | None, _doc("Seconds until the unreachable database is tried again.")
    ] = None
    query_error: Annotated[
        str, _doc("Why the last query to the base failed; empty once one succeeded.")
    ] = ""
    cache: Annotated[
        str,
        _doc(
            "The team embedding cache: `connected`, `not tried yet` or `unavailable: ...` "
            "(empty before the model loads)."
        ),
    ] = ""


class FolderState(msgspec.Struct, rename="camel"):
    """One workspace folder's index."""

    root: str
    state: str
    files: int
    chunks: int
    embedded: int
    model: str
    index_dir: str
    message: Annotated[str, _doc("Why the folder is in state `error` (or what it is doing).")] = ""
    updates: Annotated[
        int, _doc("Single-file reindex runs (saves, watcher events) since the server started.")
    ] = 0
    static_embedded: Annotated[
        int, _doc("Chunks with a static-tier vector (servers before the tiers omit it).")
    ] = 0
    tiers: Annotated[list[str], _doc("The vector tiers this folder builds (`embed.tiers`).")] = (
        msgspec.field(default_factory=list)
    )
    team: Annotated[
        TeamState | None, _doc("The team base (absent while loading, and from older servers).")
    ] = None
    ignore_note: Annotated[
        str,
        _doc(
            "Set when the ignore rules leave (nearly) nothing of the folder: which file and"
            " line, and how to override it (`index.gitignore = false`, a `!` line)."
        ),
    ] = ""
    model_tier: Annotated[
        str,
        _doc(
            "What the model tier covers: `full`, or `on demand: N chunks cached, M of opened or"
            " changed files` (a folder past `embed.modelFullPassChunks`); empty without one."
        ),
    ] = ""

    @property
    def dense_done(self) -> int:
        """Chunks done by the slowest configured tier (MiniLM when it is on; on demand it
        covers what it ranks, nothing fills in)."""
        if self.model_tier.startswith("on demand"):
            return self.chunks
        return self.embedded if "minilm" in self.tiers or not self.tiers else self.static_embedded


class IndexState(msgspec.Struct, rename="camel"):
    """What every result carries: is the index usable yet, and how far along."""

    state: Annotated[IndexPhase, _doc("`indexing` while any folder loads or indexes.")]
    warming: Annotated[
        bool,
        _doc(
            "A configured vector tier does not cover every chunk yet, a folder is being "
            "indexed, or the MiniLM query model is loading: `tiersAnswered` says what answers."
        ),
    ]
    percent: Annotated[
        int,
        _doc(
            "While `indexing`: the running job's progress (not a tier's share); else the share "
            "of chunks the slowest configured tier covers."
        ),
    ]
    files: int
    chunks: int
    embedded: Annotated[int, _doc("Chunks done by the slowest configured tier.")]
    folders: list[FolderState]
    tiers_answered: Annotated[
        list[str],
        _doc(
            "The retrievers a search answers with now (in a search result: those that answered "
            "it): `lexical`, then `static` and `minilm` when their vectors take part."
        ),
    ] = msgspec.field(default_factory=list)
    tiers_note: Annotated[
        str,
        _doc(
            "One line: which tiers answered and each configured vector tier's count, e.g. "
            "`answered by lexical + static (static: all 9051 chunks; MiniLM: 1200 of 9051 "
            "chunks (13%), filling in)`; empty when every configured tier is complete and answers."
        ),
    ] = ""


class SemanticSearchResult(msgspec.Struct, rename="camel"):
    """`workspace/semanticSearch` result."""

    results: list[SearchItem]
    index_state: IndexState


class AskSource(msgspec.Struct, rename="camel"):
    """A source an answer cites."""

    uri: str
    range: Range
    symbol: str
    score: float


class AskCodeResult(msgspec.Struct, rename="camel", omit_defaults=True):
    """`workspace/askCode` result; `error` only when the LLM call failed or was stopped."""

    answer: str
    sources: list[AskSource]
    model: str
    prompt_tokens: int
    truncated: bool
    index_state: IndexState
    error: Annotated[
        str | None, _doc("Set when the LLM call failed or was stopped; sources are still there.")
    ] = None
    incomplete: Annotated[
        bool,
        _doc(
            "`answer` is what arrived before `error` stopped it (a cap, a deadline, or the "
            "server's own ending: its token cap or a content filter)."
        ),
    ] = False


class AnswerDelta(msgspec.Struct, rename="camel"):
    """`codeask/answerDelta` notification: more answer text of a streamed askCode."""

    stream_token: Annotated[str | int, _doc("The `streamToken` the askCode request carried.")]
    delta: str


class LlmHealth(msgspec.Struct, rename="camel"):
    """The LLM endpoint as the server's probe found it (the settings askCode uses)."""

    provider: Annotated[str, _doc("`llm.provider`.")]
    endpoint: Annotated[str, _doc("`llm.baseUrl` without credentials (`user:pass@` → `***@`).")]
    models_url: Annotated[str, _doc("The address probed: the provider's model list.")]
    model: Annotated[str, _doc("`llm.model`.")]
    reachable: Annotated[bool, _doc("The model list came back within the probe's 2 s.")]
    model_present: Annotated[bool, _doc("`model` is in that list (false when unreachable).")]
    models: Annotated[int, _doc("How many models the endpoint offers.")]
    loopback: Annotated[bool, _doc("The endpoint is this machine (localhost, 127/8, ::1).")]
    error: Annotated[str, _doc("Why it is unreachable, one line; empty when it answered.")] = ""


class EmbeddingTier(msgspec.Struct, rename="camel"):
    """One vector tier of `embed.tiers`."""

    name: Annotated[str, _doc("`static` or `minilm`.")]
    model: str
    available: Annotated[bool, _doc("The model can be loaded without a download.")]
    detail: str


class EmbeddingHealth(msgspec.Struct, rename="camel"):
    """`embed.model` and the tiers built with it."""

    model: str
    tiers: list[EmbeddingTier]


class TeamHealth(msgspec.Struct, rename="camel"):
    """The team database (`index.backend = "postgres"`), as a read-only probe found it."""

    dsn_env: Annotated[str, _doc("The environment variable holding the DSN (never the DSN).")]
    where: Annotated[str, _doc("`user@host:port/db`, no password; empty without a DSN.")]
    reachable: bool
    schema_version: Annotated[int, _doc("The database's codeask schema (0: never migrated).")]
    schema_known: Annotated[int, _doc("The newest schema this server knows.")]
    model_dim: Annotated[int, _doc("The team's dimension for `embed.model` (0: none yet).")]
    writable: Annotated[bool, _doc("This role may add vectors (publishers need it).")]
    millis: Annotated[int, _doc("How long the probe took.")]
    error: Annotated[str, _doc("Why it is unusable, one line, redacted; empty when fine.")] = ""


class HealthResult(msgspec.Struct, rename="camel", omit_defaults=True):
    """`codeask/health` result: what `:checkhealth` and the status bar show."""

    version: Annotated[str, _doc("codeask's version.")]
    python: Annotated[str, _doc("The server's Python, e.g. `3.11.9 (CPython)`.")]
    llm: LlmHealth
    embedding: EmbeddingHealth
    index_state: Annotated[IndexState, _doc("What `codeask/indexStatus` answers.")]
    team: Annotated[
        TeamHealth | None, _doc('The team database; absent unless `index.backend = "postgres"`.')
    ] = None


@dataclass(frozen=True)
class Message:
    """One custom message; protocol_gen builds the clients' types and the docs from these."""

    method: str
    params: type[msgspec.Struct]
    result: type[msgspec.Struct] | None
    """None for a notification (server → client)."""


#: Every custom message, in the order docs/protocol.md lists them.
MESSAGES: tuple[Message, ...] = (
    Message(SEMANTIC_SEARCH, SemanticSearchParams, SemanticSearchResult),
    Message(ASK_CODE, AskCodeParams, AskCodeResult),
    Message(INDEX_STATUS, IndexStatusParams, IndexState),
    Message(HEALTH, HealthParams, HealthResult),
    Message(ANSWER_DELTA, AnswerDelta, None),
)


def to_json(value: msgspec.Struct | list[Any]) -> Any:
    """Plain JSON builtins with camelCase keys (what pygls sends as a result)."""
    return msgspec.to_builtins(value)
