"""Trust, round 2 (issue 26, items 2-5 and 14): what a cloned repository or a bad input still hit.

Each attack runs the real `codeask` CLI in a subprocess on a real folder (and, for the LLM
bounds, against the hostile loopback endpoint of `_hostile_llm.py`): a repository's
`.codeask.toml` raising a resource bound, a query that is not UTF-8, a root that holds the home
folder, bidi overrides and newlines in file names reaching the history previews, and `status`
in a folder that was never indexed.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _hostile_llm import HostileLLM
from test_bad_names import _git
from test_llm_hostile import cli_env

from codeask.config import BOUNDED_FIELDS, LLMSettings, Settings, load_settings
from support import PYTHON_SAFE_M
from support import codeask as run_codeask

#: A default far below every raised value used here (one per bounded setting).
RAISED = {
    "index.max_file_bytes": 100_000_000_000,
    "index.chunk_workers": 10_000,
    "llm.max_line_bytes": 10_000_000_000,
    "llm.max_response_bytes": 10_000_000_000,
    "llm.max_answer_chars": 10_000_000_000,
    "llm.total_timeout": 1e9,
    "llm.read_timeout": 1e9,
    "llm.connect_timeout": 1e9,
    "llm.max_tokens": 10_000_000,
    "llm.context_tokens": 10_000_000,
    "history.max_commits": 10_000_000,
    "history.max_hunk_lines": 10_000_000,
    "chunk.max_lines": 10_000_000,
    "chunk.window_lines": 10_000_000,
    "embed.batch_size": 100_000,
    "retrieve.k": 10_000_000,
    "embed.request_texts": 100_000,
    "embed.request_timeout": 1e9,
    "embed.max_input_chars": 100_000_000,
    "chunk.window_overlap": 10_000_000,
    "embed.model_full_pass_chunks": 10_000_000_000,
    "embed.model_candidates": 10_000_000,
}


def env_for(base: Path, **extra: str) -> dict[str, str]:
    """Private XDG config and cache, the offline model, no inherited CODEASK_ settings."""
    return cli_env(base, {}) | extra


def codeask(
    *args: str | bytes, cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """The real CLI (bytes in and out: some arguments here are not UTF-8)."""
    return run_codeask(
        *args,
        cwd=cwd,
        env=env,
        timeout=timeout,
        text=False,
        launcher=PYTHON_SAFE_M,
    )


def _toml(values: dict[str, object]) -> str:
    sections: dict[str, list[str]] = {}
    for name, value in values.items():
        section, _, field = name.partition(".")
        shown = "nan" if isinstance(value, float) and math.isnan(value) else repr(value)
        shown = "inf" if value == math.inf else shown
        sections.setdefault(section, []).append(f"{field} = {shown}")
    return "".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items())


# ---- 2. a project file may tighten a bound, never loosen it ----------------------------------
def test_the_bounded_list_names_every_raised_setting() -> None:
    assert set(RAISED) == set(BOUNDED_FIELDS)


def test_untrusted_project_file_cannot_raise_any_bound(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text(_toml(RAISED))
    settings, warnings = load_settings(root, environ=env_for(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    defaults, _ = load_settings(plain, environ=env_for(tmp_path))  # the same user, no project file
    assert msgspec_builtins(settings) == msgspec_builtins(defaults)
    assert msgspec_builtins(defaults) == msgspec_builtins(Settings(daemon=defaults.daemon))
    for name in RAISED:
        assert any(name in w and "raise" in w for w in warnings), (name, warnings)


def test_untrusted_project_file_may_tighten_a_bound(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text(
        _toml({"index.max_file_bytes": 4096, "llm.total_timeout": 5.0})
    )
    settings, warnings = load_settings(root, environ=env_for(tmp_path))
    assert settings.index.max_file_bytes == 4096
    assert settings.llm.total_timeout == 5.0
    assert not warnings


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_and_infinity_are_not_tighter(tmp_path: Path, value: float) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text(_toml({"llm.total_timeout": value}))
    settings, warnings = load_settings(root, environ=env_for(tmp_path))
    assert settings.llm.total_timeout == LLMSettings().total_timeout
    assert any("llm.total_timeout" in w for w in warnings), warnings


def test_the_users_own_config_sets_the_ceiling(tmp_path: Path) -> None:
    """A user who raised a bound lets a project use up to that value, not past it."""
    (tmp_path / "config" / "codeask").mkdir(parents=True)
    (tmp_path / "config" / "codeask" / "config.toml").write_text(
        "[index]\nmax_file_bytes = 8000000\n"
    )
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text("[index]\nmax_file_bytes = 4000000\n")
    settings, _ = load_settings(root, environ=env_for(tmp_path))
    assert settings.index.max_file_bytes == 4_000_000
    (root / ".codeask.toml").write_text("[index]\nmax_file_bytes = 9000000\n")
    settings, warnings = load_settings(root, environ=env_for(tmp_path))
    assert settings.index.max_file_bytes == 8_000_000 and warnings


def test_a_trusted_workspace_may_raise_a_bound(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text("[index]\nmax_file_bytes = 9000000\n")
    env = env_for(tmp_path, CODEASK_TRUST_WORKSPACE="1")
    settings, _ = load_settings(root, environ=env)
    assert settings.index.max_file_bytes == 9_000_000


def msgspec_builtins(settings: Settings) -> object:
    import msgspec

    return msgspec.to_builtins(settings)


@pytest.mark.slow
def test_index_skips_a_huge_file_although_the_project_file_raises_the_cap(tmp_path: Path) -> None:
    """`max_file_bytes = 1e11` read a 170 MB file into 2.5 GB; here a 3 MB file stays out."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "small.py").write_text("def small_helper():\n    return 1\n")
    (root / "huge.txt").write_text(("zanzibar_marker " * 64 + "\n") * 3000)  # ~3 MB
    (root / ".codeask.toml").write_text("[index]\nmax_file_bytes = 1e11\n")
    env = env_for(tmp_path)
    run = codeask("-v", "index", "--lexical-only", str(root), cwd=root, env=env)
    assert run.returncode == 0, run.stderr.decode()
    assert b"index.max_file_bytes" in run.stderr and b"not trusted" in run.stderr
    found = codeask("search", "zanzibar_marker", "--mode", "lexical", cwd=root, env=env)
    assert found.returncode == 1 and b"huge.txt" not in found.stdout


@pytest.fixture(scope="module")
def llm() -> Iterator[HostileLLM]:
    server = HostileLLM().start()
    yield server
    server.stop()


@pytest.mark.slow
def test_ask_stops_a_newline_free_flood_although_the_project_file_raises_the_caps(
    tmp_path: Path, llm: HostileLLM
) -> None:
    """Raised, a newline-free stream took `codeask ask` to 1.5 GB in 6 s."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n')
    raised = {k: v for k, v in RAISED.items() if k.startswith("llm.")}
    (root / ".codeask.toml").write_text(_toml(raised))
    env = env_for(tmp_path)
    assert codeask("index", "--lexical-only", str(root), cwd=root, env=env).returncode == 0
    env.update(
        CODEASK_LLM__PROVIDER="openai",
        CODEASK_LLM__BASE_URL=llm.url("flood"),
        CODEASK_LLM__MODEL="tiny",
    )
    run = codeask("ask", "what does add do?", cwd=root, env=env, timeout=90)
    stderr = run.stderr.decode()
    assert run.returncode == 3, stderr[-2000:]
    assert stderr.strip().splitlines()[-1].endswith("(llm.max_line_bytes)"), stderr[-2000:]
    assert "llm.max_line_bytes" in stderr and "not trusted" in stderr


# ---- 3. a query that is not UTF-8 ------------------------------------------------------------
@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n')
    env = env_for(tmp_path)
    run = codeask("index", "--full", str(root), cwd=root, env=env, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    return root, env


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["hybrid", "lexical", "dense"])
def test_a_query_that_is_not_utf8_is_searched_with_replacement(
    indexed: tuple[Path, dict[str, str]], mode: str
) -> None:
    root, env = indexed
    run = codeask("search", b"add \xff numbers", "--mode", mode, "--json", cwd=root, env=env)
    assert run.returncode == 0, run.stderr.decode()
    payload = json.loads(run.stdout)
    assert payload["query"] == "add \ufffd numbers"
    assert payload["results"][0]["symbol"] == "add"


@pytest.mark.slow
def test_a_question_that_is_not_utf8_builds_a_prompt(indexed: tuple[Path, dict[str, str]]) -> None:
    root, env = indexed
    run = codeask("ask", "--prompt-only", b"what does add \xff do?", cwd=root, env=env)
    assert run.returncode == 0, run.stderr.decode()
    assert "what does add \ufffd do?" in run.stdout.decode()


# ---- 4. a root that holds the home folder ----------------------------------------------------
@pytest.mark.slow
def test_a_parent_of_home_is_refused_as_a_root(tmp_path: Path) -> None:
    parent = tmp_path / "x" / "home"
    home = parent / "u"
    home.mkdir(parents=True)
    (parent / "other.py").write_text("def other():\n    return 1\n")
    env = env_for(tmp_path, HOME=str(home))
    run = codeask("index", "--lexical-only", str(parent), cwd=tmp_path, env=env)
    assert run.returncode == 1
    assert b"refusing to index" in run.stderr and b"home folder" in run.stderr
    assert not (parent / ".codeask").exists()
    allowed = codeask(
        "index", "--lexical-only", "--allow-broad-root", str(parent), cwd=tmp_path, env=env
    )
    assert allowed.returncode == 0, allowed.stderr.decode()


@pytest.mark.slow
def test_a_sibling_of_home_is_still_indexed(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    project = tmp_path / "home" / "work"
    project.mkdir()
    (project / "a.py").write_text("def a():\n    return 1\n")
    env = env_for(tmp_path, HOME=str(home))
    run = codeask("index", "--lexical-only", str(project), cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr.decode()


# ---- 5. bidi overrides and newlines from file names in history previews ----------------------
@pytest.mark.slow
def test_history_previews_escape_bidi_overrides_and_newlines(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "evil\u202etxt.py").write_text("def tricky_evil():\n    return 1\n")
    (root / "new\nname.py").write_text("def tricky_newline():\n    return 2\n")
    (root / "code.py").write_text("def trojan():\n    return 'a\u202eb'  # tricky\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "add tricky files \u202e reversed")
    env = env_for(tmp_path)
    assert codeask("index", "--lexical-only", str(root), cwd=root, env=env).returncode == 0
    for scope in (["--history"], ["--scope", "all"]):
        run = codeask(
            "search", "tricky", *scope, "--mode", "lexical", "-k", "20", cwd=root, env=env
        )
        assert run.returncode == 0, run.stderr.decode()
        out = run.stdout.decode()
        assert "\u202e" not in out, out
        assert "evil\\u202etxt.py (new file)" in out, out
        assert "new\\nname.py (new file)" in out, out
        for line in out.splitlines():  # every line a hit header or an indented preview
            assert line.startswith("    ") or ":" in line.split()[0], out


# ---- 14. status of a folder never indexed ----------------------------------------------------
@pytest.mark.slow
def test_status_of_a_folder_never_indexed_says_so(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    env = env_for(tmp_path)
    run = codeask("status", "--root", str(root), cwd=root, env=env)
    assert run.returncode == 1, run.stdout.decode()
    text = run.stdout.decode() + run.stderr.decode()
    assert "not indexed yet" in text and "codeask index" in text
    assert "100.0%" not in text
    assert not (root / ".codeask").exists()
    as_json = codeask("status", "--json", "--root", str(root), cwd=root, env=env)
    assert as_json.returncode == 1
    row = json.loads(as_json.stdout)[0]
    assert row["indexed"] is False and row["embedded_percent"] == 0.0


def test_ask_source_lines_escape_bidi_overrides_in_subjects_and_headings(tmp_path: Path) -> None:
    """`codeask ask` prints its sources as `path:line symbol` / `commit <sha> <subject>`."""
    from codeask.cli.ask import source_line
    from codeask.core.records import Chunk
    from codeask.core.search.retrieve import Hit

    commit = Chunk(
        path="a.py", language="git", kind="commit", start_line=1, end_line=1,
        text="x", symbol="0123456789", meta={"subject": "fix \u202eevil\nforged"},
    )  # fmt: skip
    heading = Chunk(
        path="README.md", language="markdown", kind="section", start_line=3, end_line=9,
        text="y", symbol="Intro \u202e reversed",
    )  # fmt: skip
    for chunk in (commit, heading):
        line = source_line(Hit(chunk=chunk, score=1.0, root=tmp_path))
        assert "\u202e" not in line and "\n" not in line and "\\u202e" in line, line
