"""Issue 11 item 8: recovery that needs no human. Damaged files cost only themselves, are
named in the log, and a no-change reindex writes nothing. Real `codeask` processes throughout.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from codeask.config import DEFAULT_EMBED_MODEL
from codeask.core.embedding.embed import EmbeddingCache, model_slug
from codeask.core.records import HISTORY_KINDS
from codeask.core.source.walk_cache import RACY_NS
from codeask.core.storage.chunk_map import ChunkDelta
from codeask.core.storage.snapshot import component_path
from support import codeask, gitrepo
from support.writers import (
    TOPICS,
    env_for,
    live_snapshot,
    topic_source,
    tree_state,
)


@pytest.fixture(scope="module")
def warm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One embedding cache for the module: the same texts are embedded once."""
    return env_for(tmp_path_factory.mktemp("recovery-xdg"))


def git_project(root: Path) -> Path:
    """The topic files in a real git repository with two commits (history gets indexed)."""
    repo = gitrepo.make_repo(root)
    files = {f"src/{t}.py": topic_source(t, 0) for t in TOPICS}
    first = dict(list(files.items())[:4])
    gitrepo.commit(repo, first, "Add the first topics", gitrepo.ALICE, gitrepo.EPOCH)
    gitrepo.commit(repo, files, "Add the other topics", gitrepo.BOB, gitrepo.EPOCH + 86_400)
    return root


def flip_middle_byte(path: Path) -> None:
    """Same size, one byte changed; a hard-linked copy in an older snapshot stays intact."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.unlink()
    path.write_bytes(bytes(data))


def index_json(root: Path, env: dict[str, str], *extra: str) -> tuple[dict[str, object], str]:
    result = codeask("-v", "index", "--full", "--json", *extra, cwd=root, env=env)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout)[0]), result.stderr


# ---- the shared embedding cache ----------------------------------------------------------------
@pytest.mark.slow
def test_corrupted_embedding_cache_is_moved_aside_and_rebuilt(
    tmp_path: Path, warm_env: dict[str, str]
) -> None:
    root = git_project(tmp_path / "proj")
    index_json(root, warm_env)  # fills the module's cache; this test damages a copy of it
    xdg = tmp_path / "xdg"
    shutil.copytree(Path(warm_env["XDG_CACHE_HOME"]) / "codeask" / "embeddings",
                    xdg / "codeask" / "embeddings")  # fmt: skip
    env = env_for(xdg)
    # the MiniLM tier's cache (the static tier has its own file beside it)
    cache = xdg / "codeask" / "embeddings" / f"{model_slug(DEFAULT_EMBED_MODEL)}.sqlite"
    with cache.open("r+b") as handle:  # page 1 (schema) stays; the rows' pages are garbage
        handle.seek(4096)
        handle.write(b"\x5a" * (cache.stat().st_size - 4096))
    summary, log = index_json(root, env, "--rebuild")
    assert "embedding cache" in log and str(cache) in log and ".corrupt-" in log
    assert list(cache.parent.glob(f"{cache.name}.corrupt-*")), "the damaged file was not kept"
    assert summary["embedded"] == summary["chunks"]
    again, _ = index_json(root, env, "--rebuild")
    assert again["vectors_computed"] == 0  # the new cache works: everything was reused


def test_embedding_cache_damaged_mid_run_recovers(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = EmbeddingCache(path, 4)
    rows = np.eye(4, dtype=np.float32)
    cache.put_many((f"k{i}", rows[i % 4]) for i in range(2000))
    cache.close()  # checkpointed into the main file
    cache = EmbeddingCache(path, 4)
    size = path.stat().st_size
    with path.open("r+b") as handle:  # another process scribbles over the open file
        handle.seek(4096)
        handle.write(b"\xff" * (size - 4096))
    found = cache.get_many(f"k{i}" for i in range(2000))
    assert found == {} or len(found) < 2000
    cache.put_many([("fresh", rows[0])])
    assert "fresh" in cache.get_many(["fresh"])
    assert list(tmp_path.glob("cache.sqlite.corrupt-*"))
    cache.close()


# ---- snapshot components, one at a time ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("component", ["files", "chunks", "history", "vectors"])
def test_one_damaged_snapshot_file_costs_only_itself(
    tmp_path: Path, warm_env: dict[str, str], component: str
) -> None:
    root = git_project(tmp_path / "proj")
    first, _ = index_json(root, warm_env)
    manifest, _ = live_snapshot(root / ".codeask")
    name = component_path(Path(), component).name
    flip_middle_byte(root / ".codeask" / f"gen-{manifest.generation:06d}" / name)
    shutil.rmtree(root / ".codeask" / "lexical")  # no shortcut: readers use the snapshot

    doc = TOPICS["orbits"][1]
    found = codeask("search", doc, "--json", "--mode", "lexical", cwd=root, env=warm_env)
    if component in ("history", "vectors"):  # the code index is intact: it still answers
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["results"][0]["relative_path"] == "src/orbits.py"
    else:  # the file table is gone: a clear message, not "no index here yet"
        assert found.returncode == 1
        assert "damaged" in found.stderr and name in found.stderr
        assert "no index here yet" not in found.stderr

    summary, log = index_json(root, warm_env)
    expected = {
        "files": "rebuilding the file index",
        "chunks": "rebuilding the file index",
        "history": "kept files and code chunks, history is resynced",
        "vectors": "kept the chunks, they are embedded again",
    }[component]
    assert expected in log, log
    assert summary["vectors_computed"] == 0  # everything comes back from the embedding cache
    assert summary["embedded"] == summary["chunks"] == first["chunks"]
    status = codeask("status", "--json", cwd=root, env=warm_env)
    row = json.loads(status.stdout)[0]
    assert row["history_commits"] == 2 and row["embedded_percent"] == 100.0
    dense = codeask("search", doc, "--json", "--mode", "dense", "-k", "1", cwd=root, env=warm_env)
    assert json.loads(dense.stdout)["results"][0]["relative_path"] == "src/orbits.py"


# ---- a no-change reindex writes nothing ---------------------------------------------------------
@pytest.mark.slow
def test_no_change_reindex_writes_zero_bytes(tmp_path: Path, warm_env: dict[str, str]) -> None:
    """Nothing is rewritten, the walk cache included, once the tree has settled. A folder
    changed within RACY_NS of a walk is not kept by it (git's racy rule), and the first index
    changes the root itself (it creates .codeask there): the walk after that change settles
    may add the root to walk.msgpack, so the no-change reindex measured is the one after it."""
    root = git_project(tmp_path / "proj")
    index_json(root, warm_env)
    time.sleep(RACY_NS / 1e9 + 0.1)  # every folder's last change is outside the next windows
    index_json(root, warm_env)
    folder = root / ".codeask"
    before = {k: v for k, v in tree_state(folder).items() if k != "writer.lock"}
    summary, _ = index_json(root, warm_env)
    after = {k: v for k, v in tree_state(folder).items() if k != "writer.lock"}
    assert summary["files_indexed"] == 0 and summary["files_unchanged"] == len(TOPICS)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == set(), f"a no-change reindex rewrote {sorted(changed)}"


@pytest.mark.slow
def test_one_file_edit_writes_the_chunk_delta_not_the_base(
    tmp_path: Path, warm_env: dict[str, str]
) -> None:
    """Issue 42: `codeask index` after a one-file edit links the chunk base and writes a delta
    of that file's chunks; a fresh `codeask search` finds the edit (base + delta read)."""
    root = git_project(tmp_path / "proj")
    index_json(root, warm_env)
    folder = root / ".codeask"
    before = tree_state(folder)
    (root / "src" / "orbits.py").write_text(topic_source("orbits", 7), encoding="utf-8")
    summary, _ = index_json(root, warm_env)
    assert summary["files_indexed"] == 1
    after = tree_state(folder)
    live = f"gen-{live_snapshot(folder)[0].generation:06d}"
    old = next(k for k in before if k.endswith("/chunks.rec"))
    assert after[f"{live}/chunks.rec"][0] == before[old][0]  # the same inode: not rewritten
    delta = msgspec.msgpack.decode(
        (folder / live / "chunks_delta.msgpack").read_bytes(), type=ChunkDelta
    )
    code = {c.path for c in delta.added if c.kind not in HISTORY_KINDS}
    assert code == {"src/orbits.py"}  # the edited file's chunks (and the uncommitted diff's)
    found = codeask(
        "search", "plan_orbit_v7", "--json", "--mode", "lexical", cwd=root, env=warm_env
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert (hits[0]["relative_path"], hits[0]["symbol"]) == ("src/orbits.py", "plan_orbit_v7")
