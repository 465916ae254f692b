"""Say so when ignore rules leave (nearly) nothing of a folder to index.

Debian's kernel source carries a `.gitignore` of `/*` and `!/debian/` (packaging rules): the
walk obeys it, and `codeask index` used to report "0 files … 100% embedded" without a word.
Excluded-by-rules stays silent file by file (that is what the rules are for); but when the
rules drop (nearly) all of the entries at the folder's top, the note names the file, the
line and the way to override it. Only the top folder is listed (one scandir, a few matches), so
`status` can afford it.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from codeask.config import IndexSettings
from codeask.core.source.discover import (
    ALWAYS_IGNORED,
    CODEASKIGNORE,
    DEFAULTS_ORIGIN,
    GITIGNORE,
    IgnoreRules,
)

#: Share of the top folder's entries the rules must drop for the note to appear (see
#: `_nearly_all`).
NEARLY_ALL = 0.9
#: Entries named in the note, as examples.
EXAMPLES = 3


def ignore_note(root: Path, settings: IndexSettings) -> str:
    """'' or one line: how many of `root`'s entries the rules drop, which line dropped the most,
    and how to index them anyway."""
    try:
        with os.scandir(root) as listing:
            entries = [e for e in listing if e.name not in ALWAYS_IGNORED]
    except OSError:
        return ""
    if not entries:
        return ""
    rules = IgnoreRules.for_root(root, settings)
    by_line: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], list[str]] = {}
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        excluder = rules.excluder(entry.name, is_dir)
        if excluder is not None:
            by_line[excluder] += 1
            examples.setdefault(excluder, []).append(entry.name + ("/" if is_dir else ""))
    dropped = sum(by_line.values())
    if not _nearly_all(dropped, len(entries)):
        return ""
    (where, line), count = by_line.most_common(1)[0]
    shown = ", ".join(examples[(where, line)][:EXAMPLES]) + (", …" if count > EXAMPLES else "")
    return (
        f"ignore rules leave out {dropped} of the {len(entries)} entries at the top of {root}: "
        f"`{line}` ({where}) excludes {count} ({shown}); {_override(where, line)}"
    )


def _nearly_all(dropped: int, entries: int) -> bool:
    """Everything, or all but at most a tenth (at least one: Debian's `!/debian/` keeps one
    folder of a small tree) when the rules dropped two or more."""
    kept = entries - dropped
    if dropped == 0:
        return False
    return kept == 0 or (dropped >= 2 and kept <= max(1, int((1 - NEARLY_ALL) * entries)))


def _override(where: str, line: str) -> str:
    """How to index what `line` excludes, for the kind of place it was written in."""
    file = where.rpartition(":")[0]
    name = os.path.basename(file)
    negated = f"!{line}"
    if name == GITIGNORE or file.endswith(os.path.join("info", "exclude")):
        return (
            "to index them anyway set `index.gitignore = false` (user config, trusted "
            "`.codeask.toml` or CODEASK_INDEX__GITIGNORE=false), or add "
            f"`{negated}` to {CODEASKIGNORE}"
        )
    if file == DEFAULTS_ORIGIN:
        return f"to index them anyway add `{negated}` to {CODEASKIGNORE}"
    if name == CODEASKIGNORE:
        return f"to index them anyway remove that line or add `{negated}` below it"
    return f"to index them anyway remove `{line}` from {where} or add `{negated}` after it"
