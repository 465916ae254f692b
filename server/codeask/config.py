"""Settings: one typed tree with defaults, merged defaults < user config < project file < editor
< environment.

Every field is documented here (the README's table is generated from these docstrings by
`python -m codeask.config --markdown`). Invalid values never crash the server: the offending
section falls back to its defaults and a warning says why.

A project file is written by whoever wrote the repository, so it must not decide where code and
credentials go: the `PROTECTED` settings are dropped from it (one warning each, naming the file)
unless the user trusts the workspace (`trusted_folders` in the user config, the editor's
`trustWorkspace`, or `CODEASK_TRUST_WORKSPACE=1`). We only ever read the user config.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import os
import re
import sys
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Literal

import msgspec

log = logging.getLogger(__name__)

PROJECT_FILES = (".codeask.toml", "codeask.toml")
#: The user's own settings file, under `$XDG_CONFIG_HOME` (default ~/.config).
USER_CONFIG = Path("codeask") / "config.toml"
#: Environment variable that trusts every workspace of this process (`1`, `true`, `yes`).
TRUST_ENV = "CODEASK_TRUST_WORKSPACE"
#: Editor setting (top level, camelCase `trustWorkspace`): the client says the workspace is trusted.
TRUST_EDITOR_KEY = "trust_workspace"
#: User-config key (top level): folders whose project files may set protected settings.
TRUSTED_FOLDERS_KEY = "trusted_folders"
#: Top-level keys that are not settings sections (never warned about as unknown sections).
TRUST_KEYS = frozenset({TRUST_EDITOR_KEY, TRUSTED_FOLDERS_KEY})
ENV_PREFIX = "CODEASK_"
#: Deepest nesting a settings file may have (the settings tree itself is three deep: section,
#: setting, list); deeper is refused before anything recurses over it.
MAX_SETTINGS_DEPTH = 16
DEFAULT_EMBED_MODEL = "codeask/all-MiniLM-L6-v2-int8"


class IndexSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What gets indexed and where the index lives."""

    location: str = ""
    """Index folder. Empty: `<root>/.codeask`. `cache`: under the user cache dir. Else a path."""
    max_file_bytes: int = 1_048_576
    """Files larger than this are skipped (logged)."""
    exclude: list[str] = msgspec.field(default_factory=list)
    """Extra gitignore-style patterns to skip, on top of .gitignore and .codeaskignore."""
    gitignore: bool = True
    """`false`: .gitignore files and .git/info/exclude are not read (a tree whose .gitignore
    drops everything, e.g. Debian's `/*`); .codeaskignore, `index.exclude` and the default
    excludes still apply."""
    skip_secrets: bool = True
    """Skip files that usually hold secrets (.env*, *.pem, *.key, id_rsa*)."""
    checkpoint_seconds: float = 10.0
    """How often a long index run saves a consistent snapshot to disk; a first pass saves what
    it has after a fifth of this (searchable by other processes), then at 4× the time elapsed,
    during its first quarter."""
    backend: Literal["local", "postgres"] = "local"
    """`postgres`: read the team's published index of the commit nearest HEAD and index only
    the files that differ; vectors are shared through the team database (docs/postgres.md)."""
    dsn_env: str = "CODEASK_PG_DSN"
    """Name of the environment variable holding the PostgreSQL DSN (never the DSN itself)."""
    chunk_workers: int = 4
    """At most this many processes read, chunk and embed (static tier) files while a pass over
    1 MB or more of changed files stores them (never more than the CPU cores, none on a single
    core); 0: all in-process."""


class ChunkSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How files are cut into chunks."""

    max_lines: int = 120
    """A syntax node longer than this is split into overlapping line windows (`part` 1..n)."""
    window_lines: int = 60
    """Window size for files without a grammar and for split nodes."""
    window_overlap: int = 10
    """Lines shared by consecutive windows."""


class EmbedSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The embedding model."""

    provider: Literal["local", "openai", "ollama"] = "local"
    """Who computes the model tier's vectors: `local` (fastembed, in process), `openai` (any
    OpenAI-compatible POST /v1/embeddings: llama.cpp's server, vLLM, a team's GPU box) or
    `ollama` (POST /api/embed). Queries go to the same place (docs/embeddings.md)."""
    endpoint: str = ""
    """Base URL of the `openai`/`ollama` embedding server; empty: `ollama` at
    http://127.0.0.1:11434 (`openai` needs one). Code leaves the machine when it is remote."""
    api_key_env: str = ""
    """Name of the environment variable holding the endpoint's API key (never the key itself)."""
    model: str = DEFAULT_EMBED_MODEL
    """`codeask/all-MiniLM-L6-v2-int8` is packaged (offline); other fastembed models download.
    With `openai`/`ollama`: the model's name as the endpoint knows it (required); it names the
    vectors in the index and the team database, so give different models different names."""
    request_texts: int = 32
    """Texts per request to an `openai`/`ollama` endpoint."""
    request_timeout: float = 60.0
    """Seconds an `openai`/`ollama` endpoint may take to answer one request (connecting: at
    most 5 of them)."""
    max_input_chars: int = 4000
    """Characters of a chunk sent to an `openai`/`ollama` endpoint (the rest is cut); a server
    refuses inputs longer than its batch (llama.cpp: `--ubatch-size`, default 512 tokens)."""
    batch_size: int = 1
    """Chunks per embedding batch. 1 is fastest and leanest on CPU (800 sphinx chunks, 2 cores:
    25 chunks/s at a 390 MB peak vs 16 chunks/s at 1.0 GB with 16; benchmarks/README.md)."""
    threads: int = 0
    """ONNX runtime threads; 0 lets the runtime decide."""
    query_tokens: int = 96
    """Word pieces of a search query the packaged model reads; 0: its limit, 256. A pasted
    report's reproducer and log past the first 96 cost time and did not help (dev R@5 .892 →
    .909; benchmarks/README.md). Other models read their own limit."""
    query_int8: bool = True
    """Encode search queries with an int8 copy of the packaged model, derived once into the
    model cache by a child process (~4 s; needs the `onnx` package, else the model itself
    answers): ~2× faster queries, dev R@5 .909 → .895, MRR .683 → .681."""
    cache_dir: str = ""
    """Models and embedding cache folder. Empty: `$XDG_CACHE_HOME/codeask` (~/.cache/codeask)."""
    tiers: list[Literal["static", "minilm"]] = msgspec.field(
        default_factory=lambda: ["static", "minilm"]
    )
    """Vector tiers to build: `static` (potion-base-8M, every chunk in seconds during the first
    pass) and `minilm` (the `model` above, ~25–55 chunks/s on 2 cores, fills in behind).
    `["static"]` suits a slow laptop; `["minilm"]` is the behaviour before the static tier
    existed."""
    model_full_pass_chunks: int = 90_000
    """A folder with more chunks than this fills its model tier on demand, never in one pass:
    a pasted report's first `model_candidates` candidates are embedded when it is asked
    (cached by content hash) and the files you open or change are embedded as they change.
    90,000 chunks is ~1 hour of the packaged MiniLM at ~25 chunks/s on 2 cores (the whole Linux
    kernel, 1.28M chunks, would take ~21 hours). 0: always on demand."""
    model_candidates: int = 25
    """On demand: how many of a report's first-pass candidates the model tier embeds and ranks.
    A cold report embeds at most this many: 25 kernel chunks took ~3 CPU-s (a cold `codeask
    search` 4.7 CPU-s, 50 candidates 9 CPU-s); C++ reports ranked at or above the first pass
    with 25, 50 and 100 (benchmarks/README.md)."""

    def __post_init__(self) -> None:
        if self.model_full_pass_chunks < 0 or self.model_candidates < 1:
            raise ValueError(
                "embed.model_full_pass_chunks must be 0 or more, embed.model_candidates 1 or more"
            )
        if not self.tiers:
            raise ValueError("embed.tiers must name at least one of 'static', 'minilm'")
        if self.query_tokens < 0:
            raise ValueError("embed.query_tokens must be 0 (the model's limit) or more")
        if self.request_texts < 1 or self.max_input_chars < 1:
            raise ValueError("embed.request_texts and embed.max_input_chars must be 1 or more")
        if not self.request_timeout > 0:
            raise ValueError("embed.request_timeout must be more than 0 seconds")
        self.tiers = list(dict.fromkeys(self.tiers))


class RetrieveSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How search ranks results."""

    k: int = 10
    """Results returned by default."""
    per_file_cap: int = 3
    """At most this many chunks of one file in a result list."""
    demote_tests: bool = True
    """Rank test files lower unless the query is about tests."""
    demote_prose: bool = True
    """Rank docs and plain text lower unless the query is about documentation."""
    dense_weight: float = 1.5
    """Weight of the embedding retriever (MiniLM tier) in rank fusion (1.5: best on the eval)."""
    static_weight: float = 1.0
    """Weight of the static-tier retriever (potion-base-8M) in rank fusion; 0 leaves it out."""
    model_tier_for: Literal["auto", "reports", "all"] = "auto"
    """Which questions the model tier answers: `reports` (pasted issues, tracebacks, logs: dev
    R@5 .838 → .909 with MiniLM) or `all` (typed questions too: on 232 short questions in 12
    languages the packaged MiniLM moved file NDCG@10 .883 → .886 at ~10× the query time and
    +200 MB; benchmarks/README.md). `auto`: with the packaged MiniLM, reports on a folder whose
    code is mostly in a language where it was measured to help (`core/search/model_gate.py`;
    it lowered Java and JavaScript reports), `all` with a model you chose (`embed.model`,
    `embed.provider`; `python -m benchmarks.reports_eval --set embed.model=...` measures it per
    language) or when no static tier can answer (`embed.tiers = ["minilm"]`, a team revision).
    Other questions are ranked by the static tier over every chunk."""
    static_scope: Literal["missing", "all"] = "missing"
    """`missing`: the static tier ranks only chunks without a MiniLM vector yet (it covers the
    gap while MiniLM fills in); `all`: every chunk, fused beside MiniLM (see benchmarks/README)."""
    lexical_weight: float = 1.0
    """Weight of the BM25 retriever in rank fusion."""
    lead_weight: float = 1.0
    """Weight of a second BM25 query made of a pasted report's summary line (an issue's
    title) alone; 0 leaves it out. Typed searches have no separate lead."""
    lead_dense_weight: float = 0.5
    """Weight of a pasted report's summary line in the MiniLM query vector (the vector is
    `text + w × lead`, normalised); 0 embeds the text alone (0.5: dev R@5 .851 → .892,
    benchmarks/README.md)."""
    symbol_weight: float = 1.0
    """Weight of exact symbol-name and path hits in rank fusion."""
    file_weight: float = 1.0
    """Weight of whole-file BM25 (a prior on every chunk of a matching file)."""
    file_name_weight: float = 1.0
    """A typed question's words matching a file's name (`url path mapping` → `urlmap.rb`) lift
    that file's candidates by this share of the best score times the share of words matched;
    0 turns it off. Pasted reports are left out (their words name everything)."""
    definition_weight: float = 3.0
    """A question that is a symbol (`Rack::Response`) lifts the chunks defining it by this share
    of the best score (half for camelCase names inside prose); 0 turns it off."""
    central_weight: float = 0.15
    """A typed question that names no file and no symbol ("how are requests dispatched") lifts
    the candidate file that most other candidate files call into by up to this share of the
    best score (core/search/central.py); 0 turns it off (eval-search dev NDCG@10 .886 → .891,
    architecture questions .839 → .851; benchmarks/README.md)."""
    call_weight: float = 0.3
    """Share of a top candidate's score given to the functions it calls (0 turns it off; 0.3:
    dev R@5 .843 → .857 and MRR .694 → .686 with MiniLM, benchmarks/README.md)."""
    tested_weight: float = 1.0
    """A pasted report's best-matching test files (among the 10 best candidate files) lift the
    module each is named after (`test_cli.py` → `cli.py`) by this share of the test file's best
    score (core/search/steps/tested.py); 0 turns it off (Python reports dev MRR .670 → .679;
    benchmarks/README.md)."""
    phrase_weight: float = 0.5
    """A pasted report's runs of six words found verbatim in one of the 10 best candidate files
    (the error message it quotes, where the source raises it) lift that chunk by up to this
    share of the best score (core/search/steps/phrases.py); 0 turns it off (Python reports dev
    MRR .679 → .714, R@1 .527 → .588; benchmarks/README.md)."""
    sibling_weight: float = 0.05
    """A pasted report that uses one candidate file's name as a word three times or more
    ("Python" → `domains/python.py`) lifts that file above its folder's other candidates by
    this share of the best score (core/search/steps/siblings.py); 0 turns it off (Python
    reports dev R@5 .872 → .885, MRR .722 → .732; benchmarks/README.md)."""
    package_weight: float = 1.0
    """A pasted report whose own sentences name a package by a word few of the project's files
    use, in two lines or more, while none of the package's files is among the 5 best, lifts
    each of its candidate files by this share of the best score
    (core/search/steps/packages.py); 0 turns it off (Python reports dev R@5 .899 → .905, MRR
    .735 → .739; benchmarks/README.md, round 22)."""
    field_weight: float = 0.3
    """A pasted report's reST fields and roles (`:param text:`, `:rtype:`) lift each of the 10
    best candidate files that names them as quoted strings (where the code registers them) by
    up to this share of the best score (core/search/steps/fields.py); 0 turns it off (Python
    reports dev R@5 .885 → .899, MRR .732 → .735; benchmarks/README.md)."""
    frame_weight: float = 0.75
    """A pasted Python traceback's deepest frame in the project (the last one naming a workspace
    file that is not a test or vendored) lifts that frame's function by this share of the best
    score (core/search/steps/frames.py); 0 turns it off (Python reports dev R@5 .858 → .872, MRR
    .652 → .670; benchmarks/README.md)."""


class LLMSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The model that answers questions."""

    # The registry's names (codeask.core.llm.registry), spelled out: config cannot import the
    # engine. tests/test_provider_registry.py holds this list to it. The endpoint and model
    # defaults live in each provider's module only (an empty value here means "the provider's").
    provider: Literal["ollama", "openai"] = "ollama"
    """`ollama` (/api/chat) or `openai` (any OpenAI-compatible /v1/chat/completions)."""
    base_url: str = ""
    """Endpoint base URL; empty: the provider's default (`codeask health` shows it). A
    non-loopback URL gets secrets redacted from the context."""
    model: str = ""
    """Model name as the endpoint knows it; empty: the provider's default (`codeask health`
    shows it)."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key (never the key itself)."""
    temperature: float = 0.1
    """Sampling temperature."""
    max_tokens: int = 1024
    """Longest answer, in tokens."""
    context_tokens: int = 8192
    """The model's context window; the prompt is budgeted to fit it with room for the answer.
    A server that reports a smaller window (llama.cpp's /props, Ollama's /api/show) bounds it."""
    connect_timeout: float = 2.0
    """Seconds to wait for a connection."""
    read_timeout: float = 60.0
    """Seconds to wait for the next streamed piece before giving up."""
    total_timeout: float = 300.0
    """Seconds for a whole answer (first token within read_timeout, then 1024 tokens at ~4/s)."""
    max_answer_chars: int = 65536
    """Longer answers are stopped and marked incomplete (16× the default max_tokens' ~4k chars)."""
    max_line_bytes: int = 1_048_576
    """Longest line the server may send (real delta lines are < 1 KiB); stops endless lines."""
    max_response_bytes: int = 33_554_432
    """Decoded bytes of one response (a 64k-char answer at one char per SSE event is ~16 MiB)."""


class HistorySettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Git history as searchable context."""

    enabled: bool = True
    """Index commits and diff hunks when the workspace is a git repository."""
    max_commits: int = 2000
    """How many commits back from HEAD to index."""
    max_hunk_lines: int = 200
    """Longer diff hunks are cut to this many lines."""


class ServerSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Language-server behaviour."""

    hover: bool = True
    """Show related-code links on hover."""
    code_lens: bool = False
    """Show "N related" code lenses above functions."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Log level for stderr and window/logMessage."""
    debounce_ms: int = 300
    """Quiet time after a save before the file is reindexed."""


class DaemonSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The per-user daemon `codeask search` and `codeask status` ask (docs/daemon.md); read from
    the user config and the environment only (it is the user's process, not a project's)."""

    enabled: bool = True
    """Ask one warm per-user daemon (started on demand) instead of loading the index and the
    models in every process; off: everything runs in-process (`--no-daemon` for one command)."""
    idle_seconds: float = 600.0
    """The daemon exits after this many seconds without a request."""
    hold_seconds: float = 300.0
    """After `codeask index` or a search through the daemon on a folder no session holds, its
    index stays open for writing this long (renewed by each search), with a file watch: an edit
    is indexed without asking, and the next `codeask index` re-checks only what changed (0: the
    index is closed right after a pass, and a search holds nothing)."""

    def __post_init__(self) -> None:
        if not self.idle_seconds > 0:
            raise ValueError("daemon.idle_seconds must be more than 0")
        if not self.hold_seconds >= 0:
            raise ValueError("daemon.hold_seconds must be 0 or more")


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """All settings."""

    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    chunk: ChunkSettings = msgspec.field(default_factory=ChunkSettings)
    embed: EmbedSettings = msgspec.field(default_factory=EmbedSettings)
    retrieve: RetrieveSettings = msgspec.field(default_factory=RetrieveSettings)
    llm: LLMSettings = msgspec.field(default_factory=LLMSettings)
    history: HistorySettings = msgspec.field(default_factory=HistorySettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    daemon: DaemonSettings = msgspec.field(default_factory=DaemonSettings)


SECTIONS: dict[str, type[msgspec.Struct]] = {
    name: type(getattr(Settings(), name)) for name in Settings.__struct_fields__
}

#: Settings a project file may set only in a trusted workspace: they decide where code and
#: credentials go (the LLM endpoint and its key, a model hub download, folders outside the
#: workspace) or lower the protection of secrets. THE one list; checked against the tree below.
PROTECTED_FIELDS = frozenset(
    {
        "llm.provider",
        "llm.base_url",
        "llm.api_key_env",
        "index.skip_secrets",
        "index.gitignore",
        "index.location",
        "index.backend",
        "index.dsn_env",
        "embed.cache_dir",
        "embed.model",
        "embed.provider",
        "embed.endpoint",
        "embed.api_key_env",
    }
)
#: Resource bounds (caps, timeouts, batch and result sizes): a project file may lower them,
#: never raise them past the user's own value (defaults < user config) unless the workspace is
#: trusted. Raised, a newline-free stream took `codeask ask` to 1.5 GB in 6 s and
#: `max_file_bytes = 1e11` read a 170 MB file into 2.5 GB. Every entry is "higher is looser".
BOUNDED_FIELDS = frozenset(
    {
        "index.max_file_bytes",
        "index.chunk_workers",
        "chunk.max_lines",
        "chunk.window_lines",
        "embed.batch_size",
        "embed.request_texts",
        "embed.request_timeout",
        "embed.max_input_chars",
        "embed.model_full_pass_chunks",
        "embed.model_candidates",
        "retrieve.k",
        "llm.max_tokens",
        "llm.context_tokens",
        "llm.connect_timeout",
        "llm.read_timeout",
        "llm.total_timeout",
        "llm.max_answer_chars",
        "llm.max_line_bytes",
        "llm.max_response_bytes",
        "history.max_commits",
        "history.max_hunk_lines",
        "chunk.window_overlap",
    }
)
#: Floors, from any layer: a smaller value is raised to the floor (with a warning). A project
#: file's 1-line chunks cut a 0.9 MB file into 100k chunks (768 MB, a 116 MB index); at the
#: floor, with the overlap bounded at its default of 10, windows advance 10 lines at least.
#: Counts are never negative (the rest of their section is kept, not reset to defaults).
SIZE_FLOORS: dict[str, int] = {
    "chunk.max_lines": 20,
    "chunk.window_lines": 20,
    "embed.threads": 0,
    "index.chunk_workers": 0,
}
#: Thread and process counts, from any layer: more than the CPU cores this process may use
#: is lowered to that (with a warning). A project file's `embed.threads = 100000` stalled
#: `index --full` for 300 s at load 131 on 2 cores.
CORE_COUNTS = ("embed.threads", "index.chunk_workers")
#: Name patterns that protect a secret-handling setting as soon as it is added to the tree
#: (`index.redact_secrets`, a `secrets` section), without anyone remembering to list it.
PROTECTED_PATTERNS = ("secrets.*", "*.*secret*", "*.*redact*")


def _field_names() -> list[str]:
    return [f"{s}.{f}" for s, t in SECTIONS.items() for f in t.__struct_fields__]


def protected_names(names: Collection[str]) -> frozenset[str]:
    """PROTECTED_FIELDS plus every name matching PROTECTED_PATTERNS; fails on a stale name."""
    missing = sorted(PROTECTED_FIELDS - set(names))
    if missing:
        raise RuntimeError(f"PROTECTED_FIELDS names settings that do not exist: {missing}")
    matched = {n for n in names for p in PROTECTED_PATTERNS if fnmatch.fnmatchcase(n, p)}
    return PROTECTED_FIELDS | matched


PROTECTED_NOTE = " *Protected: ignored in a project file unless the workspace is trusted.*"
BOUNDED_NOTE = (
    " *A limit: a project file may lower it, not raise it, unless the workspace is trusted.*"
)
FLOOR_NOTE = " *Never below {floor}: a smaller value is raised to {floor} (a warning says so).*"
CORES_NOTE = (
    " *Never more than the CPU cores: a larger value is lowered to them (a warning says so).*"
)
#: The trust switches (not settings fields: a project file can set none of them), for the table.
TRUST_DOCS = (
    (
        f"{TRUSTED_FOLDERS_KEY} (user config only)",
        "[]",
        "Folders (and everything below them) whose project file may set protected settings."
        " Top-level key of `~/.config/codeask/config.toml`.",
    ),
    (
        "trustWorkspace (editor only)",
        "false",
        "The editor says the workspace is trusted: VS Code sends its workspace trust; in"
        " Neovim set it in your own config.",
    ),
    (
        f"${TRUST_ENV} (environment only)",
        "unset",
        "`1` trusts every workspace of this process (CI, scripts).",
    ),
)
#: Every protected dotted name (computed once, at import: a stale name fails the import).
PROTECTED = protected_names(_field_names())
if stale_bounds := sorted(
    (BOUNDED_FIELDS | SIZE_FLOORS.keys() | set(CORE_COUNTS)) - set(_field_names())
):
    raise RuntimeError(f"bounds name settings that do not exist: {stale_bounds}")
PROTECTED_SECTIONS = frozenset(name.partition(".")[0] for name in PROTECTED)


def snake_case(key: str) -> str:
    """Editors send camelCase keys; our fields are snake_case."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def normalise_keys(value: Any) -> Any:
    """camelCase keys → snake_case at every level, so layers written either way merge by key."""
    if isinstance(value, dict):
        return {snake_case(str(k)): normalise_keys(v) for k, v in value.items()}
    return value


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts merged key by key; `override` wins."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def settle_sizes(layer: dict[str, Any], origin: str = "") -> list[str]:
    """Raise (in place) every size `layer` sets below its floor and lower every thread or
    process count above the CPU cores; a warning for each, naming `origin` when given.
    Non-numbers are left to the section's validation."""
    cores = cpu_cores()
    limits = [(name, floor, True) for name, floor in SIZE_FLOORS.items()]
    limits += [(name, cores, False) for name in CORE_COUNTS]
    warnings = []
    for name, limit, is_floor in limits:
        section, _, field = name.partition(".")
        values = layer.get(section)
        if not isinstance(values, dict):
            continue
        value = values.get(field)
        number = _number(value)
        if not (number < limit if is_floor else number > limit):
            continue  # fine, absent, or not a number
        layer[section] = {**values, field: limit}
        why = f"below its floor of {limit}" if is_floor else f"more than the {limit} CPU cores"
        where = f"{origin}: " if origin else ""
        warnings.append(f"{where}{name} = {value!r} is {why}; {limit} used (see docs/security.md)")
    return warnings


def cache_dir(settings: Settings) -> Path:
    """The user-level cache folder (models, shared embedding cache, relocated indexes)."""
    if settings.embed.cache_dir:
        return Path(settings.embed.cache_dir).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeask"


def read_toml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """A TOML settings file, keys snake_cased; invalid or unreadable: empty, with a warning.
    Nested past MAX_SETTINGS_DEPTH it is refused too: tomllib recursed out of stack on 600
    nested arrays (1.2 KB), and a 900-part `[a.a...]` header parsed but broke every reader."""
    try:
        data: dict[str, Any] | None = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"{path}: ignored, not valid TOML ({exc})"]
    except RecursionError:
        data = None
    if data is None or nesting(data) > MAX_SETTINGS_DEPTH:
        reason = f"nested more than {MAX_SETTINGS_DEPTH} levels deep"
        return {}, [f"{path}: ignored, not valid TOML ({reason})"]
    return normalise_keys(data), []


def nesting(value: object, limit: int = MAX_SETTINGS_DEPTH) -> int:
    """How many dicts and lists `value` has inside each other (a decoded TOML or JSON
    document), counted level by level without recursion; counting stops once past `limit`."""
    depth, level = 0, [value]
    while depth <= limit:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            return depth
        depth += 1
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def project_file(root: Path) -> Path | None:
    """The `[codeask]`-free TOML settings file at the root of a workspace folder, if any."""
    return next((root / n for n in PROJECT_FILES if (root / n).is_file()), None)


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/codeask/config.toml` (~/.config/...): read here, never written."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / USER_CONFIG


def read_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """`CODEASK_LLM__MODEL=x` → {"llm": {"model": "x"}}; values are parsed as TOML scalars."""
    env = os.environ if environ is None else environ
    result: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        section, _, field = name[len(ENV_PREFIX) :].lower().partition("__")
        if section not in SECTIONS:
            continue
        result.setdefault(section, {})[field] = _parse_scalar(raw)
    return result


def _parse_scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw


def build_settings(*layers: dict[str, Any] | None) -> tuple[Settings, list[str]]:
    """Merge layers (lowest first) into Settings; a bad section falls back to its defaults."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged = deep_merge(merged, normalise_keys(layer))
    warnings = settle_sizes(merged)
    sections: dict[str, Any] = {}
    for key in merged:
        if key not in SECTIONS and key not in TRUST_KEYS:
            warnings.append(f"unknown settings section '{key}' ignored")
    for name, section_type in SECTIONS.items():
        raw = merged.get(name, {})
        try:
            sections[name] = msgspec.convert(raw, section_type, strict=False)
        except msgspec.ValidationError as exc:
            warnings.append(f"invalid '{name}' settings ({exc}); using defaults for that section")
            sections[name] = section_type()
    return Settings(**sections), warnings


# ---- user config and workspace trust -------------------------------------------------------
@dataclass
class UserConfig:
    """The user's own settings file: a settings layer plus the folders the user trusts."""

    path: Path
    settings: dict[str, Any] = dataclass_field(default_factory=dict)
    trusted_folders: list[Path] = dataclass_field(default_factory=list)
    warnings: list[str] = dataclass_field(default_factory=list)


def read_user_config(environ: Mapping[str, str] | None = None) -> UserConfig:
    """The user config, if there is one; `trusted_folders` is taken out of the settings layer."""
    config = UserConfig(user_config_path(environ))
    if not config.path.is_file():
        return config
    data, config.warnings = read_toml(config.path)
    folders = data.pop(TRUSTED_FOLDERS_KEY, [])
    data.pop(TRUST_EDITOR_KEY, None)  # the user config trusts by folder, never wholesale
    if isinstance(folders, list) and all(isinstance(f, str) for f in folders):
        config.trusted_folders = [Path(f).expanduser().resolve() for f in folders if f]
    else:
        config.warnings.append(f"{config.path}: {TRUSTED_FOLDERS_KEY} must be a list of paths")
    config.settings = data
    return config


def trust_source(
    root: Path, editor: Mapping[str, Any], user: UserConfig, environ: Mapping[str, str]
) -> str | None:
    """Who trusts `root` (for the log), or None: the environment, the editor, or the user config."""
    if environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes"):
        return f"${TRUST_ENV}"
    if editor.get(TRUST_EDITOR_KEY) is True:
        return "the editor (trustWorkspace)"
    real = root.resolve()
    for folder in user.trusted_folders:
        if real == folder or folder in real.parents:
            return f"{TRUSTED_FOLDERS_KEY} in {user.path}"
    return None


def filter_untrusted(
    project: dict[str, Any], origin: Path, below: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The project layer without protected settings; a warning per key that would have changed
    something (`below`: the merged lower layers, to stay quiet about values that change nothing)."""
    kept = dict(project)
    warnings = [_refused(origin, key) for key in sorted(TRUST_KEYS & kept.keys())]
    for key in TRUST_KEYS:
        kept.pop(key, None)
    for section in sorted(PROTECTED_SECTIONS & kept.keys()):
        values = kept[section]
        if not isinstance(values, dict):
            del kept[section]
            warnings.append(_refused(origin, section))
            continue
        kept[section] = values = dict(values)
        lower = below.get(section, {})
        for name in sorted(PROTECTED):
            sec, _, fld = name.partition(".")
            if sec == section and fld in values:
                value = values.pop(fld)
                if not (isinstance(lower, dict) and lower.get(fld) == value):
                    warnings.append(_refused(origin, name))
    return kept, warnings


def _refused(origin: Path, key: str) -> str:
    return (
        f"{origin} tried to set {key}; ignored: the workspace is not trusted (see docs/security.md)"
    )


def load_settings(
    root: Path | None = None,
    editor: dict[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, list[str]]:
    """Settings for one workspace folder: defaults < user config < project file < editor < env.

    The project file loses its protected settings unless the workspace is trusted.
    """
    env = os.environ if environ is None else environ
    editor = normalise_keys(dict(editor or {}))
    user = read_user_config(env)
    warnings = list(user.warnings)
    project, more = _project_layer(root, editor, user, env) if root else ({}, [])
    settings, built = build_settings(user.settings, project, editor, read_env(dict(env)))
    return settings, warnings + more + built


def _project_layer(
    root: Path, editor: Mapping[str, Any], user: UserConfig, environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """The project file as a layer: whole when trusted, else without its protected settings."""
    path = project_file(root)
    if path is None:
        return {}, []
    project, warnings = read_toml(path)
    source = trust_source(root, editor, user, environ)
    if source is not None:
        log.info("%s: workspace trusted by %s; its project file applies in full", root, source)
        return project, warnings + settle_sizes(project, str(path))
    below = msgspec.to_builtins(build_settings(user.settings)[0])
    kept, refused = filter_untrusted(project, path, below)
    capped = cap_bounds(kept, path, below)
    return kept, warnings + refused + capped + settle_sizes(kept, str(path))


def cap_bounds(project: dict[str, Any], origin: Path, below: dict[str, Any]) -> list[str]:
    """Drop (in place) every bound the untrusted project layer raises above `below` (the merged
    lower layers); a warning for each. NaN, infinity and non-numbers count as raised."""
    warnings = []
    for name in sorted(BOUNDED_FIELDS):
        section, _, field = name.partition(".")
        values = project.get(section)
        if not isinstance(values, dict) or field not in values:
            continue
        ceiling = below[section][field]
        value = values[field]
        if _number(value) <= ceiling:
            continue
        project[section] = {k: v for k, v in values.items() if k != field}
        warnings.append(
            f"{origin} tried to raise {name} to {value!r} (above {ceiling}); ignored: the "
            "workspace is not trusted, and a project file may only lower a limit "
            "(see docs/security.md)"
        )
    return warnings


def _number(value: object) -> float:
    """`value` as a float for comparing with a bound; NaN (never <= anything) when it is none."""
    if isinstance(value, bool):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


def settings_markdown() -> str:
    """The README's configuration table, generated from the field docstrings above."""
    import ast
    import inspect

    source = ast.parse(inspect.getsource(sys.modules[__name__]))
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    defaults = msgspec.to_builtins(Settings())
    for node in source.body:
        if not isinstance(node, ast.ClassDef) or node.name == "Settings":
            continue
        section = next((k for k, v in SECTIONS.items() if v.__name__ == node.name), None)
        if section is None:
            continue
        body = node.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                doc = body[i + 1] if i + 1 < len(body) else None
                text = ""
                if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                    text = " ".join(str(doc.value.value).split())
                name = f"{section}.{stmt.target.id}"
                if name in PROTECTED:
                    text += PROTECTED_NOTE
                if name in BOUNDED_FIELDS:
                    text += BOUNDED_NOTE
                if name in SIZE_FLOORS:
                    text += FLOOR_NOTE.format(floor=SIZE_FLOORS[name])
                if name in CORE_COUNTS:
                    text += CORES_NOTE
                default = defaults[section][stmt.target.id]
                rows.append(f"| `{name}` | `{default!r}` | {text} |")
    rows += [f"| `{key}` | `{default}` | {text} |" for key, default, text in TRUST_DOCS]
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_markdown())
