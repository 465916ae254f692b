"""What retrieval reads out of a question, and how fusion uses it."""

from __future__ import annotations

from pathlib import Path

from codeask.config import RetrieveSettings, build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.search.query import query_signals
from codeask.core.search.retrieve import (
    fused_candidates,
    is_test_path,
    path_keys,
    rank_files,
    search,
)


def test_code_like_identifiers_only() -> None:
    signals = query_signals(
        "The `Config` loader calls load_settings() and parseHttpRequest when run"
    )
    assert {"Config", "load_settings", "parseHttpRequest"} <= signals.identifiers
    assert "loader" not in signals.identifiers
    assert "run" not in signals.identifiers


def test_paths_and_dotted_modules_are_mentions() -> None:
    signals = query_signals(
        'Traceback: File "sphinx/ext/autodoc/__init__.py", in sphinx.util.typing'
    )
    assert "sphinx/ext/autodoc/__init__.py" in signals.paths
    assert "sphinx/util/typing" in signals.paths


def test_path_keys_cover_suffixes_and_packages() -> None:
    keys = path_keys("sphinx/ext/autodoc/__init__.py")
    assert {
        "__init__.py",
        "autodoc/__init__.py",
        "sphinx/ext/autodoc",
        "ext/autodoc",
        "autodoc",
    } <= set(keys)
    assert "sphinx/util/typing" in path_keys("sphinx/util/typing.py")


def test_test_paths() -> None:
    for path in (
        "tests/test_a.py",
        "pkg/test_b.py",
        "x/conftest.py",
        "go/thing_test.go",
        "testing/x.py",
        "spec/rack/request_spec.rb",
        "lib/x_spec.rb",
        "src/__tests__/x.ts",
        "src/router.test.ts",
        "src/router.spec.js",
        "src/test/java/org/x/RouterTest.java",
        "Dapper.Tests/QueryTests.cs",
        "core/src/HeadersSpec.scala",
        "core/src/ParserSuite.scala",
    ):
        assert is_test_path(path), path
    for path in (
        "src/latest.py",
        "pkg/contest.py",
        "attestation/x.py",
        "src/Contest.java",
        "src/inspect.ts",
        "lib/specification.rb",
        "src/Illuminate/Testing/TestResponse.php",  # a framework's testing helpers are code
    ):
        assert not is_test_path(path), path


def test_signals_know_when_tests_or_docs_are_wanted() -> None:
    assert query_signals("why does this unit test fail").about_tests
    assert query_signals("where is installation documented").about_docs
    assert not query_signals("where is the retry loop").about_tests


def make_folder(root: Path, files: dict[str, str]) -> FolderIndex:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings, _ = build_settings({"history": {"enabled": False}})
    folder = FolderIndex(root, settings)
    folder.refresh(embed=False)
    return folder


def test_a_mentioned_module_lifts_its_file(tmp_path: Path) -> None:
    files = {
        f"pkg/mod{i}.py": f"def handle_request_{i}(request):\n    return request.body\n"
        for i in range(6)
    }
    folder = make_folder(tmp_path, files)
    hits = search([folder], "handle request body fails in pkg.mod4", mode="lexical").hits
    assert hits[0].path == "pkg/mod4.py"
    assert "path" in hits[0].retrievers


def test_rank_files_aggregates_chunks(tmp_path: Path) -> None:
    files = {
        "a.py": "def parse_token():\n    pass\n\n\ndef parse_tree():\n    pass\n",
        "b.py": "def parse_token_once():\n    pass\n",
    }
    folder = make_folder(tmp_path, files)
    result = search([folder], "parse_token parse_tree", mode="lexical", k=10)
    ranked = [path for path, _ in rank_files(result.hits)]
    assert ranked[0] == "a.py"
    assert set(ranked) == {"a.py", "b.py"}


def test_warming_flag_until_vectors_exist(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, {"a.py": "def alpha():\n    pass\n"})
    result = search([folder], "alpha")
    assert result.warming and result.hits, "lexical answers while dense results fill in"
    assert result.embedded == 0 < result.chunks


def test_the_functions_a_top_hit_calls_are_lifted(tmp_path: Path) -> None:
    """A report names what the user ran; the fault is often in what that calls. With
    `call_weight` 0 the callee's file is not found at all; with the default it is. A typed
    search names the thing itself and lifts nothing."""
    folder = make_folder(
        tmp_path,
        {
            "pkg/directive.py": "def render_literal_include(node):\n"
            "    '''Render a literalinclude directive with its dedent option.'''\n"
            "    return trim_common_indent(node.lines)\n",
            "pkg/textwrap_util.py": "def trim_common_indent(lines):\n"
            "    return [line[4:] for line in lines]\n",
            "pkg/other.py": "def unrelated_helper(x):\n    return x\n",
        },
    )
    question = "literalinclude directive dedent option renders wrongly\n" + "steps: " * 60
    found = {}
    for weight in (0.0, 0.3):
        folder.settings.retrieve.call_weight = weight
        hits = fused_candidates([folder], question, mode="lexical")
        found[weight] = [path for path, _ in rank_files(hits)]
    assert "pkg/textwrap_util.py" not in found[0.0]
    assert found[0.3][:2] == ["pkg/directive.py", "pkg/textwrap_util.py"]
    typed = fused_candidates([folder], "literalinclude dedent", mode="lexical")
    assert "pkg/textwrap_util.py" not in [path for path, _ in rank_files(typed)]
    folder.close()


def test_a_class_outline_does_not_hide_its_methods(tmp_path: Path) -> None:
    """A class's outline chunk spans its methods' lines but elides their bodies: a result
    list shows the outline and the methods that match (before, the outline hid them, and a
    file answering in three methods counted as one hit); chunks that hold the same lines
    are still shown once."""
    methods = "".join(
        f"    def remap_{i}(map)\n      map.each {{ |location, app| mount(location, app) }}\n"
        f"      url_map_{i} = map\n    end\n\n"
        for i in range(4)
    )
    source = (
        "module Rack\n  # URLMap maps urls and paths to mounted apps.\n  class URLMap\n"
        f"{methods}  end\nend\n"
    )
    folder = make_folder(tmp_path, {"lib/urlmap.rb": source})
    chunks = folder.storage.chunks(folder.storage.file("lib/urlmap.rb").chunk_ids).values()
    outline = [c for c in chunks if "\n...\n" in c.text]
    assert outline, "the chunker keeps an outline of the class"
    hits = search([folder], "url map mounted apps", mode="lexical", k=10).hits
    shown = [(h.chunk.start_line, h.chunk.end_line) for h in hits]
    assert sum(1 for h in hits if h.chunk.symbol.startswith("remap_")) >= 2, shown
    lines = [(h.chunk.start_line, h.chunk.end_line) for h in hits if "\n...\n" not in h.chunk.text]
    for i, (a_start, a_end) in enumerate(lines):  # no two shown chunks hold the same lines
        for b_start, b_end in lines[i + 1 :]:
            assert a_end < b_start or b_end < a_start, shown
    folder.close()


def test_a_typed_question_lifts_the_file_the_other_candidates_call_into(tmp_path: Path) -> None:
    """A question about how something works, naming no file and no symbol, is answered by the
    module the other candidates lean on (`dispatch.py`, which both transports and the client
    call). With `central_weight` 0 a transport that repeats the words ranks first; with the
    default the hub does. A question that names its file keeps that file first."""
    leaf = (
        "def {name}_adapter(config):\n"
        "    '''The {name} adapter sends a request through the configured adapter, '''\n"
        "    '''request by request.'''\n"
        "    return dispatch_request(config.request)\n"
    )
    folder = make_folder(
        tmp_path,
        {
            "core/dispatch.py": "def dispatch_request(config):\n"
            "    '''Send a request through the configured adapter.'''\n"
            "    return config.adapter(config)\n",
            "transports/http.py": leaf.format(name="http"),
            "transports/xhr.py": leaf.format(name="xhr"),
            "client.py": "def get(url):\n    return dispatch_request({'url': url})\n",
        },
    )
    question = "how a request is sent through the configured adapter"
    default = RetrieveSettings().central_weight
    first = {}
    for weight in (0.0, default):
        folder.settings.retrieve.central_weight = weight
        first[weight] = rank_files(fused_candidates([folder], question, mode="lexical"))[0][0]
    assert first == {0.0: "transports/http.py", default: "core/dispatch.py"}
    named = fused_candidates([folder], "the http transport", mode="lexical")
    assert rank_files(named)[0][0] == "transports/http.py"
    folder.close()
