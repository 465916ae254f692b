"""Chunking real source text in every supported language, plus markdown, rst and fallbacks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codeask.config import ChunkSettings
from codeask.core.records import Chunk
from codeask.core.source import chunk
from codeask.core.source.chunk import ChunkResult, chunk_file
from codeask.core.source.languages import LANGUAGES, language_for_path, language_name

SETTINGS = ChunkSettings()
REPO = Path(__file__).resolve().parents[2]


def chunks_of(path: str, text: str, settings: ChunkSettings = SETTINGS) -> ChunkResult:
    """Chunk and check the invariants every result must hold."""
    result = chunk_file(path, text, settings)
    assert_invariants(text, result)
    return result


def assert_invariants(text: str, result: ChunkResult) -> None:
    """Sorted, 1-based, text equal to the source lines, every non-blank line covered."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    covered: set[int] = set()
    starts = [c.start_line for c in result.chunks]
    assert starts == sorted(starts)
    for c in result.chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.id == 0 and c.language == result.language
        if "\n...\n" in c.text:  # a class without its methods: every piece is source lines
            assert c.kind == "class"
            assert all(p in "\n".join(lines) for p in c.text.split("\n...\n"))
        else:
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i + 1 for i, line in enumerate(lines) if line.strip() and i + 1 not in covered]
    assert missing == []


def find(result: ChunkResult, symbol: str, kind: str | None = None) -> Chunk:
    """The one chunk with this symbol (and kind)."""
    hits = [c for c in result.chunks if c.symbol == symbol and kind in (None, c.kind)]
    assert len(hits) == 1, [(c.symbol, c.kind) for c in result.chunks]
    return hits[0]


def shape(c: Chunk) -> tuple[str, str, str, int, int]:
    """The facts most tests compare."""
    return (c.kind, c.parent, c.symbol, c.start_line, c.end_line)


# --------------------------------------------------------------------------- languages table


def test_language_table_covers_required_extensions() -> None:
    expected = {
        "python": [".py"],
        "javascript": [".js", ".mjs", ".cjs", ".jsx"],
        "typescript": [".ts", ".mts", ".cts"],
        "tsx": [".tsx"],
        "go": [".go"],
        "rust": [".rs"],
        "java": [".java"],
        "c": [".c", ".h"],
        "cpp": [".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"],
        "csharp": [".cs"],
        "ruby": [".rb"],
        "php": [".php"],
        "bash": [".sh", ".bash"],
    }
    for name, extensions in expected.items():
        for ext in extensions:
            spec = language_for_path(f"src/dir/File{ext.upper()}")
            assert spec is not None and spec.name == name, ext
    assert len({spec.name for spec in LANGUAGES}) == len(LANGUAGES)


def test_language_name_for_any_file() -> None:
    assert language_name("a/b.py") == "python"
    assert language_name("docs/index.md") == "markdown"
    assert language_name("docs/index.rst") == "rst"
    assert language_name("conf/app.YAML") == "yaml"
    assert language_name("pyproject.toml") == "toml"
    assert language_name("build\\Makefile") == "make"
    assert language_name("LICENSE") == "text"
    assert language_for_path("README.md") is None
    assert language_for_path("Gemfile") is not None


# --------------------------------------------------------------------------- python

PYTHON = '''\
"""Module docstring."""
import os

LIMIT = 10


@cache
def load(path):
    """Read a file."""

    def inner():
        return os.path.join(path, "x")

    return parse(inner()).strip()


class Store(Base):
    """Keeps things."""

    kind = "store"

    def __init__(self, root):
        self.root = root
        self.reset()

    # Persist to disk.
    @property
    def size(self):
        return len(self.items)

    class Meta:
        ordering = ["name"]

        def describe(self):
            return "meta"

    limit = LIMIT


if __name__ == "__main__":
    main()
'''


def test_python_functions_classes_methods() -> None:
    r = chunks_of("pkg/store.py", PYTHON)
    assert r.language == "python" and r.fallback_reason == ""
    load = find(r, "load")
    assert shape(load) == ("function", "", "load", 7, 14)
    assert load.text.startswith("@cache\ndef load(path):")
    assert "def inner():" in load.text  # nested functions stay inside
    assert load.docstring == "Read a file."
    assert load.calls == ["join", "parse", "inner", "strip"]
    assert not [c for c in r.chunks if c.symbol == "inner"]
    assert shape(find(r, "__init__")) == ("method", "Store", "__init__", 22, 24)
    assert find(r, "__init__").calls == ["reset"]
    size = find(r, "size")
    assert shape(size) == ("method", "Store", "size", 26, 29)  # comment + decorator included
    assert size.text.splitlines()[:2] == ["    # Persist to disk.", "    @property"]
    assert shape(find(r, "Meta")) == ("class", "Store", "Meta", 31, 32)
    assert shape(find(r, "describe")) == ("method", "Meta", "describe", 34, 35)


def test_python_class_chunk_is_header_and_members_without_methods() -> None:
    r = chunks_of("pkg/store.py", PYTHON)
    store = find(r, "Store")
    assert shape(store) == ("class", "", "Store", 17, 37)
    assert store.docstring == "Keeps things."
    assert store.text == (
        'class Store(Base):\n    """Keeps things."""\n\n    kind = "store"\n...\n    limit = LIMIT'
    )
    assert "self.root" not in store.text and "def " not in store.text


def test_python_module_chunks_cover_top_level_code() -> None:
    r = chunks_of("pkg/store.py", PYTHON)
    modules = [c for c in r.chunks if c.kind == "module"]
    assert [(c.start_line, c.end_line) for c in modules] == [(1, 4), (40, 41)]
    assert modules[0].text.startswith('"""Module docstring."""')
    assert modules[1].calls == ["main"]
    assert all(c.symbol == "" and c.part == 0 for c in modules)


# --------------------------------------------------------------------------- other languages

JAVASCRIPT = """\
import { sum } from "./math.js";

/**
 * Adds two numbers.
 */
export function add(a, b) {
  return helpers.sum(a, b);
}

// Multiplies.
const mul = (a, b) => Math.imul(a, b);

class Counter extends Base {
  static start = 0;

  increment(step) {
    this.emit("change");
    return new Event(step);
  }
}
"""


def test_javascript() -> None:
    r = chunks_of("web/app.mjs", JAVASCRIPT)
    assert r.language == "javascript"
    add = find(r, "add")
    assert shape(add) == ("function", "", "add", 3, 8)
    assert add.docstring == "Adds two numbers."
    assert add.calls == ["sum"]
    mul = find(r, "mul")
    assert shape(mul) == ("function", "", "mul", 10, 11)
    assert (mul.docstring, mul.calls) == ("Multiplies.", ["imul"])
    assert shape(find(r, "Counter")) == ("class", "", "Counter", 13, 20)
    assert find(r, "Counter").text == "class Counter extends Base {\n  static start = 0;\n...\n}"
    inc = find(r, "increment")
    assert shape(inc) == ("method", "Counter", "increment", 16, 19)
    assert inc.calls == ["emit", "Event"]


TYPESCRIPT = """\
/** A shape. */
export interface Shape {
  area(): number;
}

export abstract class Square implements Shape {
  constructor(private side: number) {}

  area(): number {
    return Math.pow(this.side, 2);
  }
}

enum Color { Red, Green }

export const scale = (s: Shape, k: number): number => s.area() * k;
"""


@pytest.mark.parametrize("path", ["src/shape.ts", "src/shape.tsx"])
def test_typescript_and_tsx(path: str) -> None:
    r = chunks_of(path, TYPESCRIPT)
    assert r.language == ("tsx" if path.endswith("tsx") else "typescript")
    shape_iface = find(r, "Shape")
    assert shape(shape_iface) == ("class", "", "Shape", 1, 4)
    assert shape_iface.docstring == "A shape."
    assert shape(find(r, "Square")) == ("class", "", "Square", 6, 12)
    assert shape(find(r, "area", "method")) == ("method", "Square", "area", 9, 11)
    assert find(r, "area", "method").calls == ["pow"]
    assert shape(find(r, "Color")) == ("class", "", "Color", 14, 14)
    assert shape(find(r, "scale")) == ("function", "", "scale", 16, 16)


def test_typescript_decorators_join_their_method() -> None:
    text = (
        "@Component({ selector: 'app' })\n"
        "export class App {\n"
        "  @HostListener('click')\n"
        "  onClick(): void {\n"
        "    this.handle();\n"
        "  }\n"
        "}\n"
    )
    r = chunks_of("src/app.ts", text)
    assert (shape(find(r, "App")), find(r, "App").calls) == (
        ("class", "", "App", 1, 7),
        ["Component"],
    )
    on_click = find(r, "onClick")
    assert (shape(on_click), on_click.calls) == (
        ("method", "App", "onClick", 3, 6),
        ["HostListener", "handle"],
    )


def test_typescript_type_alias_is_a_named_chunk() -> None:
    """A type alias (`export type inferInput<T> = ...`, the body of a types module) is a chunk
    named for it with its doc comment, not an anonymous stretch of the module."""
    text = (
        "import type { Proc } from './proc';\n"
        "\n"
        "/** The input a procedure accepts. */\n"
        "export type inferProcedureInput<TProcedure extends Proc> =\n"
        "  TProcedure['_def']['input'];\n"
        "\n"
        "type Pair = { left: string; right: string };\n"
    )
    for path in ("src/inference.ts", "src/inference.tsx"):
        r = chunks_of(path, text)
        infer = find(r, "inferProcedureInput")
        assert shape(infer) == ("class", "", "inferProcedureInput", 3, 5)
        assert infer.docstring == "The input a procedure accepts."
        assert shape(find(r, "Pair")) == ("class", "", "Pair", 7, 7)


TSX = """\
// Greets someone.
export function Hello({ name }: Props) {
  return <div onClick={() => track(name)}>{format(name)}</div>;
}
"""


def test_tsx_jsx_body() -> None:
    r = chunks_of("ui/Hello.tsx", TSX)
    hello = find(r, "Hello")
    assert shape(hello) == ("function", "", "Hello", 1, 4)
    assert hello.docstring == "Greets someone."
    assert hello.calls == ["track", "format"]


GO = """\
package server

import "fmt"

// Server serves requests.
type Server struct {
	addr string
}

type ID int

// Start listens on the address.
func (s *Server) Start() error {
	return s.listen(fmt.Sprintf("%s", s.addr))
}

func New(addr string) *Server {
	return &Server{addr: addr}
}
"""


def test_go() -> None:
    r = chunks_of("server/server.go", GO)
    server = find(r, "Server")
    assert shape(server) == ("class", "", "Server", 5, 8)
    assert server.docstring == "Server serves requests."
    start = find(r, "Start")
    assert shape(start) == ("method", "Server", "Start", 12, 15)
    assert (start.docstring, start.calls) == (
        "Start listens on the address.",
        ["listen", "Sprintf"],
    )
    assert shape(find(r, "New")) == ("function", "", "New", 17, 19)
    assert [c.start_line for c in r.chunks if c.kind == "module"] == [1, 10]


RUST = """\
use std::fmt;

/// A point in space.
#[derive(Debug, Clone)]
pub struct Point {
    x: i32,
}

impl fmt::Display for Point {
    /// Formats the point.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.x.abs();
        write!(f, "{}", v)
    }
}

pub fn origin() -> Point {
    Point::new(0)
}
"""


def test_rust() -> None:
    r = chunks_of("src/point.rs", RUST)
    point = [c for c in r.chunks if c.symbol == "Point"]
    assert [shape(c) for c in point] == [
        ("class", "", "Point", 3, 7),
        ("class", "", "Point", 9, 15),  # the impl block's own lines
    ]
    assert point[0].docstring == "A point in space."
    assert "#[derive(Debug, Clone)]" in point[0].text
    fmt = find(r, "fmt")
    assert shape(fmt) == ("method", "Point", "fmt", 10, 14)
    assert (fmt.docstring, fmt.calls) == ("Formats the point.", ["abs", "write"])
    assert find(r, "origin").calls == ["new"]


JAVA = """\
package demo;

/** A user account. */
@Entity
public class Account extends Base {
    private int balance;

    /** Creates it. */
    public Account() { super(); }

    @Override
    public String toString() {
        return String.format("%d", balance).trim();
    }
}
"""


def test_java() -> None:
    r = chunks_of("src/Account.java", JAVA)
    account = find(r, "Account", "class")
    assert shape(account) == ("class", "", "Account", 3, 15)
    assert account.docstring == "A user account."
    assert "private int balance;" in account.text and "format" not in account.text
    ctor = find(r, "Account", "method")
    assert shape(ctor) == ("method", "Account", "Account", 8, 9)
    assert ctor.docstring == "Creates it."
    to_string = find(r, "toString")
    assert shape(to_string) == ("method", "Account", "toString", 11, 14)
    assert to_string.calls == ["format", "trim"]


C = """\
#include <stdio.h>

/* Adds two ints. */
static int add(int a, int b) {
    return helper(a) + ops->plus(b);
}

typedef struct {
    int x;
} Point;

struct node *make(void);
"""


def test_c() -> None:
    r = chunks_of("src/add.c", C)
    add = find(r, "add")
    assert shape(add) == ("function", "", "add", 3, 6)
    assert (add.docstring, add.calls) == ("Adds two ints.", ["helper", "plus"])
    assert shape(find(r, "Point")) == ("class", "", "Point", 8, 10)
    assert [c.end_line for c in r.chunks if c.kind == "module"] == [1, 12]


CPP = """\
namespace geo {
// A widget.
template <typename T>
class Widget : public Base {
 public:
  int get() const { return impl_->value(); }
 private:
  int x_;
};
}

void geo::Widget::reset() {
  std::fill(data, 0);
}
"""


def test_cpp() -> None:
    r = chunks_of("src/widget.hpp", CPP)
    assert r.language == "cpp"
    widget = find(r, "Widget")
    assert shape(widget) == ("class", "", "Widget", 2, 9)
    assert widget.docstring == "A widget."
    assert widget.text.endswith(" private:\n  int x_;\n};")
    get = find(r, "get")
    assert (shape(get), get.calls) == (("method", "Widget", "get", 6, 6), ["value"])
    reset = find(r, "reset")
    assert (shape(reset), reset.calls) == (("method", "Widget", "reset", 12, 14), ["fill"])


CSHARP = """\
using System;

namespace App {
  /// <summary>Runs jobs.</summary>
  [Serializable]
  public class Runner : Base {
    public int Count { get; set; }

    public void Run() {
      Console.WriteLine("x");
      this.Execute<int>();
    }
  }
}
"""


def test_csharp() -> None:
    r = chunks_of("App/Runner.cs", CSHARP)
    runner = find(r, "Runner")
    assert shape(runner) == ("class", "", "Runner", 4, 13)
    assert runner.docstring == "<summary>Runs jobs.</summary>"
    run = find(r, "Run")
    assert (shape(run), run.calls) == (("method", "Runner", "Run", 9, 12), ["WriteLine", "Execute"])


RUBY = """\
require "json"

# Greeting helpers.
module Greet
  class Greeter < Base
    attr_reader :name

    # Says hello.
    def hello(who)
      puts format_name(who).upcase
    end

    def self.build
      new
    end
  end
end
"""


def test_ruby() -> None:
    r = chunks_of("lib/greet.rb", RUBY)
    assert shape(find(r, "Greet")) == ("class", "", "Greet", 3, 17)
    assert find(r, "Greet").docstring == "Greeting helpers."
    assert shape(find(r, "Greeter")) == ("class", "Greet", "Greeter", 5, 16)
    hello = find(r, "hello")
    assert shape(hello) == ("method", "Greeter", "hello", 8, 11)
    assert (hello.docstring, hello.calls) == ("Says hello.", ["puts", "format_name", "upcase"])
    assert shape(find(r, "build")) == ("method", "Greeter", "build", 13, 15)


PHP = """\
<?php
namespace App;

/** A stored user. */
class User extends Model {
    private $name;

    public function save(): bool {
        return $this->db->insert(strtolower($this->name));
    }
}

function helper($a) { return Str::lower($a); }
"""


def test_php() -> None:
    r = chunks_of("src/User.php", PHP)
    user = find(r, "User")
    assert (shape(user), user.docstring) == (("class", "", "User", 4, 11), "A stored user.")
    save = find(r, "save")
    assert (shape(save), save.calls) == (
        ("method", "User", "save", 8, 10),
        ["insert", "strtolower"],
    )
    assert find(r, "helper").calls == ["lower"]


BASH = """\
#!/usr/bin/env bash
set -euo pipefail

# Build the project.
build() {
  make -j2 all
  echo "built"
}

function deploy {
  build
  rsync -a dist/ host:
}

deploy "$@"
"""


def test_bash() -> None:
    r = chunks_of("scripts/release.sh", BASH)
    build = find(r, "build")
    assert shape(build) == ("function", "", "build", 4, 8)
    assert (build.docstring, build.calls) == ("Build the project.", ["make", "echo"])
    assert shape(find(r, "deploy")) == ("function", "", "deploy", 10, 13)
    assert find(r, "deploy").calls == ["build", "rsync"]
    assert [(c.start_line, c.end_line) for c in r.chunks if c.kind == "module"] == [
        (1, 2),
        (15, 15),
    ]


BASH_DISPATCH = """\
#!/usr/bin/env bash
helper() {
  echo "plain"
}

# The tool's entry point.
tool() {
  local cmd="$1"
  shift
  case "$cmd" in
    'install' | 'i')
      fetch_archive "$@"
      unpack "$@"
      ;;
    use)
      switch_path "$@"
      ;;
  esac
}

case "$1" in
  start) tool use "$2" ;;
  stop) halt_all ;;
esac
"""


def test_bash_case_dispatch_arms_are_named_chunks() -> None:
    """A function dispatching on `case` is a table of subcommands: each arm is a chunk named
    by its pattern (parent: the function), as is each arm of a script's top-level `case`; a
    function without a `case` stays one function chunk."""
    r = chunks_of("bin/tool.sh", BASH_DISPATCH)
    assert shape(find(r, "helper")) == ("function", "", "helper", 2, 4)
    assert shape(find(r, "install")) == ("method", "tool", "install", 11, 14)
    assert find(r, "install").calls == ["fetch_archive", "unpack"]
    assert shape(find(r, "use")) == ("method", "tool", "use", 15, 17)
    assert find(r, "tool").kind == "class"
    assert shape(find(r, "start")) == ("function", "", "start", 22, 22)
    assert shape(find(r, "stop")) == ("function", "", "stop", 23, 23)


EXTRA = {
    "mod.lua": (
        "local M = {}\n-- Adds.\nfunction M.add(a, b)\n  return util.sum(a, b)\nend\nreturn M\n",
        "add",
        "M",
    ),
    "App.kt": (
        "class App {\n    fun run(): Int {\n        return helper(1)\n    }\n}\n",
        "run",
        "App",
    ),
    "App.scala": ("class App {\n  def run(): Int = helper(1)\n}\n", "run", "App"),
    "App.swift": (
        "class App {\n    func run() -> Int {\n        return helper(1)\n    }\n}\n",
        "run",
        "App",
    ),
}


@pytest.mark.parametrize("path", sorted(EXTRA))
def test_optional_languages(path: str) -> None:
    text, method, parent = EXTRA[path]
    r = chunks_of(path, text)
    chunk = find(r, method)
    assert (chunk.kind, chunk.parent) == ("method", parent)
    assert chunk.calls in (["sum"], ["helper"])


# --------------------------------------------------------------------------- sizes and windows


def long_function(body_lines: int) -> str:
    """A real-looking function of `body_lines` statements."""
    body = "\n".join(f"    total += compute_{i}(x)" for i in range(body_lines))
    return f'def big(x):\n    """Sum it."""\n    total = 0\n{body}\n    return total\n'


def test_oversized_function_is_split_into_overlapping_parts() -> None:
    settings = ChunkSettings(max_lines=40, window_lines=20, window_overlap=5)
    text = long_function(60)  # 64 lines
    r = chunks_of("big.py", text, settings)
    parts = [c for c in r.chunks if c.symbol == "big"]
    assert [c.part for c in parts] == [1, 2, 3, 4]
    assert [(c.start_line, c.end_line) for c in parts] == [(1, 20), (16, 35), (31, 50), (46, 64)]
    assert all(c.kind == "function" and c.docstring == "Sum it." for c in parts)
    assert parts[1].calls[0] == "compute_12"  # line 16 = compute_12: calls follow the window
    assert len(parts[0].calls) == 17


def test_plain_text_is_windowed() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 131)) + "\n"
    r = chunks_of("notes/todo.txt", text)
    assert r.language == "text"
    assert [(c.kind, c.start_line, c.end_line, c.part) for c in r.chunks] == [
        ("window", 1, 60, 1),
        ("window", 51, 110, 2),
        ("window", 101, 130, 3),
    ]
    assert chunks_of("config.yaml", "a: 1\nb: 2\n").chunks[0].kind == "window"


def test_empty_and_whitespace_give_no_chunks() -> None:
    for path in ("a.py", "a.md", "a.txt", "a.rs"):
        assert chunk_file(path, "", SETTINGS).chunks == []
        assert chunk_file(path, " \n\t\n\n", SETTINGS).chunks == []


# --------------------------------------------------------------------------- markdown and rst

MARKDOWN = """\
Intro before any heading.

# Guide

Read this.

## Install

```sh
# not a heading
pip install codeask
```

Usage
-----

Run it.

# Reference
### Options ###
All of them.
"""


def test_markdown_sections() -> None:
    r = chunks_of("docs/guide.md", MARKDOWN)
    assert r.language == "markdown"
    assert [(c.symbol, c.parent, c.start_line, c.end_line) for c in r.chunks] == [
        ("", "", 1, 1),
        ("Guide", "", 3, 5),
        ("Install", "Guide", 7, 12),
        ("Usage", "Guide", 14, 17),
        ("Reference", "", 19, 19),
        ("Options", "Reference", 20, 21),
    ]
    assert {c.kind for c in r.chunks} == {"section"}


RST = """\
=======
Manual
=======

Welcome.

Install
-------

Use pip.

From source
~~~~~~~~~~~

.. code-block:: python

   x = 1
   -----

Usage
-----

Run it.
"""


def test_rst_sections() -> None:
    r = chunks_of("docs/manual.rst", RST)
    assert [(c.symbol, c.parent, c.start_line, c.end_line) for c in r.chunks] == [
        ("Manual", "", 1, 5),
        ("Install", "Manual", 7, 10),
        ("From source", "Install", 12, 18),
        ("Usage", "Manual", 20, 23),
    ]


def test_long_markdown_section_is_windowed() -> None:
    text = "# Big\n" + "\n".join(f"text {i}" for i in range(200)) + "\n"
    r = chunks_of("big.md", text)
    assert len(r.chunks) > 1
    assert all(c.symbol == "Big" and c.part == i + 1 for i, c in enumerate(r.chunks))


# --------------------------------------------------------------------------- failures


def test_syntax_broken_python_keeps_definitions_and_says_why() -> None:
    text = "import os\n\ndef ok():\n    return helper(1)\n\ndef broken(:\n    pass\n"
    r = chunks_of("broken.py", text)
    assert r.fallback_reason.startswith("syntax errors (first at line 6)")
    assert shape(find(r, "ok")) == ("function", "", "ok", 3, 4)


def test_unparseable_python_falls_back_to_windows() -> None:
    r = chunks_of("junk.py", ")))(((\n{{{ ]]\n!!!! @@@ def\n")
    assert r.fallback_reason == "syntax errors (first at line 1); used line windows"
    assert [c.kind for c in r.chunks] == ["window"]


@pytest.mark.parametrize("path", ["blob.py", "blob.js", "blob.rs", "blob.md", "blob.rst", "blob"])
def test_binary_garbage_never_raises(path: str) -> None:
    garbage = bytes((i * 7919 + 13) % 256 for i in range(6000)).decode("latin-1")
    garbage += "\x00\ud800\r\r\n\x1b[0m" + "=" * 10 + "\n"
    r = chunk_file(path, garbage, SETTINGS)
    assert r.chunks and all(c.start_line <= c.end_line for c in r.chunks)


def test_bad_settings_do_not_loop_or_raise() -> None:
    settings = ChunkSettings(max_lines=0, window_lines=0, window_overlap=-3)
    r = chunks_of("a.py", "x = 1\ny = 2\nz = 3\n", settings)
    assert [c.text for c in r.chunks] == ["x = 1", "y = 2", "z = 3"]


def test_crlf_line_endings() -> None:
    r = chunks_of("win.py", "import os\r\n\r\ndef f():\r\n    return g()\r\n")
    assert (find(r, "f").text, find(r, "f").start_line) == ("def f():\n    return g()", 3)


# --------------------------------------------------------------------------- coverage and speed

SNIPPETS = {
    "store.py": PYTHON,
    "app.js": JAVASCRIPT,
    "shape.ts": TYPESCRIPT,
    "server.go": GO,
    "point.rs": RUST,
    "Account.java": JAVA,
    "add.c": C,
    "widget.cpp": CPP,
    "Runner.cs": CSHARP,
    "greet.rb": RUBY,
    "User.php": PHP,
    "release.sh": BASH,
    "guide.md": MARKDOWN,
    "manual.rst": RST,
}


def test_every_non_blank_line_is_covered() -> None:
    """Property check over the snippets and this repository's own source files."""
    small = ChunkSettings(max_lines=15, window_lines=8, window_overlap=2)
    files = dict(SNIPPETS)
    for source in sorted((REPO / "server" / "codeask").rglob("*.py"))[:12]:
        files[str(source.relative_to(REPO))] = source.read_text(encoding="utf-8")
    files["pyproject.toml"] = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for path, text in files.items():
        for settings in (SETTINGS, small):
            result = chunks_of(path, text, settings)  # asserts coverage and exact text
            assert result.chunks or not text.strip(), path


def test_chunking_speed_of_a_generated_python_file() -> None:
    parts = []
    for i in range(250):
        parts.append(
            f"class Model{i}(Base):\n"
            f'    """Model number {i}."""\n'
            f"    table = 'm{i}'\n\n"
            f"    def load(self, key):\n"
            f"        value = self.cache.get(key)\n"
            f"        return transform(value, {i})\n\n"
            f"    def save(self, key, value):\n"
            f"        self.cache[key] = value\n\n"
            f"def helper_{i}(x):\n"
            f"    return Model{i}().load(x) or default()\n\n\n"
            f"VALUE_{i} = helper_{i}(1)\n\n"
        )
    text = "\n".join("".join(parts).split("\n")[:5000]) + "\n"
    start = time.perf_counter()
    result = chunk_file("gen.py", text, SETTINGS)
    elapsed = time.perf_counter() - start
    print(
        f"\nchunked 5,000 Python lines into {len(result.chunks)} chunks in {elapsed * 1000:.1f} ms"
    )
    assert_invariants(text, result)
    assert {"class", "method", "function", "module"} <= {c.kind for c in result.chunks}


def test_names_and_calls_are_whole_past_multibyte_text_and_read_boundaries() -> None:
    """Definition names and callee names are sliced from the parsed file's bytes: whole and
    right where the text before them is multi-byte UTF-8 (byte offsets are not character
    offsets) and where a name straddles one of the parser's 256-byte reads."""
    pad = "# " + "é" * 120 + "\n"  # 242 bytes: the name below straddles byte 256
    source = (
        pad
        + "def überlange_funktion_mit_namen(x):\n"
        + "    return helper_über_die_grenze(x) + zweiter_aufruf(x)\n"
    )
    head = len((pad + "def ").encode())
    assert head < 256 < head + len("überlange_funktion_mit_namen".encode())
    result = chunk_file("pkg/mod.py", source, ChunkSettings())
    (defined,) = [c for c in result.chunks if c.kind == "function"]
    assert defined.symbol == "überlange_funktion_mit_namen"
    assert defined.calls == ["helper_über_die_grenze", "zweiter_aufruf"]


def test_the_windows_of_one_run_are_those_of_its_rows() -> None:
    """A long function's windows are cut without listing its rows (one run); they are the ones
    the general path cuts from the same rows given as two adjacent runs."""
    for first in (0, 7):
        for last in range(first + 1, first + 80):
            for size in (1, 2, 5, 30):
                for overlap in range(size):
                    one = chunk._windows([(first, last)], size, overlap)
                    two = chunk._windows([(first, first), (first + 1, last)], size, overlap)
                    assert one == two, (first, last, size, overlap)
