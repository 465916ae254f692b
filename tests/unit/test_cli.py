"""The `codeask` command as a user runs it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import codeask


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "invoice.py").write_text(
        "def render_invoice_pdf(invoice):\n"
        '    """Draw the invoice as a PDF page."""\n'
        '    return b""\n'
    )
    (tmp_path / "README.md").write_text("# Billing\n\nInvoices are rendered as PDF.\n")
    return tmp_path


@pytest.mark.slow
def test_index_search_status_json(project: Path) -> None:
    indexed = codeask("index", "--lexical-only", "--json", str(project), cwd=project)
    assert indexed.returncode == 0, indexed.stderr
    summary = json.loads(indexed.stdout)[0]
    assert summary["files_indexed"] == 2
    found = codeask("search", "render_invoice_pdf", "--mode", "lexical", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout)["results"][0]
    assert first["relative_path"] == "billing/invoice.py"
    assert (first["start_line"], first["symbol"], first["kind"]) == (
        1,
        "render_invoice_pdf",
        "function",
    )
    status = codeask("status", "--json", cwd=project)
    assert json.loads(status.stdout)[0]["files"] == 2


@pytest.mark.slow
def test_human_output_lists_path_line_symbol(project: Path) -> None:
    codeask("index", "--lexical-only", str(project), cwd=project)
    found = codeask("search", "invoice pdf", "--mode", "lexical", cwd=project)
    assert found.returncode == 0
    assert "billing/invoice.py:1-3  function render_invoice_pdf" in found.stdout


@pytest.mark.slow
def test_no_results_exit_1(project: Path) -> None:
    codeask("index", "--lexical-only", str(project), cwd=project)
    missing = codeask("search", "zzqxv", "--mode", "lexical", cwd=project)
    assert missing.returncode == 1
    assert "no results" in missing.stderr


@pytest.mark.slow
def test_no_index_is_one_clear_line(tmp_path: Path) -> None:
    result = codeask("search", "anything", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == "codeask: no index here yet: run `codeask index` first"
    assert "Traceback" not in result.stderr


def test_bad_usage_exit_2(tmp_path: Path) -> None:
    assert codeask("search", cwd=tmp_path).returncode == 2
    assert codeask("frobnicate", cwd=tmp_path).returncode == 2


@pytest.mark.slow
def test_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    result = codeask("index", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 1
    assert "not a folder" in result.stderr


def test_serve_accepts_the_stdio_flag_language_clients_add() -> None:
    from codeask.cli import build_parser

    args = build_parser().parse_args(["serve", "--stdio"])
    assert args.stdio and args.tcp is None


def test_search_and_ask_flags_become_filters_in_one_place() -> None:
    from codeask.cli import build_parser
    from codeask.core.search.retrieve import Filters

    flags = ["--lang", "go", "--path", "src/**", "--history", "--author", "ann", "--until", "2024"]
    args = build_parser().parse_args(["search", "retry", *flags])
    assert Filters.from_options(args) == Filters(
        language="go", path_glob="src/**", scope="history", author="ann", until="2024"
    )
    ask = build_parser().parse_args(["ask", "why?", "--lang", "go", "--path", "src/**"])
    assert Filters.from_options(ask) == Filters(language="go", path_glob="src/**")


@pytest.mark.slow
def test_index_returns_after_the_first_pass_and_full_completes_the_minilm_tier(
    project: Path,
) -> None:
    """The quick start's `codeask index` must not wait minutes for the MiniLM tier (issue 26)."""
    first = codeask("index", str(project), cwd=project)
    assert first.returncode == 0, first.stderr
    assert "`codeask index --full` completes it" in first.stderr
    summary = json.loads(codeask("index", "--json", str(project), cwd=project).stdout)[0]
    assert summary["static_embedded"] == summary["chunks"] > 0
    assert summary["minilm_pending"] == summary["chunks"]
    found = codeask("search", "draw the bill as a document", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["symbol"] == "render_invoice_pdf"
    full = codeask("index", "--full", "--json", str(project), cwd=project)
    assert json.loads(full.stdout)[0]["minilm_pending"] == 0
    again = codeask("index", str(project), cwd=project)
    assert "--full" not in again.stderr  # nothing left to complete: no hint


@pytest.mark.slow
def test_search_and_ask_say_which_tiers_answered(project: Path) -> None:
    """Item 19: after the first pass every chunk has a static vector, so search is dense
    already; `search` (text and --json) and `ask` say lexical + static answered and MiniLM is
    still filling in, never "mostly from lexical"."""
    assert codeask("index", str(project), cwd=project).returncode == 0
    found = codeask("search", "draw the bill as a document", "--json", cwd=project)
    answer = json.loads(found.stdout)
    chunks = answer["vectors"]["static"]["total"]
    assert answer["tiers_answered"] == ["lexical", "static"]
    assert answer["vectors"] == {
        "static": {"done": chunks, "total": chunks},
        "minilm": {"done": 0, "total": chunks},
    }
    assert "static" in answer["results"][0]["retrievers"]
    said = (
        f"answered by lexical + static (static: all {chunks} chunks; "
        f"MiniLM: 0 of {chunks} chunks (0%), filling in)"
    )
    text = codeask("search", "draw the bill as a document", cwd=project)
    assert said in text.stderr
    lexical = codeask("search", "invoice", "--mode", "lexical", cwd=project)
    assert "answered by lexical (static: all" in lexical.stderr
    asked = codeask("ask", "--prompt-only", "how is the invoice drawn?", cwd=project)
    assert asked.returncode == 0, asked.stderr
    assert f"Index not complete: search {said}" in asked.stderr
    assert "mostly" not in asked.stderr + asked.stdout


def first_lexical_hit(repo: Path, name: str, text: str, query: str) -> tuple[object, ...]:
    """Write one file into a fresh git repository, `codeask index` it and return the first
    result of a lexical `codeask search`: (path, symbol, kind, start line, end line)."""
    (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    indexed = codeask("index", "--lexical-only", str(repo), cwd=repo)
    assert indexed.returncode == 0, indexed.stderr
    found = codeask("search", query, "--mode", "lexical", "--json", cwd=repo)
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout)["results"][0]
    return tuple(first[k] for k in ("relative_path", "symbol", "kind", "start_line", "end_line"))


@pytest.mark.slow
def test_search_finds_a_shell_subcommand_by_its_case_arm(tmp_path: Path) -> None:
    """A shell tool's subcommand, one arm of the `case` its entry function dispatches on, is
    a hit of its own named for it."""
    script = (
        "#!/usr/bin/env bash\n"
        "tool() {\n"
        '  case "$1" in\n'
        "    list)\n"
        "      ls_versions\n"
        "      ;;\n"
        "    install)\n"
        "      download_release\n"
        "      unpack_release\n"
        "      ;;\n"
        "  esac\n"
        "}\n"
    )
    hit = first_lexical_hit(tmp_path, "tool.sh", script, "install")
    assert hit == ("tool.sh", "install", "method", 7, 10)


@pytest.mark.slow
def test_search_finds_a_typescript_type_alias_by_its_name(tmp_path: Path) -> None:
    """A TypeScript type alias is a hit of its own, named for the alias, among the module's
    other code."""
    module = (
        "import type { Proc } from './proc';\n"
        "\n"
        "export const version = 3;\n"
        "\n"
        "/** The input a procedure accepts. */\n"
        "export type inferProcedureInput<TProcedure extends Proc> =\n"
        "  TProcedure['_def']['input'];\n"
    )
    hit = first_lexical_hit(tmp_path, "inference.ts", module, "inferProcedureInput")
    assert hit == ("inference.ts", "inferProcedureInput", "class", 5, 7)
