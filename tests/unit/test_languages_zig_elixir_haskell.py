"""Zig, Elixir and Haskell are chunked by their grammars (core/source/languages.py), not cut into
60-line windows: functions, class-like containers and tests with their names, parents, doc
comments and calls.

- Zig: `fn`, `const X = struct/enum/union {...}`, a function returning `type` (a generic type:
  the struct it returns holds its methods), `test "..."` blocks; `///` is the docstring.
- Elixir: everything is a call, so query patterns find `defmodule`/`def`/`defp`/`defmacro`,
  ExUnit's `describe`/`test` and capture their names (@name); `@doc`/`@moduledoc` are the
  docstrings (@doc, @head_doc); the clauses of one function are one chunk.
- Haskell: a function is its type signature and all its equations; `data`, `newtype`, `class`
  and `instance` (named by the type) are class-like; `-- |` Haddock is the docstring, also for
  the first declaration, whose comment the grammar keeps at the end of the imports.

The expected values below are read off the snippets (1-based, inclusive lines).
"""

from __future__ import annotations

import pytest

from codeask.config import ChunkSettings
from codeask.core.records import Chunk
from codeask.core.source.chunk import ChunkResult, chunk_file
from codeask.core.source.languages import language_for_path

SETTINGS = ChunkSettings()


def chunks_of(path: str, text: str) -> ChunkResult:
    """Chunk, and check that chunks are sorted, hold source lines and cover every non-blank
    line (so a definition found or missed never drops code from the index)."""
    result = chunk_file(path, text, SETTINGS)
    lines = text.split("\n")
    starts = [c.start_line for c in result.chunks]
    assert starts == sorted(starts)
    covered: set[int] = set()
    for c in result.chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        if c.kind != "class":  # a class's text skips its members' lines
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        covered.update(range(c.start_line, c.end_line + 1))
    missing = [i + 1 for i, line in enumerate(lines) if line.strip() and i + 1 not in covered]
    assert missing == []
    return result


def shapes(result: ChunkResult) -> list[tuple[str, str, str, int, int]]:
    """(kind, parent, symbol, first line, last line) of every chunk, in order."""
    return [(c.kind, c.parent, c.symbol, c.start_line, c.end_line) for c in result.chunks]


def find(result: ChunkResult, symbol: str, kind: str | None = None) -> Chunk:
    """The one chunk with this symbol (and kind)."""
    hits = [c for c in result.chunks if c.symbol == symbol and kind in (None, c.kind)]
    assert len(hits) == 1, shapes(result)
    return hits[0]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("lib/std/array_list.zig", "zig"),
        ("build.ZIG", "zig"),
        ("lib/plug/conn.ex", "elixir"),
        ("test/plug/conn_test.exs", "elixir"),
        ("src/XMonad/Core.hs", "haskell"),
    ],
)
def test_the_three_languages_have_a_grammar(path: str, language: str) -> None:
    spec = language_for_path(path)
    assert spec is not None and spec.name == language


# --------------------------------------------------------------------------- zig

ZIG = """\
//! A fixed-capacity stack.
const std = @import("std");
const Allocator = std.mem.Allocator;

/// A stack of at most `capacity` items.
pub fn BoundedStack(comptime T: type, comptime capacity: usize) type {
    return struct {
        const Self = @This();

        items: [capacity]T = undefined,
        len: usize = 0,

        /// Pushes one item; fails when full.
        pub fn push(self: *Self, item: T) error{Full}!void {
            if (self.len == capacity) return error.Full;
            self.items[self.len] = item;
            self.len += 1;
        }

        pub fn pop(self: *Self) ?T {
            if (self.len == 0) return null;
            self.len -= 1;
            return self.items[self.len];
        }
    };
}

/// Where a token came from.
/// Byte offsets, end exclusive.
pub const Span = struct {
    start: usize,
    end: usize,

    pub fn len(span: Span) usize {
        return span.end - span.start;
    }
};

pub const Mode = enum { fast, safe };

// Sums a slice.
fn sum(values: []const u32) u64 {
    var total: u64 = 0;
    for (values) |v| total += v;
    return total;
}

test "push then pop" {
    var stack: BoundedStack(u8, 2) = .{};
    try stack.push(1);
    try std.testing.expectEqual(@as(?u8, 1), stack.pop());
    _ = sum(&.{1});
}

test {
    std.testing.refAllDecls(@This());
}
"""


def test_zig_functions_containers_and_tests() -> None:
    result = chunks_of("lib/stack.zig", ZIG)
    assert result.language == "zig" and result.fallback_reason == ""
    assert shapes(result) == [
        ("module", "", "", 1, 3),  # `//!` and the imports
        ("class", "", "BoundedStack", 5, 26),  # returns a type: a generic container
        ("method", "BoundedStack", "push", 13, 18),
        ("method", "BoundedStack", "pop", 20, 24),
        ("class", "", "Span", 28, 37),
        ("method", "Span", "len", 34, 36),
        ("class", "", "Mode", 39, 39),
        ("function", "", "sum", 41, 46),  # the `//` comment above joins the chunk
        ("function", "", "push then pop", 48, 53),  # the test's name, without quotes
        ("function", "", "", 55, 57),  # an anonymous test block
    ]


def test_zig_a_generic_type_keeps_its_own_lines_and_lends_its_methods() -> None:
    stack = find(chunks_of("lib/stack.zig", ZIG), "BoundedStack", "class")
    assert "return struct {" in stack.text
    assert "items: [capacity]T = undefined," in stack.text
    assert "pub fn push" not in stack.text  # the methods are their own chunks


def test_zig_doc_comments_are_docstrings_and_plain_comments_are_not() -> None:
    result = chunks_of("lib/stack.zig", ZIG)
    assert find(result, "BoundedStack").docstring == "A stack of at most `capacity` items."
    assert find(result, "push").docstring == "Pushes one item; fails when full."
    span_doc = "Where a token came from.\nByte offsets, end exclusive."
    assert find(result, "Span").docstring == span_doc  # one docstring from two `///` lines
    assert find(result, "pop").docstring == ""
    summed = find(result, "sum")
    assert summed.docstring == "" and summed.text.startswith("// Sums a slice.")


def test_zig_calls_plain_and_through_a_field() -> None:
    result = chunks_of("lib/stack.zig", ZIG)
    assert find(result, "push then pop").calls == [
        "BoundedStack",
        "push",
        "expectEqual",
        "pop",
        "sum",
    ]  # `@as` is a builtin, not a call of the project's
    assert find(result, "push").calls == []
    assert find(result, "", "function").calls == ["refAllDecls"]


# --------------------------------------------------------------------------- elixir

ELIXIR = '''\
defmodule Shop.Cart do
  @moduledoc """
  A shopping cart: items and their quantities.
  """

  alias Shop.Item

  defstruct items: %{}

  @doc "Adds `qty` of `item` to the cart."
  @spec add(t, Item.t(), pos_integer) :: t
  def add(cart, item, qty \\\\ 1)

  def add(%__MODULE__{} = cart, %Item{id: id}, qty) when qty > 0 do
    items = Map.update(cart.items, id, qty, &(&1 + qty))
    %{cart | items: items}
  end

  def add(cart, _item, _qty), do: cart

  # Total price of the cart.
  def total(cart, prices) do
    Enum.reduce(cart.items, 0, fn {id, qty}, acc -> acc + price(prices, id) * qty end)
  end

  @deprecated "Use total/2"
  def sum(cart), do: total(cart, %{})

  defp price(prices, id) do
    if Map.has_key?(prices, id), do: Map.fetch!(prices, id), else: 0
  end
end
'''


def test_elixir_module_and_its_functions() -> None:
    result = chunks_of("lib/shop/cart.ex", ELIXIR)
    assert result.language == "elixir" and result.fallback_reason == ""
    assert shapes(result) == [
        ("class", "", "Shop.Cart", 1, 32),
        ("method", "Shop.Cart", "add", 10, 19),  # @doc, @spec, the head and both clauses
        ("method", "Shop.Cart", "total", 21, 24),
        ("method", "Shop.Cart", "sum", 26, 27),
        ("method", "Shop.Cart", "price", 29, 31),
    ]


def test_elixir_clauses_of_one_function_are_one_chunk() -> None:
    add = find(chunks_of("lib/shop/cart.ex", ELIXIR), "add")
    assert add.text.count("  def add(") == 3
    assert add.text.startswith('  @doc "Adds')


def test_elixir_doc_attributes_and_comments_are_docstrings() -> None:
    result = chunks_of("lib/shop/cart.ex", ELIXIR)
    assert find(result, "Shop.Cart").docstring == "A shopping cart: items and their quantities."
    assert find(result, "add").docstring == "Adds `qty` of `item` to the cart."
    assert find(result, "total").docstring == "Total price of the cart."
    assert find(result, "sum").docstring == ""  # @deprecated is not a doc
    assert find(result, "price").docstring == ""


def test_elixir_calls_leave_out_definitions_attributes_and_branches() -> None:
    result = chunks_of("lib/shop/cart.ex", ELIXIR)
    add_calls = find(result, "add").calls
    assert "update" in add_calls
    assert not {"def", "doc", "spec", "items"} & set(add_calls)  # `cart.items` reads a field
    assert find(result, "total").calls == ["reduce", "price"]
    assert find(result, "price").calls == ["has_key?", "fetch!"]  # not `if`, not `defp`


EXUNIT = """\
defmodule Shop.CartTest do
  use ExUnit.Case, async: true

  alias Shop.Cart

  describe "add/3" do
    test "adds a new item" do
      cart = Cart.add(%Cart{}, %Shop.Item{id: 1}, 2)
      assert cart.items == %{1 => 2}
    end

    test "ignores a zero quantity" do
      assert Cart.add(%Cart{}, %Shop.Item{id: 1}, 0).items == %{}
    end
  end
end
"""


def test_exunit_tests_are_named_by_their_description() -> None:
    result = chunks_of("test/shop/cart_test.exs", EXUNIT)
    assert shapes(result) == [
        ("class", "", "Shop.CartTest", 1, 16),
        ("class", "Shop.CartTest", "add/3", 6, 15),
        ("method", "add/3", "adds a new item", 7, 10),
        ("method", "add/3", "ignores a zero quantity", 12, 14),
    ]
    assert find(result, "adds a new item").calls == ["add", "assert"]


# --------------------------------------------------------------------------- haskell

HASKELL = """\
{-# LANGUAGE GeneralizedNewtypeDeriving #-}
-- | Stacks of windows.
module Data.Stack
  ( Stack (..)
  , focusUp
  , integrate
  ) where

import Data.Maybe (fromMaybe)

-- | A cursor into a non-empty list of windows.
data Stack a = Stack
  { focus :: !a   -- ^ the focused window
  , up    :: [a]  -- ^ windows above, nearest first
  , down  :: [a]  -- ^ windows below
  } deriving (Show, Eq)

-- | Move the focus to the window above, wrapping around.
focusUp :: Stack a -> Stack a
focusUp (Stack t (l:ls) rs) = Stack l ls (t:rs)
focusUp (Stack t [] rs)     = Stack x xs []
  where (x:xs) = reverse (t:rs)

-- | The windows in order, top to bottom.
integrate :: Stack a -> [a]
integrate (Stack x l r) = reverse l ++ x : r

class Container f where
  size :: f a -> Int
  size = length . toList
  toList :: f a -> [a]

instance Container Stack where
  toList = integrate
  size s = length (integrate s)

infixr 5 +++
(+++) :: Stack a -> [a] -> Stack a
s +++ xs = s { down = down s ++ xs }
"""


def test_haskell_functions_types_classes_and_instances() -> None:
    result = chunks_of("src/Data/Stack.hs", HASKELL)
    assert result.language == "haskell" and result.fallback_reason == ""
    assert shapes(result) == [
        ("module", "", "", 1, 9),  # pragma, module header, imports
        ("class", "", "Stack", 11, 16),
        ("function", "", "focusUp", 18, 22),
        ("function", "", "integrate", 24, 26),
        ("class", "", "Container", 28, 31),
        ("method", "Container", "size", 29, 30),  # the default, with its signature
        ("class", "", "Stack", 33, 33),  # an instance is named by its type
        ("method", "Stack", "toList", 34, 34),
        ("method", "Stack", "size", 35, 35),
        ("function", "", "+++", 37, 39),  # fixity and signature above an infix definition
    ]


def test_haskell_signature_and_equations_are_one_chunk() -> None:
    focus_up = find(chunks_of("src/Data/Stack.hs", HASKELL), "focusUp")
    assert focus_up.text.splitlines()[1] == "focusUp :: Stack a -> Stack a"
    assert focus_up.text.count("focusUp (Stack t") == 2
    assert focus_up.text.endswith("  where (x:xs) = reverse (t:rs)")
    assert focus_up.calls == ["Stack", "reverse"]


def test_haskell_haddock_is_the_docstring_without_its_marker() -> None:
    result = chunks_of("src/Data/Stack.hs", HASKELL)
    # The first declaration's comment sits inside the imports node; it is still its own.
    data, instance = (c for c in result.chunks if c.symbol == "Stack" and c.kind == "class")
    assert data.docstring == "A cursor into a non-empty list of windows."
    assert instance.docstring == ""
    assert find(result, "focusUp").docstring == (
        "Move the focus to the window above, wrapping around."
    )
    assert find(result, "integrate").docstring == "The windows in order, top to bottom."


def test_haskell_a_function_type_is_not_a_function() -> None:
    """`a -> b` parses as a `function` node too: a record field of that type is no definition."""
    text = "data Handlers = Handlers\n  { onKey :: Int -> IO ()\n  , onQuit :: IO ()\n  }\n"
    result = chunks_of("src/Handlers.hs", text)
    assert shapes(result) == [("class", "", "Handlers", 1, 4)]


# --------------------------------------------------------------------------- syntax errors

BROKEN = {
    "src/broken.zig": (
        'const std = @import("std");\n\npub fn good(a: u32) u32 {\n    return a + 1;\n}\n\n'
        "pub fn broken(a: u32 u32 {\n    return a +;\n}\n"
    ),
    "lib/broken.ex": (
        "defmodule Broken do\n  def good(a), do: a + 1\n\n  def broken(a do\n    a +\n  end\n"
        "\n  def after_it, do: :ok\nend\n"
    ),
    "src/Broken.hs": (
        "module Broken where\n\ngood :: Int -> Int\ngood a = a + 1\n\nbroken a = = a +\n\n"
        "after :: Int\nafter = 2\n"
    ),
}


@pytest.mark.parametrize("path", sorted(BROKEN))
def test_a_file_with_a_syntax_error_still_yields_its_definitions(path: str) -> None:
    result = chunks_of(path, BROKEN[path])
    assert result.fallback_reason.startswith("syntax errors")
    assert "kept the definitions that parsed" in result.fallback_reason
    good = find(result, "good")
    assert good.kind == "function" and "a + 1" in good.text
    assert all(c.kind != "window" for c in result.chunks)


# --------------------------------------------------------------------------- the generic change


def test_a_comment_parked_at_the_end_of_the_previous_node_still_heads_the_definition() -> None:
    """chunk.py's `_node_before`: the Haskell case above, and Ruby's, whose grammar keeps the
    comment above a module's first class outside the module body."""
    text = (
        "module Rack\n  # Sets the content-type header\n  # when it is missing.\n"
        "  class ContentType\n    def call(env)\n      @app.call(env)\n    end\n  end\nend\n"
    )
    content_type = find(chunks_of("lib/rack/content_type.rb", text), "ContentType")
    assert (content_type.start_line, content_type.end_line) == (2, 8)
    assert content_type.docstring == "Sets the content-type header\nwhen it is missing."
