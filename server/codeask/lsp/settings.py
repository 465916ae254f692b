"""Editor settings as clients send them: one dict, or a per-folder list; never fatal.

`initializationOptions`, `didChangeConfiguration` and `workspace/configuration` answers all go
through `EditorSettings.parse`. Shape problems become warnings (shown to the user) and the
offending part is ignored; value problems are found later by `codeask.config` per folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from codeask.config import SECTIONS
from codeask.config import deep_merge as merge
from codeask.config import normalise_keys as _snake

SECTION = "codeask"


def _unwrap(raw: Any) -> Any:
    """`{"codeask": {...}}` (VS Code's push shape) → `{...}`; anything else unchanged."""
    if isinstance(raw, dict) and SECTION in raw and not (set(raw) & set(SECTIONS)):
        return raw[SECTION]
    return raw


def _path_of(uri: Any) -> Path | None:
    if not isinstance(uri, str) or not uri:
        return None
    fs = to_fs_path(uri) if "://" in uri else uri
    return Path(fs).resolve() if fs else None


@dataclass
class EditorSettings:
    """Settings from the editor: global, plus per-folder overrides (scopeUri → settings)."""

    global_: dict[str, Any] = field(default_factory=dict)
    scoped: dict[Path, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: Any, origin: str = "settings") -> EditorSettings:
        """A single dict, or a list of `{scopeUri, settings}`; null means no settings."""
        raw = _unwrap(raw)
        parsed = cls()
        if raw is None:
            return parsed
        if isinstance(raw, dict):
            parsed.global_ = _snake(raw)
        elif isinstance(raw, list):
            for index, entry in enumerate(raw):
                parsed._add_entry(index, entry, origin)
        else:
            parsed.warnings.append(
                f"{origin}: expected an object or a list of {{scopeUri, settings}}, "
                f"got {type(raw).__name__}; using defaults"
            )
        return parsed

    def _add_entry(self, index: int, entry: Any, origin: str) -> None:
        settings = _unwrap(entry.get("settings")) if isinstance(entry, dict) else None
        if not isinstance(settings, dict):
            self.warnings.append(
                f"{origin}[{index}]: expected {{scopeUri, settings: {{...}}}}; entry ignored"
            )
            return
        scope = _path_of(entry.get("scopeUri") or entry.get("scope_uri"))
        if scope is None:
            self.global_ = merge(self.global_, _snake(settings))
        else:
            self.scoped[scope] = merge(self.scoped.get(scope, {}), _snake(settings))

    def layered(self, other: EditorSettings) -> EditorSettings:
        """These settings with `other` on top (pulled configuration over init options)."""
        scoped = dict(self.scoped)
        for path, values in other.scoped.items():
            scoped[path] = merge(scoped.get(path, {}), values)
        return EditorSettings(merge(self.global_, other.global_), scoped, [])

    def for_folder(self, root: Path) -> dict[str, Any]:
        """Global settings, then every scope containing `root` (outermost first)."""
        result = dict(self.global_)
        scopes = [p for p in self.scoped if root == p or p in root.parents]
        for scope in sorted(scopes, key=lambda p: len(p.parts)):
            result = merge(result, self.scoped[scope])
        return result
