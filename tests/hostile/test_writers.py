"""Issue 11 item 1 and issue 12 item 1: exactly one writer per index folder, readers that
create and write nothing, and roots that are the project's own. Real processes throughout.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codeask.core.indexer import RootRefused, check_root
from codeask.core.records import Chunk
from codeask.core.storage.lexical.index import LexicalIndex
from support import PYTHON_M, codeask
from support.writers import (
    TOPICS,
    LspPipe,
    env_for,
    lines_on_disk,
    live_snapshot,
    make_topic_project,
    spawn,
    tree_state,
    wait_until,
    write_topic,
)


@pytest.fixture
def env(tmp_path: Path, seed_models: Callable[[Path], None]) -> dict[str, str]:
    """The CLI's and servers' environment: a private cache holding the run's derived models (a
    process deriving them does so at background priority, slow on a loaded machine)."""
    cache = tmp_path / "xdg"
    cache.mkdir()
    seed_models(cache)
    return env_for(cache)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_topic_project(tmp_path / "proj")


def hold_lock(index_folder: Path, kind: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Another process holding the writer lock (as a `codeask <kind>` would), until killed."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from codeask.core.storage.writer_lock import WriterLock\n"
        f"lock = WriterLock.try_acquire(Path({str(index_folder)!r}), {kind!r})\n"
        "print('locked' if lock else 'busy', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def assert_consistent(index_folder: Path) -> None:
    """Lexical table stamped for CURRENT holds exactly the snapshot's chunk ids; ids unique."""
    manifest, chunks = live_snapshot(index_folder)
    ids = [c.id for c in chunks]
    assert len(ids) == len(set(ids)), "a chunk id is used twice in one snapshot"
    assert not ids or manifest.next_id > max(ids), "next_id went behind an id in use"
    lexical = LexicalIndex.open_snapshot(index_folder / "lexical", manifest.generation, len(chunks))
    if lexical is not None:  # stamped consistent: then its rows must be exactly these ids
        rows = set(lexical.tables.chunks.live_keys())
        lexical.close()
        assert rows == set(ids), "lexical table stamped consistent holds unknown ids"


# ---- two CLI writers ---------------------------------------------------------------------
@pytest.mark.slow
def test_second_index_waits_with_a_clear_message(project: Path, env: dict[str, str]) -> None:
    """The lock is released only once the writer said it waits: it must have waited, however
    slowly it started (a fixed 3 s sleep let a late start take a free lock on a loaded box)."""
    index_folder = project / ".codeask"
    holder = hold_lock(index_folder, "index", env)
    err_log = project.parent / "waiting.stderr"
    with err_log.open("w") as err_file:
        waiting = subprocess.Popen(
            [*PYTHON_M, "index", "--lexical-only", str(project)],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
        )
    try:
        wait_until(lambda: "waiting" in err_log.read_text(), timeout=240)
        assert waiting.poll() is None, "the second writer did not wait"
        assert not (index_folder / "CURRENT").exists(), "the waiting writer wrote anyway"
        holder.send_signal(signal.SIGKILL)  # the kernel releases the lock: no stale lock
        holder.wait(10)
        waiting.wait(240)
    finally:
        holder.kill()
        waiting.kill()
    err = err_log.read_text()
    assert waiting.returncode == 0, err
    assert f"is being written by codeask index (pid {holder.pid}) since" in err
    assert "waiting" in err and "Ctrl-C" in err
    assert_consistent(index_folder)


@pytest.mark.slow
def test_no_wait_fails_fast(project: Path, env: dict[str, str]) -> None:
    holder = hold_lock(project / ".codeask", "index", env)
    try:
        started = time.monotonic()
        result = codeask("index", "--no-wait", "--lexical-only", cwd=project, env=env)
        elapsed = time.monotonic() - started
    finally:
        holder.kill()
    assert result.returncode == 4, result.stderr
    assert "being written by codeask index" in result.stderr and "--no-wait" in result.stderr
    assert elapsed < 60  # a waiting writer would wait for as long as the lock is held: forever
    assert not (project / ".codeask" / "CURRENT").exists()


@pytest.mark.slow
def test_two_index_runs_at_once_stay_consistent(tmp_path: Path, env: dict[str, str]) -> None:
    """Both finish and the lexical table never holds unknown ids, whether the two runs met or
    not: a loaded machine may start the second after the first is done, so this asserts no
    wait (test_second_index_waits_with_a_clear_message holds the lock to prove the wait)."""
    root = tmp_path / "big"
    for n in range(150):
        path = root / "pkg" / f"mod_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def func_{n}_{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
        path.write_text(body)
    runs = [
        spawn(
            "index", "--lexical-only", *(["--rebuild"] if i else []), str(root), cwd=root, env=env
        )
        for i in range(2)
    ]
    results = [(run.wait(300), run.communicate()[1]) for run in runs]
    assert [code for code, _ in results] == [0, 0], results
    assert_consistent(root / ".codeask")
    _, chunks = live_snapshot(root / ".codeask")
    assert len({c.path for c in chunks}) == 150


# ---- readers create nothing, see whole snapshots -------------------------------------------
@pytest.mark.slow
def test_search_and_status_in_a_folder_without_index_create_nothing(
    tmp_path: Path, env: dict[str, str]
) -> None:
    root = make_topic_project(tmp_path / "plain")
    before = tree_state(root)
    found = codeask("search", "bread dough", cwd=root, env=env)
    status = codeask("status", "--json", cwd=root, env=env)
    asked = codeask("ask", "where is bread kneaded?", "--prompt-only", cwd=root, env=env)
    assert found.returncode == 1
    assert found.stderr.strip() == "codeask: no index here yet: run `codeask index` first"
    assert status.returncode == 1, status.stderr  # never indexed: says so (issue 26 item 14)
    assert json.loads(status.stdout)[0]["indexed"] is False
    assert asked.returncode in (0, 1), asked.stderr
    assert tree_state(root) == before, "a reader created or changed files"


@pytest.mark.slow
def test_readers_of_an_existing_index_write_nothing(project: Path, env: dict[str, str]) -> None:
    assert codeask("index", "--lexical-only", cwd=project, env=env).returncode == 0
    before = tree_state(project / ".codeask")
    found = codeask("search", "knead_dough_v0", "--json", "--mode", "lexical", cwd=project, env=env)
    status = codeask("status", cwd=project, env=env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["relative_path"] == "src/bakery.py"
    assert status.returncode == 0
    assert tree_state(project / ".codeask") == before


@pytest.mark.slow
def test_reader_sees_whole_snapshots_while_a_writer_runs(
    project: Path, env: dict[str, str]
) -> None:
    """A reader racing a rewriting writer: every hit is real, never 'no index', never a crash."""
    assert codeask("index", "--lexical-only", cwd=project, env=env).returncode == 0
    rng = random.Random(7)
    writer: subprocess.Popen[str] | None = None
    for round_ in range(12):
        if writer is None or writer.poll() is not None:
            for topic in rng.sample(sorted(TOPICS), 3):
                write_topic(project, topic, round_ + 1)
            args = ["index", "--lexical-only", *(["--rebuild"] if round_ % 2 else [])]
            writer = spawn(*args, cwd=project, env=env)
        found = codeask("search", "helper", "--json", "--mode", "lexical", "-k", "20",
                        cwd=project, env=env)  # fmt: skip
        assert found.returncode == 0, found.stderr
        for hit in json.loads(found.stdout)["results"]:
            assert "helper" in hit["symbol"], hit  # the lexical row belongs to this chunk
    assert writer is not None
    writer.wait(120)
    assert_consistent(project / ".codeask")


# ---- roots -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_upward_search_only_for_an_index_whose_root_contains_cwd(
    tmp_path: Path, env: dict[str, str]
) -> None:
    outer = make_topic_project(tmp_path / "outer")
    assert codeask("index", "--lexical-only", cwd=outer, env=env).returncode == 0
    inner = outer / "src"
    found = codeask("search", "knead_dough_v0", "--mode", "lexical", "--json", cwd=inner, env=env)
    assert found.returncode == 0, found.stderr  # recorded root `outer` contains src/

    stranger = tmp_path / "stranger"
    (stranger / "deep").mkdir(parents=True)
    (outer / ".codeask").rename(stranger / ".codeask")  # an index recording another root
    before = tree_state(stranger)
    lost = codeask("search", "knead_dough_v0", "--mode", "lexical", cwd=stranger / "deep", env=env)
    assert lost.returncode == 1 and "no index here yet" in lost.stderr
    assert tree_state(stranger) == before

    (stranger / ".codeask").rename(outer / ".codeask")
    repo = outer / "nested-repo"
    (repo / ".git").mkdir(parents=True)  # a git root below the index: a different project
    nested = codeask("search", "knead_dough_v0", "--mode", "lexical", cwd=repo, env=env)
    assert nested.returncode == 1 and "no index here yet" in nested.stderr
    assert not (repo / ".codeask").exists()


@pytest.mark.slow
def test_home_and_filesystem_root_are_refused(tmp_path: Path, env: dict[str, str]) -> None:
    home = make_topic_project(tmp_path / "home")
    home_env = dict(env, HOME=str(home))
    refused = codeask("index", "--lexical-only", cwd=home, env=home_env)
    assert refused.returncode == 1
    assert "refusing to index" in refused.stderr and "--allow-broad-root" in refused.stderr
    assert not (home / ".codeask").exists()
    with pytest.raises(RootRefused):
        check_root(Path("/"))  # the real check the CLI and server run; `/` is never indexed here
    allowed = codeask("index", "--lexical-only", "--allow-broad-root", cwd=home, env=home_env)
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.slow
def test_server_refuses_home_as_a_root(tmp_path: Path, env: dict[str, str]) -> None:
    home = make_topic_project(tmp_path / "home")
    server = LspPipe([home], dict(env, HOME=str(home)), tmp_path / "serve.log").start()
    try:
        wait_until(lambda: server.texts("refusing to index"), 30)
        folder = server.status()["folders"][0]
        assert folder["state"] == "error" and "refusing to index" in folder["message"]
    finally:
        server.stop()
    assert not (home / ".codeask").exists()


# ---- a server and the CLI on one folder -------------------------------------------------------
def dense_top(root: Path, env: dict[str, str], query: str) -> dict[str, object]:
    found = codeask("search", query, "--mode", "dense", "--json", "-k", "1", cwd=root, env=env)
    assert found.returncode == 0, found.stderr
    return dict(json.loads(found.stdout)["results"][0])


@pytest.mark.slow
def test_cli_rebuild_under_a_server_is_done_by_the_server(
    tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    """The headline bug: `index --rebuild` while `serve` owns the folder. Now the server does it."""
    server = LspPipe([project], env, tmp_path / "serve.log").start()
    try:
        server.wait_ready()
        generation = live_snapshot(project / ".codeask")[0].generation
        rebuilt = codeask("index", "--rebuild", cwd=project, env=env)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert "owned by codeask serve" in rebuilt.stderr and "rebuild" in rebuilt.stderr
        wait_until(lambda: server.texts("rebuild requested"), 30)
        wait_until(lambda: live_snapshot(project / ".codeask")[0].generation > generation, 60)
        server.wait_ready()
        plain = codeask("index", cwd=project, env=env)
        assert plain.returncode == 0 and "keeps it current" in plain.stderr
        for topic, (_name, doc) in TOPICS.items():
            top = dense_top(project, env, doc)  # a reader of the server's snapshot
            assert top["relative_path"] == f"src/{topic}.py", (doc, top)
            hits = server.search(doc)
            assert hits[0]["uri"].endswith(f"src/{topic}.py"), (doc, hits[0])
        assert_consistent(project / ".codeask")
    finally:
        server.stop()


@pytest.mark.slow
def test_a_second_server_reads_then_takes_over(
    tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    """Two editor windows on one folder: the second answers read-only, writes after the first."""
    assert codeask("index", "--lexical-only", cwd=project, env=env).returncode == 0
    holder = hold_lock(project / ".codeask", "serve", env)
    server = LspPipe([project], env, tmp_path / "serve.log").start()
    try:
        wait_until(lambda: server.texts("read-only"), 30)
        assert server.search("knead_dough_v0")[0]["uri"].endswith("src/bakery.py")
        before = live_snapshot(project / ".codeask")[0].generation
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        wait_until(lambda: server.texts("now the writer"), 30)
        write_topic(project, "bakery", 5)
        server.notify(
            "workspace/didChangeWatchedFiles",
            {"changes": [{"uri": (project / "src" / "bakery.py").as_uri(), "type": 2}]},
        )
        wait_until(lambda: "knead_dough_v5" in json.dumps(server.search("knead_dough_v5")), 60)
        # Searchable in memory first; the snapshot on disk follows at the writer's next save.
        wait_until(lambda: live_snapshot(project / ".codeask")[0].generation > before, 60)
    finally:
        holder.kill()
        server.stop()


# ---- the acceptance run: 50 random SIGKILLs of `codeask index` under a running server -------
@pytest.mark.slow
def test_fifty_sigkills_of_index_under_a_running_server(
    tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    rng = random.Random(int(os.environ.get("CODEASK_KILL_SEED", "11")))
    versions = dict.fromkeys(TOPICS, 0)
    seen: dict[int, tuple[str, str]] = {}
    wrong: list[str] = []
    reused: list[str] = []
    last_generation = 0
    kills = {"running": 0, "already exited": 0}
    # the CLI is the writer first (killed mid-run); the server starts read-only and takes over
    first = spawn("index", "--full", cwd=project, env=env)
    time.sleep(1.5)
    server = LspPipe([project], env, tmp_path / "serve.log").start()
    try:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        server.wait_ready(180)
        # How long a deferring `codeask index` lives, to kill within it: the shortest of three,
        # so a run slowed by a burst of load does not spread the kills past most victims' exit.
        lifetimes = []
        for _ in range(3):
            started = time.monotonic()
            assert codeask("index", cwd=project, env=env).returncode == 0
            lifetimes.append(time.monotonic() - started)
        lifetime = min(lifetimes)
        for round_ in range(50):
            changed = _mutate(project, versions, rng)
            server.notify("workspace/didChangeWatchedFiles", {"changes": changed})
            args = ["index", *(["--rebuild"] if rng.random() < 0.4 else [])]
            victim = spawn(*args, cwd=project, env=env)
            time.sleep(rng.uniform(0.0, 0.9 * lifetime))
            kills["running" if victim.poll() is None else "already exited"] += 1
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            _settled(server, project, versions)
            manifest, chunks = live_snapshot(project / ".codeask")
            assert manifest.generation >= last_generation, "snapshot generation went backwards"
            last_generation = manifest.generation
            reused += _record_ids(seen, chunks)
            wrong += _wrong_hits(server, project, versions, dense_cli=round_ % 5 == 4, env=env)
        assert_consistent(project / ".codeask")
    finally:
        server.stop()
    print(f"kills: {kills}; ids seen: {len(seen)}; generation {last_generation}; "
          f"wrong hits {len(wrong)}; reused ids {len(reused)}")  # fmt: skip
    assert kills["running"] >= 25, kills  # most kills land while `codeask index` runs
    assert wrong == [], wrong
    assert reused == [], reused


def _mutate(project: Path, versions: dict[str, int], rng: random.Random) -> list[dict[str, object]]:
    """Edit one or two topic files (a new revision), as a user between index runs."""
    changes = []
    for topic in rng.sample(sorted(TOPICS), rng.choice((1, 2))):
        versions[topic] += 1
        path = write_topic(project, topic, versions[topic])
        changes.append({"uri": path.as_uri(), "type": 2})
    return changes


def _settled(server: LspPipe, project: Path, versions: dict[str, int]) -> None:
    """Until the server has indexed and embedded every current revision."""

    def current() -> bool:
        if (project / ".codeask" / "requests" / "rebuild").exists():
            return False  # a rebuild request the server has not taken yet
        status = server.status()
        if status["state"] != "ready" or status["warming"]:
            return False
        _, chunks = live_snapshot(project / ".codeask")
        symbols = {c.symbol for c in chunks}
        return all(f"{TOPICS[t][0]}_v{v}" in symbols for t, v in versions.items())

    def twice() -> bool:  # still true a moment later: no pass was just starting
        if not current():
            return False
        time.sleep(0.3)
        return current()

    wait_until(twice, 120, 0.2)


def _record_ids(seen: dict[int, tuple[str, str]], chunks: list[Chunk]) -> list[str]:
    """An id must always name the same (path, text); returns the ids that did not."""
    bad = []
    for chunk in chunks:
        key = (chunk.path, chunk.text)
        old = seen.setdefault(chunk.id, key)
        if old != key:
            bad.append(f"id {chunk.id} was {old[0]} and is now {key[0]}")
    return bad


def _wrong_hits(
    server: LspPipe,
    project: Path,
    versions: dict[str, int],
    *,
    dense_cli: bool,
    env: dict[str, str],
) -> list[str]:
    """Each topic's docstring must find that topic's file, with text that is on disk there."""
    wrong = []
    for topic, (name, doc) in TOPICS.items():
        hit = server.search(doc)[0]
        rel = hit["uri"].split(f"{project.name}/", 1)[1]
        start, end = hit["range"]["start"]["line"] + 1, hit["range"]["end"]["line"] + 1
        on_disk = lines_on_disk(project, rel, start, max(end, start))
        if rel != f"src/{topic}.py" or hit["symbol"] not in on_disk:
            wrong.append(f"server: {doc!r} → {rel}:{start} {hit['symbol']}")
        if dense_cli and topic in ("bakery", "medicine"):  # a CLI run costs ~3 s: two topics
            top = dense_top(project, env, doc)
            if top["relative_path"] != f"src/{topic}.py":
                wrong.append(f"dense CLI: {doc!r} → {top['relative_path']}")
        expected = f"{name}_v{versions[topic]}"
        if not any(expected in h["symbol"] for h in server.search(expected)):
            wrong.append(f"server: current revision {expected} not found")
    return wrong
