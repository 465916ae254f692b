"""core/source/languages.py is the one list of languages: each consumer that recognises a language
by its file suffix derives that from `LANGUAGES`, so a language added there is known everywhere.

- query.py's path detection (`query_signals`): a bare file name mentioned in a question counts
  as a path when its suffix is code; before, 9 hard-coded suffixes for 17 languages (a
  mentioned `Widget.kt` or `app.cs` was not a path).
- The language server's untitled buffers (`lsp/features/common.untitled_name`): the chunker
  picks the grammar from the file name, so a buffer of any chunked language must get one of its
  suffixes; before, 5 languages had one (a Go or C# buffer happened to work by its name, a
  Kotlin, Bash or TSX one was chunked as plain text).
"""

from __future__ import annotations

import pytest

from codeask.config import ChunkSettings
from codeask.core.search.query import file_mentions, query_signals
from codeask.core.source.chunk import chunk_file
from codeask.core.source.languages import LANGUAGES, LanguageSpec, language_for_path, language_name
from codeask.lsp.features.common import untitled_name

#: What VS Code calls the languages whose LSP `languageId` is not our name.
EDITOR_IDS = {"typescriptreact": "tsx", "javascriptreact": "javascript", "shellscript": "bash"}


def mentionable(spec: LanguageSpec) -> list[str]:
    """The language's suffixes a question can mention whole (`.gemspec` is longer than a file
    mention's 5 characters; `.c++` stops at the `+`)."""
    return [
        ext for ext in spec.extensions if file_mentions(f"see widget{ext} now") == [f"widget{ext}"]
    ]


@pytest.mark.parametrize("spec", LANGUAGES, ids=lambda s: s.name)
def test_every_chunked_language_is_code_to_the_query_path_detection(spec: LanguageSpec) -> None:
    suffixes = mentionable(spec)
    assert suffixes, f"{spec.name}: no suffix a question can mention"
    for ext in suffixes:
        assert f"widget{ext}" in query_signals(f"why does widget{ext} fail").paths, ext


def test_a_non_code_file_name_is_still_not_a_path() -> None:
    """The list did not become "any suffix": a mentioned `notes.txt` or `setup.cfg` is not code."""
    paths = query_signals("read notes.txt and setup.cfg").paths
    assert "notes.txt" not in paths
    assert "setup.cfg" not in paths


@pytest.mark.parametrize("spec", LANGUAGES, ids=lambda s: s.name)
def test_an_untitled_buffer_of_every_chunked_language_gets_its_grammar(spec: LanguageSpec) -> None:
    name = untitled_name(spec.name)
    assert language_for_path(name) is spec, name
    assert name.startswith("untitled.")


@pytest.mark.parametrize(("editor_id", "language"), sorted(EDITOR_IDS.items()))
def test_editor_language_ids_that_are_not_our_names(editor_id: str, language: str) -> None:
    assert language_name(untitled_name(editor_id)) == language


def test_an_untitled_kotlin_buffer_is_chunked_by_its_grammar() -> None:
    """End to end through the chunker: a function, not one plain-text chunk."""
    text = 'fun greet(name: String): String {\n    return "hi $name"\n}\n'
    result = chunk_file(untitled_name("kotlin"), text, ChunkSettings())
    assert [(c.language, c.kind, c.symbol) for c in result.chunks] == [
        ("kotlin", "function", "greet")
    ]


def test_an_unknown_language_keeps_its_id_as_the_suffix() -> None:
    """As before: `markdown` → `untitled.markdown` (the plain-language table names it)."""
    assert untitled_name("markdown") == "untitled.markdown"
    assert language_name(untitled_name("markdown")) == "markdown"


@pytest.mark.parametrize(
    ("line", "language"),
    [
        ("#!/bin/sh", "bash"),
        ("#!/usr/bin/env bash", "bash"),
        ("#! /bin/zsh -e", "bash"),
        ("#!/usr/bin/env -S bash -eu", "bash"),
        ("#!/usr/bin/python3.11", "python"),
        ("#!/usr/bin/env node", "javascript"),
    ],
)
def test_a_script_without_a_suffix_is_chunked_as_its_shebang_says(line: str, language: str) -> None:
    """`bin/tool`, `libexec/tool-install`: a script's `#!` line names its language (chunked as
    plain text before, it had no functions and a prose file's demotion)."""
    result = chunk_file("libexec/tool-install", f"{line}\nrun() {{ echo hi; }}\n", ChunkSettings())
    assert result.language == language


def test_a_shebang_does_not_override_a_suffix_or_open_other_files() -> None:
    """The suffix still decides where there is one (a `.md` file quoting a script stays prose);
    a file without a `#!` line, or naming an interpreter no grammar parses, stays text."""
    shell = "#!/bin/sh\necho hi\n"
    assert chunk_file("notes.md", shell, ChunkSettings()).language == "markdown"
    assert chunk_file("bin/tool", "echo hi\n", ChunkSettings()).language == "text"
    assert chunk_file("bin/tool", "#!/usr/bin/perl\nprint 1;\n", ChunkSettings()).language == "text"
    assert chunk_file("bin/tool.py", shell, ChunkSettings()).language == "python"
