"""Names in a typed question: file names that say its words, symbols it is or names."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.test_retrieve import make_folder

from codeask.core.search.name_match import (
    MIN_PREFIX,
    SHARED_STEM,
    defines,
    file_stems_for,
    is_symbol_query,
    matches_any,
    name_match_share,
    queried_symbols,
    question_words,
    reexports,
)
from codeask.core.search.retrieve import rank_files, search
from codeask.core.search.steps import coherence


def test_question_words_drop_stop_words_and_short_words() -> None:
    assert question_words("how is the URL path mapped to an app") == {
        "url",
        "path",
        "mapped",
        "app",
    }


def test_file_names_match_words_exactly_or_by_prefix() -> None:
    words = question_words("URL path mapping across mounted apps")
    assert name_match_share(words, "lib/rack/urlmap.rb") == 1 / 6  # url ~ urlmap
    assert name_match_share(question_words("deferred body proxy"), "lib/body_proxy.rb") == 2 / 3
    assert name_match_share(question_words("path management"), "rails/paths.rb") == 1.5 / 2
    # the folder's name counts, the grandparent's does not; the suffix never does
    assert name_match_share(question_words("middleware order"), "src/middleware/x.go") == 1 / 2
    assert name_match_share(question_words("middleware order"), "middleware/src/x.go") == 0
    assert name_match_share(question_words("ruby files"), "lib/x.rb") == 0
    # a file named by the word (give or take an ending) counts more than a folder or a part
    words = question_words("how generators are registered")
    assert name_match_share(words, "rails/generators.rb") == 1.5 / 2
    assert name_match_share(words, "rails/generators/base.rb") == 1 / 2
    assert name_match_share(question_words("request logging"), "mw/request_id.go") == 1 / 2
    assert name_match_share(question_words("request logging"), "mw/requests.go") == 1.5 / 2
    assert name_match_share(question_words("pyenv helpers"), "plugins/pyenv.plugin.bash") == 0.75
    # one last letter apart: plural and -y/-ies forms, `utils` for "utility"
    assert name_match_share(question_words("utility helpers"), "lib/rack/utils.rb") == 1.5 / 2
    assert name_match_share(question_words("dependency graph"), "src/dependencies.py") == 1.5 / 2
    assert name_match_share(question_words("parse error"), "src/parts.py") == 0
    assert name_match_share(question_words("routing"), "src/router.go") == 0
    # one stem, two endings (five letters shared, three quarters of the shorter word)
    assert name_match_share(question_words("validation rules"), "Validation/Validator.php") > 0
    assert name_match_share(question_words("event dispatching"), "Events/Dispatcher.php") > 1 / 2
    assert name_match_share(question_words("contract"), "src/control.py") == 0


def test_symbol_questions() -> None:
    for question in ("Rack::Response", "Request", "SqlMapper", "std.mem.sort", "_private", "a_b"):
        assert is_symbol_query(question), question
    for question in ("session", "how are requests parsed", "URL path mapping"):
        assert not is_symbol_query(question), question
    assert queried_symbols("Rack::Response") == ({"Response"}, True)
    assert queried_symbols("where does parseHttpRequest handle HTTPServer") == (
        {"parseHttpRequest"},
        False,
    )


def test_definitions_are_read_from_text_in_many_languages() -> None:
    assert defines("module Rails\n  class Application < Engine\n", "Application")
    assert defines("pub struct Router<S> {", "Router")
    assert defines("defmodule Phoenix.Router do", "Router")
    assert defines("export function createRouter(options) {", "createRouter")
    assert defines("CREATE TABLE users (id int)", "users")
    assert not defines("app = Application.new", "Application")
    assert not defines("class ApplicationRecord < Base", "Application")
    assert not defines("the Class Application is documented", "Application")


def test_reexports_are_read_from_text() -> None:
    rust = "#[doc(inline)]\npub use axum_core::extract::{\n    FromRef, FromRequest,\n};\n"
    assert reexports(rust, "FromRequest")
    assert reexports("pub(crate) use inner::Pool;", "Pool")
    assert reexports("export { Foo, Bar } from './foo'", "Bar")
    assert reexports("export type { Options } from './types'", "Options")
    assert not reexports("use axum_core::extract::{FromRequest, Request};", "FromRequest")
    assert not reexports("pub use a::FromRequestParts;", "FromRequest")
    assert not reexports("export function Foo() {}", "Foo")
    assert not reexports("import { Foo } from './foo'", "Foo")


def test_file_stems_for_a_symbol() -> None:
    assert file_stems_for("BodyProxy") == ["BodyProxy", "bodyproxy", "body_proxy", "body-proxy"]


def best_file_by_weight(
    root: Path, files: dict[str, str], question: str, setting: str, weights: tuple[float, ...]
) -> dict[float, str]:
    """The best file a lexical search ranks for `question` with `retrieve.<setting>` at each
    weight (the same index)."""
    folder = make_folder(root, files)
    best: dict[float, str] = {}
    for weight in weights:
        setattr(folder.settings.retrieve, setting, weight)
        hits = search([folder], question, mode="lexical", k=30).hits
        best[weight] = rank_files(hits)[0][0]
    folder.close()
    return best


def test_a_file_named_by_the_question_outranks_files_that_repeat_its_words(
    tmp_path: Path,
) -> None:
    """Two files repeat "url" and "mapping" in every function; `urlmap.rb` is the answer."""
    noisy = "".join(
        f"def handle_{i}(env)\n  path = env['PATH_INFO']\n  url = build_url(path)\n"
        f"  log('url mapping', url)\nend\n\n"
        for i in range(6)
    )
    files = {
        "lib/sendfile.rb": noisy,
        "lib/builder.rb": noisy.replace("handle_", "build_"),
        "lib/urlmap.rb": "class URLMap\n  def remap(map)\n    map.each { |location, app| app }\n"
        "  end\n\n  def call(env)\n    path = env['PATH_INFO']\n  end\nend\n",
    }
    best = best_file_by_weight(tmp_path, files, "URL mapping", "file_name_weight", (0.0, 1.0))
    assert best[0.0] != "lib/urlmap.rb"
    assert best[1.0] == "lib/urlmap.rb"


def test_a_symbol_question_finds_the_file_defining_it(tmp_path: Path) -> None:
    """`Application`: the class is defined in app.rb, whose header chunk tree-sitter names
    nothing; other files only reopen or use it (far more often)."""
    methods = "  def step\n    run(self)\n  end\n"
    files = {
        "lib/app.rb": f"module Rails\n  class Application < Engine\n{methods}  end\nend\n",
        "lib/boot.rb": "".join(
            f"def boot_{i}\n  Application.new.step\n  Application.run({i})\n"
            f"  Application.stop\nend\n\n"
            for i in range(8)
        ),
    }
    best = best_file_by_weight(tmp_path, files, "Application", "definition_weight", (0.0, 3.0))
    assert best[0.0] == "lib/boot.rb"
    assert best[3.0] == "lib/app.rb"


def test_a_symbol_defined_outside_the_tree_finds_where_it_is_made_public(
    tmp_path: Path,
) -> None:
    """`FromRequest` comes from another crate: the module that re-exports it is where a
    reader goes, not the files that merely use it (more often)."""
    users = "".join(
        f"use axum_core::extract::FromRequest;\n\nfn extract_{i}<T: FromRequest>(t: T) -> T {{\n"
        f"    // FromRequest for part {i}\n    t\n}}\n\n"
        for i in range(4)
    )
    files = {
        "src/json.rs": users,
        "src/form.rs": users.replace("extract_", "form_"),
        "src/extract/mod.rs": "pub mod path;\n\n#[doc(inline)]\npub use axum_core::extract::{\n"
        "    DefaultBodyLimit, FromRef, FromRequest, Request,\n};\n",
    }
    best = best_file_by_weight(tmp_path, files, "FromRequest", "definition_weight", (0.0, 3.0))
    assert best[0.0] != "src/extract/mod.rs"
    assert best[3.0] == "src/extract/mod.rs"


def test_a_file_that_matches_in_many_places_outranks_one_lucky_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coherence lift: `client.py` answers "send request retry" in four functions, `misc.py`
    in one chunk that repeats the words; the lift (a share of the best score by each file's
    summed candidate score) puts the file that answers from many places first."""
    client = "".join(
        f"def step_{i}(request):\n    '''send the request, retry on failure'''\n"
        f"    return transport.send(request)\n\n"
        for i in range(4)
    )
    misc = "def send_request_retry(request):\n    send(request); send(request); retry(request)\n"
    folder = make_folder(tmp_path, {"pkg/client.py": client, "pkg/misc.py": misc})
    first: dict[float, str] = {}
    for lift in (0.0, coherence.FILE_COHERENCE):
        monkeypatch.setattr(coherence, "FILE_COHERENCE", lift)
        first[lift] = search([folder], "send request retry", mode="lexical", k=30).hits[0].path
    assert first == {0.0: "pkg/misc.py", coherence.FILE_COHERENCE: "pkg/client.py"}
    folder.close()


def spelled_out(word: str, names: frozenset[str]) -> bool:
    """The file-name word rule as its docstring says it, without the shortcut that skips
    names starting otherwise (issue 44 LAT)."""
    for name in names:
        shorter, longer = (word, name) if len(word) <= len(name) else (name, word)
        common = next(
            (i for i, (a, b) in enumerate(zip(word, name, strict=False)) if a != b),
            min(len(word), len(name)),
        )
        if (
            word == name
            or (len(shorter) >= MIN_PREFIX and longer.startswith(shorter))
            or (len(shorter) > MIN_PREFIX + 1 and longer.startswith(shorter[:-1]))
            or (common >= SHARED_STEM and common * 4 >= len(shorter) * 3)
        ):
            return True
    return False


def test_the_first_letters_shortcut_matches_as_the_rule_says() -> None:
    words = [
        "ab", "abc", "abd", "url", "urlmap", "utils", "utility", "util", "validation",
        "validator", "valid", "railtie", "railties", "dependency", "dependencies", "path",
        "paths", "pathname", "request", "requests", "req", "x", "generators", "generate",
    ]  # fmt: skip
    for word in words:
        for first in words:
            for second in words:
                names = frozenset((first, second))
                assert matches_any(word, names) == spelled_out(word, names), (word, names)
