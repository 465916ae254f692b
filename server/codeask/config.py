"""Settings: one typed tree with defaults, merged defaults < project file < editor < environment.

Every field is documented here (the README's table is generated from these docstrings by
`python -m codeask.config --markdown`). Invalid values never crash the server: the offending
section falls back to its defaults and a warning says why.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

import msgspec

PROJECT_FILES = (".codeask.toml", "codeask.toml")
ENV_PREFIX = "CODEASK_"
DEFAULT_EMBED_MODEL = "codeask/all-MiniLM-L6-v2-int8"


class IndexSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What gets indexed and where the index lives."""

    location: str = ""
    """Index folder. Empty: `<root>/.codeask`. `cache`: under the user cache dir. Else a path."""
    max_file_bytes: int = 1_048_576
    """Files larger than this are skipped (logged)."""
    exclude: list[str] = msgspec.field(default_factory=list)
    """Extra gitignore-style patterns to skip, on top of .gitignore and .codeaskignore."""
    skip_secrets: bool = True
    """Skip files that usually hold secrets (.env*, *.pem, *.key, id_rsa*)."""
    checkpoint_seconds: float = 10.0
    """How often a long index run saves a consistent snapshot to disk."""


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

    model: str = DEFAULT_EMBED_MODEL
    """`codeask/all-MiniLM-L6-v2-int8` is packaged (offline); other fastembed models download."""
    batch_size: int = 16
    """Chunks per embedding batch (peak memory grows with it: ~0.9 GB at 16, ~1.1 GB at 32)."""
    threads: int = 0
    """ONNX runtime threads; 0 lets the runtime decide."""
    cache_dir: str = ""
    """Models and embedding cache folder. Empty: `$XDG_CACHE_HOME/codeask` (~/.cache/codeask)."""


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
    """Weight of the embedding retriever in rank fusion (1.5: best measured on the eval)."""
    lexical_weight: float = 1.0
    """Weight of the BM25 retriever in rank fusion."""
    symbol_weight: float = 1.0
    """Weight of exact symbol-name and path hits in rank fusion."""
    file_weight: float = 1.0
    """Weight of whole-file BM25 (a prior on every chunk of a matching file)."""


class LLMSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The model that answers questions."""

    provider: Literal["ollama", "openai"] = "ollama"
    """`ollama` (/api/chat) or `openai` (any OpenAI-compatible /v1/chat/completions)."""
    base_url: str = "http://127.0.0.1:11434"
    """Endpoint base URL. A non-loopback URL gets secrets redacted from the context."""
    model: str = "qwen2.5-coder:7b"
    """Model name as the endpoint knows it."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key (never the key itself)."""
    temperature: float = 0.1
    """Sampling temperature."""
    max_tokens: int = 1024
    """Longest answer, in tokens."""
    context_tokens: int = 8192
    """The model's context window; the prompt is budgeted to fit it with room for the answer."""
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


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """All settings."""

    index: IndexSettings = msgspec.field(default_factory=IndexSettings)
    chunk: ChunkSettings = msgspec.field(default_factory=ChunkSettings)
    embed: EmbedSettings = msgspec.field(default_factory=EmbedSettings)
    retrieve: RetrieveSettings = msgspec.field(default_factory=RetrieveSettings)
    llm: LLMSettings = msgspec.field(default_factory=LLMSettings)
    history: HistorySettings = msgspec.field(default_factory=HistorySettings)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)


SECTIONS: dict[str, type[msgspec.Struct]] = {
    name: type(getattr(Settings(), name)) for name in Settings.__struct_fields__
}


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


def cache_dir(settings: Settings) -> Path:
    """The user-level cache folder (models, shared embedding cache, relocated indexes)."""
    if settings.embed.cache_dir:
        return Path(settings.embed.cache_dir).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeask"


def read_project_file(root: Path) -> tuple[dict[str, Any], list[str]]:
    """The `[codeask]`-free TOML settings file at the root of a workspace folder, if any."""
    for name in PROJECT_FILES:
        path = root / name
        if path.is_file():
            try:
                return tomllib.loads(path.read_text(encoding="utf-8")), []
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                return {}, [f"{path}: ignored, not valid TOML ({exc})"]
    return {}, []


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
    except tomllib.TOMLDecodeError:
        return raw


def build_settings(*layers: dict[str, Any] | None) -> tuple[Settings, list[str]]:
    """Merge layers (lowest first) into Settings; a bad section falls back to its defaults."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged = deep_merge(merged, normalise_keys(layer))
    warnings: list[str] = []
    sections: dict[str, Any] = {}
    for key in merged:
        if key not in SECTIONS:
            warnings.append(f"unknown settings section '{key}' ignored")
    for name, section_type in SECTIONS.items():
        raw = merged.get(name, {})
        try:
            sections[name] = msgspec.convert(raw, section_type, strict=False)
        except msgspec.ValidationError as exc:
            warnings.append(f"invalid '{name}' settings ({exc}); using defaults for that section")
            sections[name] = section_type()
    return Settings(**sections), warnings


def load_settings(
    root: Path | None = None, editor: dict[str, Any] | None = None
) -> tuple[Settings, list[str]]:
    """Settings for one workspace folder: defaults < project file < editor < environment."""
    project, warnings = read_project_file(root) if root else ({}, [])
    settings, more = build_settings(project, editor, read_env())
    return settings, warnings + more


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
                    text = str(doc.value.value)
                default = defaults[section][stmt.target.id]
                rows.append(f"| `{section}.{stmt.target.id}` | `{default!r}` | {text} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_markdown())
