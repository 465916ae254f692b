"""Overlay lexical merges against one index of the whole edited tree (docs/storage.md).

Usage: PYTHONPATH=server python benchmarks/overlay_merge.py SCRATCH_DIR SOURCE_DIR N_CHANGED
Copies SOURCE_DIR twice, appends a function to N_CHANGED random .py files of one copy, indexes
the untouched copy (base), the changed files alone (overlay) and the edited copy (reference,
static tier only), and prints each merge's top-10 overlap with the reference for 80 queries.
"""

import random
import shutil
import sys
from pathlib import Path

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.records import Chunk
from codeask.core.storage.overlay import OverlayReader

tmp = Path(sys.argv[1])
src = Path(sys.argv[2])
shutil.rmtree(tmp, ignore_errors=True)
settings, _ = build_settings({"history": {"enabled": False}, "embed": {"tiers": ["static"]}})
base_dir = tmp / "base"
shutil.copytree(src, base_dir)
work = tmp / "work"
shutil.copytree(src, work)
files = sorted(p.relative_to(work).as_posix() for p in work.rglob("*.py"))
rng = random.Random(7)
n_changed = int(sys.argv[3])
changed = set(rng.sample(files, n_changed))
for rel in changed:  # an edit: a new function appended
    p = work / rel
    p.write_text(
        p.read_text()
        + f"\n\ndef helper_{abs(hash(rel)) % 1000}(value):\n"
        + '    """Normalise the value before it is stored."""\n    return value\n'
    )
ov_dir = tmp / "ov"
for rel in changed:
    (ov_dir / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work / rel, ov_dir / rel)


def idx(d: Path) -> FolderIndex:
    """`d` indexed with the static tier only (lexical merges need no model)."""
    f = FolderIndex(d, settings)
    f.refresh(embed=False)
    return f


base, ov, ref = idx(base_dir), idx(ov_dir), idx(work)
readers = {
    h: OverlayReader(base.storage, ov.storage, changed, lexical_merge=h)
    for h in ("rank", "score", "rescore")
}
# queries: docstring/first line of random chunks, half from changed files
ref_chunks = [c for c in ref.storage.all_chunks() if c.kind in ("function", "method", "class")]
inchg = [c for c in ref_chunks if c.path in changed]
other = [c for c in ref_chunks if c.path not in changed]
qs = [
    (c.docstring or c.text.splitlines()[0])[:200]
    for c in rng.sample(inchg, min(40, len(inchg))) + rng.sample(other, 40)
]
K = 10


def key(c: Chunk | None) -> tuple[str, int, int]:
    """A chunk by place, not id: the three indexes number the same chunk differently."""
    assert c is not None, "a lexical hit's chunk is missing"
    return (c.path, c.start_line, c.end_line)


for how, r in readers.items():
    ov_ref = ov_got = overlap = 0
    for q in qs:
        truth = [key(ref.storage.chunk(i)) for i, _ in ref.storage.lexical_top_k(q, K)]
        got = [key(r.chunk(i)) for i, _ in r.lexical_top_k(q, K)]
        overlap += len(set(truth) & set(got))
        ov_ref += sum(1 for t in truth if t[0] in changed)
        ov_got += sum(1 for g in got if g[0] in changed)
    print(
        f"{how}: changed={len(changed)} overlap@{K}={overlap / (K * len(qs)):.3f}",
        f"overlay chunks in top{K}: reference {ov_ref}, merged {ov_got}",
    )
