"""Which tree-sitter grammar parses a file, and which of its node types make chunks.

A table of data, not per-language code: `chunk.py` reads these node-type lists and runs one
generic algorithm over every grammar. Adding a language means adding one `LanguageSpec`.
Node types unknown to the bundled grammar are skipped when the query is built, so a grammar
version that renamed a node loses that node, not the language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

#: Comment nodes of the C family (line `//` and block `/* */` share one node type).
_C_COMMENTS = ("comment",)
#: JavaScript-style callees (`f()`, `a.b()`, `new F()`).
_JS_CALLS = (("call_expression", "function"), ("new_expression", "constructor"))
#: A JS/TS function bound to a name by a declaration or a class field (`const f = () => {}`).
_JS_FN_VALUE = "[(arrow_function) (function_expression) (generator_function)]"
_JS_FUNCTION_PATTERNS = (
    f"(variable_declarator name: (identifier) value: {_JS_FN_VALUE})",
    f"(field_definition value: {_JS_FN_VALUE})",
    f"(public_field_definition value: {_JS_FN_VALUE})",
)
#: CommonJS and prototype code binds functions by assignment (`exports.parse = function`,
#: `Router.prototype.route = function route`, `res.send = function send`): named by the
#: property, or by the function's own name when the property is `module.exports` itself.
_CJS_FUNCTION_PATTERNS = (
    "(assignment_expression left: (member_expression property: (property_identifier) @name)"
    f' right: {_JS_FN_VALUE} (#not-eq? @name "exports"))',
    "(assignment_expression left: (member_expression property: (property_identifier) @_p)"
    ' right: (function_expression name: (identifier) @name) (#eq? @_p "exports"))',
)
_JS_FUNCTIONS = ("function_declaration", "generator_function_declaration", "method_definition")
#: Parents that belong to a JS definition: `export`, `const ... =`.
_JS_WRAPPERS = ("export_statement", "lexical_declaration", "variable_declaration")
_TS_CLASSES = (
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "type_alias_declaration",
)
#: C and C++ record types count only with a body (`struct s *p;` is a use, not a definition).
_C_CLASS_PATTERNS = (
    "(struct_specifier body: (_))",
    "(union_specifier body: (_))",
    "(enum_specifier body: (_))",
)

#: A shell function that dispatches on a `case` (`tool() { case $1 in install) ...`) is a table
#: of subcommands: class-like, so each arm is a chunk named by its pattern, as a reader asks for
#: it ("how does the tool install a version"); a script's top-level `case` arms are chunks too.
_SH_FUNCTION = '(function_definition body: (_) @_body (#{}? @_body "\\n[ \\t]*case[ \\t]"))'

#: Zig: a function returning `type` builds a type (`fn ArrayList(T) type { return struct {..} }`),
#: so it is class-like and the methods of the struct it returns are its members.
_ZIG_FN = '(Decl (FnProto function: (IDENTIFIER) @name (_) @_ret .) {} (#{}? @_ret "type"))'
#: Elixir's definitions are calls of a macro; the name is the head's target (`def f(x) when g`).
_EX_HEAD = (
    "[(call target: (identifier) @name) (identifier) @name"
    " (binary_operator left: [(call target: (identifier) @name) (identifier) @name])]"
)
_EX_DEFS = '"def" "defp" "defmacro" "defmacrop" "defguard" "defguardp" "defdelegate" "defn" "defnp"'
#: `@doc "..."` / `@moduledoc ~S"""..."""`: the string's text (no quotes) is the docstring.
_EX_DOC = (
    '(unary_operator operand: (call target: (identifier) @_attr (#eq? @_attr "{0}")'
    " (arguments . [(string . (quoted_content) @{1}) (sigil . (quoted_content) @{1})])))"
)
_EX_MODULES = '"defmodule" "defprotocol" "defimpl"'
#: Calls of the words that define, import, annotate (`@doc "..."` is a call of `doc`) or
#: branch (`if`, `case`), not calls a reader follows.
_EX_NOT_CALLS = (
    "^(def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate|defn|defnp|defmodule|"
    "defprotocol|defimpl|defstruct|defexception|defoverridable|alias|import|require|use|"
    "test|describe|setup|setup_all|quote|unquote|doc|moduledoc|typedoc|spec|type|typep|"
    "opaque|callback|macrocallback|impl|behaviour|derive|deprecated|since|compile|"
    "case|cond|if|unless|for|with|receive|try)$"
)


@dataclass(frozen=True)
class LanguageSpec:
    """One grammar-backed language: how its syntax tree maps onto chunks."""

    name: str
    """Our language name (what `Chunk.language` holds)."""
    grammar: str
    """tree-sitter-language-pack grammar name."""
    extensions: tuple[str, ...]
    """Lower-case file suffixes, with the dot."""
    function_types: tuple[str, ...] = ()
    """Node types that define a function (a method when nested in a class-like node)."""
    class_types: tuple[str, ...] = ()
    """Class-like node types: class, struct, impl, interface, trait, module, enum."""
    function_patterns: tuple[str, ...] = ()
    """Extra query patterns whose whole match is a function (e.g. `const f = () => {}`).
    A pattern may capture the name as `@name` where no field holds it (Elixir `def f(x)`);
    captures starting with `_` only serve predicates (`(#eq? @_kw "def")`)."""
    class_patterns: tuple[str, ...] = ()
    """Extra query patterns whose whole match is class-like (e.g. a C struct with a body);
    `@name` as in `function_patterns`."""
    wrapper_types: tuple[str, ...] = ()
    """Parents that belong to the definition they wrap: decorators, `export`, `template<>`."""
    prefix_types: tuple[str, ...] = ("comment",)
    """Preceding siblings directly above a definition that join its chunk (comments, attributes)."""
    comment_types: tuple[str, ...] = ("comment",)
    """Of the prefix types, the ones that are comments (they form the docstring)."""
    name_fields: tuple[str, ...] = ("name",)
    """Fields of a definition tried in order for its name; followed down to an identifier."""
    name_types: tuple[str, ...] = ()
    """Child node types holding the name, for grammars without a name field (Kotlin)."""
    default_names: tuple[tuple[str, str], ...] = ()
    """Names of definitions that have none in the source (Swift `init`)."""
    receiver_field: str = ""
    """Field holding a method receiver whose type is the parent (Go `func (s *S) f()`)."""
    docstring: str = "comment"
    """`comment`: the comment block directly above; `body_string`: first string in the body."""
    body_field: str = "body"
    """Field holding a definition's body (where a `body_string` docstring lives)."""
    call_types: tuple[tuple[str, str], ...] = ()
    """(call node type, field holding the callee); field '' means the first named child."""
    doc_patterns: tuple[str, ...] = ()
    """Query patterns capturing a docstring that is code, not a comment: `@doc` for the
    definition below it (Elixir `@doc "..."`, in the attribute block joined to its chunk),
    `@head_doc` for the definition it stands in (`@moduledoc "..."`, before any member)."""
    call_patterns: tuple[str, ...] = ()
    """Extra query patterns capturing a callee as `@call`, for calls the (type, field) pairs
    cannot tell from other nodes (Zig `f(x)` is an identifier followed by arguments)."""
    merge_clauses: bool = False
    """Consecutive functions of one name are clauses of one function (Haskell equations,
    Elixir `def` heads) and share one chunk."""


_TYPESCRIPT = LanguageSpec(
    name="typescript",
    grammar="typescript",
    extensions=(".ts", ".mts", ".cts"),
    function_types=_JS_FUNCTIONS,
    class_types=_TS_CLASSES,
    function_patterns=_JS_FUNCTION_PATTERNS,
    wrapper_types=_JS_WRAPPERS,
    prefix_types=("comment", "decorator"),
    name_fields=("name", "property"),
    call_types=_JS_CALLS,
)

LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec(
        name="python",
        grammar="python",
        extensions=(".py", ".pyi", ".pyw"),
        function_types=("function_definition",),
        class_types=("class_definition",),
        wrapper_types=("decorated_definition",),
        docstring="body_string",
        call_types=(("call", "function"),),
    ),
    LanguageSpec(
        name="javascript",
        grammar="javascript",
        extensions=(".js", ".mjs", ".cjs", ".jsx"),
        function_types=_JS_FUNCTIONS,
        class_types=("class_declaration",),
        function_patterns=_JS_FUNCTION_PATTERNS + _CJS_FUNCTION_PATTERNS,
        wrapper_types=(*_JS_WRAPPERS, "expression_statement"),
        prefix_types=("comment", "decorator"),
        name_fields=("name", "property"),
        call_types=_JS_CALLS,
    ),
    _TYPESCRIPT,
    replace(_TYPESCRIPT, name="tsx", grammar="tsx", extensions=(".tsx",)),
    LanguageSpec(
        name="go",
        grammar="go",
        extensions=(".go",),
        function_types=("function_declaration", "method_declaration"),
        class_patterns=("(type_spec type: [(struct_type) (interface_type)])",),
        wrapper_types=("type_declaration",),
        receiver_field="receiver",
        call_types=(("call_expression", "function"),),
    ),
    LanguageSpec(
        name="rust",
        grammar="rust",
        extensions=(".rs",),
        function_types=("function_item", "macro_definition"),
        class_types=("struct_item", "enum_item", "union_item", "trait_item", "impl_item"),
        prefix_types=("line_comment", "block_comment", "attribute_item"),
        comment_types=("line_comment", "block_comment"),
        name_fields=("name", "type"),
        call_types=(("call_expression", "function"), ("macro_invocation", "macro")),
    ),
    LanguageSpec(
        name="java",
        grammar="java",
        extensions=(".java",),
        function_types=(
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        ),
        class_types=(
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
        ),
        prefix_types=("line_comment", "block_comment"),
        comment_types=("line_comment", "block_comment"),
        call_types=(("method_invocation", "name"), ("object_creation_expression", "type")),
    ),
    LanguageSpec(
        name="c",
        grammar="c",
        extensions=(".c", ".h"),
        function_types=("function_definition",),
        class_patterns=_C_CLASS_PATTERNS,
        wrapper_types=("type_definition", "declaration"),
        comment_types=_C_COMMENTS,
        name_fields=("name", "declarator"),
        call_types=(("call_expression", "function"),),
    ),
    LanguageSpec(
        name="cpp",
        grammar="cpp",
        extensions=(".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp"),
        function_types=("function_definition",),
        class_patterns=(*_C_CLASS_PATTERNS, "(class_specifier body: (_))"),
        wrapper_types=(
            "template_declaration",
            "type_definition",
            "declaration",
            "field_declaration",
        ),
        comment_types=_C_COMMENTS,
        name_fields=("name", "declarator"),
        call_types=(("call_expression", "function"),),
    ),
    LanguageSpec(
        name="csharp",
        grammar="csharp",
        extensions=(".cs",),
        function_types=(
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "operator_declaration",
            "local_function_statement",
        ),
        class_types=(
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "record_struct_declaration",
        ),
        call_types=(("invocation_expression", "function"), ("object_creation_expression", "type")),
    ),
    LanguageSpec(
        name="ruby",
        grammar="ruby",
        extensions=(".rb", ".rake", ".gemspec"),
        function_types=("method", "singleton_method"),
        class_types=("class", "module"),
        call_types=(("call", "method"),),
    ),
    LanguageSpec(
        name="php",
        grammar="php",
        extensions=(".php", ".phtml"),
        function_types=("function_definition", "method_declaration"),
        class_types=(
            "class_declaration",
            "interface_declaration",
            "trait_declaration",
            "enum_declaration",
        ),
        call_types=(
            ("function_call_expression", "function"),
            ("member_call_expression", "name"),
            ("nullsafe_member_call_expression", "name"),
            ("scoped_call_expression", "name"),
        ),
    ),
    LanguageSpec(
        name="bash",
        grammar="bash",
        extensions=(".sh", ".bash", ".zsh"),
        function_patterns=(_SH_FUNCTION.format("not-match"), "(case_item value: (_) @name)"),
        class_patterns=(_SH_FUNCTION.format("match"),),
        call_types=(("command", "name"),),
    ),
    LanguageSpec(
        name="lua",
        grammar="lua",
        extensions=(".lua",),
        function_types=("function_declaration",),
        call_types=(("function_call", "name"),),
    ),
    LanguageSpec(
        name="kotlin",
        grammar="kotlin",
        extensions=(".kt", ".kts"),
        function_types=("function_declaration",),
        class_types=("class_declaration", "object_declaration"),
        prefix_types=("line_comment", "multiline_comment"),
        comment_types=("line_comment", "multiline_comment"),
        name_types=("type_identifier", "simple_identifier"),
        call_types=(("call_expression", ""),),
    ),
    LanguageSpec(
        name="scala",
        grammar="scala",
        extensions=(".scala", ".sc"),
        function_types=("function_definition",),
        class_types=(
            "class_definition",
            "object_definition",
            "trait_definition",
            "enum_definition",
        ),
        prefix_types=("comment", "block_comment"),
        comment_types=("comment", "block_comment"),
        call_types=(("call_expression", "function"),),
    ),
    LanguageSpec(
        name="swift",
        grammar="swift",
        extensions=(".swift",),
        function_types=("function_declaration", "init_declaration", "deinit_declaration"),
        class_types=("class_declaration", "protocol_declaration"),
        prefix_types=("comment", "multiline_comment"),
        comment_types=("comment", "multiline_comment"),
        default_names=(("init_declaration", "init"), ("deinit_declaration", "deinit")),
        call_types=(("call_expression", ""),),
    ),
    LanguageSpec(
        name="zig",
        grammar="zig",
        extensions=(".zig",),
        function_types=("TestDecl",),
        function_patterns=(
            _ZIG_FN.format("", "not-eq"),
            "(TestDecl [(STRINGLITERALSINGLE) (IDENTIFIER)] @name)",
        ),
        class_patterns=(
            "(Decl (VarDecl variable_type_function: (IDENTIFIER) @name"
            " (ErrorUnionExpr (SuffixExpr (ContainerDecl)))))",
            _ZIG_FN.format("(Block)", "eq"),
        ),
        prefix_types=("doc_comment", "line_comment"),
        comment_types=("doc_comment",),
        call_types=(("FieldOrFnCall", "function_call"),),
        call_patterns=("(SuffixExpr . (IDENTIFIER) @call . (FnCallArguments))",),
    ),
    LanguageSpec(
        name="elixir",
        grammar="elixir",
        extensions=(".ex", ".exs"),
        function_patterns=(
            f"(call target: (identifier) @_kw (#any-of? @_kw {_EX_DEFS}) (arguments . {_EX_HEAD}))",
            f"(call target: (identifier) @_kw (#any-of? @_kw {_EX_DEFS}))",
            '(call target: (identifier) @_kw (#eq? @_kw "test")'
            " (arguments . (string (quoted_content) @name)))",
        ),
        class_patterns=(
            f"(call target: (identifier) @_kw (#any-of? @_kw {_EX_MODULES})"
            " (arguments . (alias) @name))",
            f"(call target: (identifier) @_kw (#any-of? @_kw {_EX_MODULES}) (do_block))",
            '(call target: (identifier) @_kw (#eq? @_kw "describe")'
            " (arguments . (string (quoted_content) @name)) (do_block))",
        ),
        prefix_types=("comment", "unary_operator"),
        comment_types=("comment",),
        doc_patterns=(_EX_DOC.format("doc", "doc"), _EX_DOC.format("moduledoc", "head_doc")),
        call_patterns=(
            f'(call target: (identifier) @call (#not-match? @call "{_EX_NOT_CALLS}"))',
            "(call target: (dot right: (identifier) @call) (arguments))",  # not `conn.status`
        ),
        merge_clauses=True,
    ),
    LanguageSpec(
        name="haskell",
        grammar="haskell",
        extensions=(".hs",),
        # `function` is also the type `a -> b`: a binding is one with a name or an infix head.
        function_patterns=(
            "(function name: (_))",
            "(function name: (prefix_id (_) @name))",
            "(function !result (infix operator: (_) @name))",
            "(bind name: (_))",
            "(bind name: (prefix_id (_) @name))",
        ),
        class_types=("class", "instance", "data_type", "newtype"),
        class_patterns=("(instance patterns: (type_patterns . (_) @name))",),
        prefix_types=("comment", "haddock", "signature", "pragma", "fixity"),
        comment_types=("comment", "haddock"),
        call_types=(("apply", "function"),),
        merge_clauses=True,
    ),
)

_BY_EXTENSION: dict[str, LanguageSpec] = {
    ext: spec for spec in LANGUAGES for ext in spec.extensions
}

#: Every suffix a grammar parses, in `LANGUAGES` order: what makes a mentioned file name code
#: (query.py's path detection). Derived, so a language added above is code there too.
CODE_SUFFIXES: tuple[str, ...] = tuple(_BY_EXTENSION)

#: Editors' language ids (LSP `languageId`) that are not our language names, and the suffix
#: that gives a nameless buffer of theirs its grammar.
_EDITOR_SUFFIXES: dict[str, str] = {
    "typescriptreact": ".tsx",
    "javascriptreact": ".jsx",
    "shellscript": ".sh",
}

#: Languages without a chunking grammar, named for filters and display.
_PLAIN_BY_EXTENSION: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".txt": "text",
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".sql": "sql",
    ".tex": "latex",
    ".proto": "protobuf",
    ".mk": "make",
    ".cmake": "cmake",
    ".gradle": "groovy",
    ".vue": "vue",
    ".svelte": "svelte",
}

_PLAIN_BY_NAME: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "cmakelists.txt": "cmake",
}

#: Extension-less files that still have a grammar.
_GRAMMAR_BY_NAME: dict[str, str] = {"gemfile": "ruby", "rakefile": "ruby"}
_BY_NAME: dict[str, LanguageSpec] = {spec.name: spec for spec in LANGUAGES}


def suffix_for_language(language_id: str) -> str | None:
    """A suffix (with the dot) whose grammar parses `language_id`: one of our language names or
    an editor's id (`typescriptreact`); None when no grammar knows it."""
    if language_id in _EDITOR_SUFFIXES:
        return _EDITOR_SUFFIXES[language_id]
    spec = _BY_NAME.get(language_id)
    return spec.extensions[0] if spec is not None else None


def _base(rel: str) -> str:
    """Lower-case last path component (works for '\\' paths too)."""
    return PurePosixPath(rel.replace("\\", "/")).name.lower()


def _suffix(rel: str) -> str:
    """Lower-case suffix of the last path component."""
    return PurePosixPath(_base(rel)).suffix


def language_for_path(rel: str) -> LanguageSpec | None:
    """The grammar-backed language of a path, or None (markdown, rst and text have no grammar)."""
    spec = _BY_EXTENSION.get(_suffix(rel))
    if spec is None and _base(rel) in _GRAMMAR_BY_NAME:
        spec = _BY_NAME[_GRAMMAR_BY_NAME[_base(rel)]]
    return spec


#: A script's `#!` line: the interpreter, directly or through `env` (`#!/usr/bin/env -S bash`).
_SHEBANG = re.compile(r"#![ \t]*(?:\S*/)?(?:env[ \t]+(?:-\S*[ \t]+)*)?([A-Za-z]+)")
#: Interpreters whose scripts a grammar parses (`python3.11` → `python`: digits are dropped).
_GRAMMAR_BY_INTERPRETER: dict[str, str] = {
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "dash": "bash",
    "ksh": "bash",
    "python": "python",
    "ruby": "ruby",
    "node": "javascript",
    "lua": "lua",
}


def script_language(rel: str, text: str) -> LanguageSpec | None:
    """The language a file without a known suffix names on its `#!` line: `bin/tool`,
    `libexec/tool-install` and test scripts are often shell without `.sh`, and chunked as
    plain text they had no functions, no names and a prose file's demotion."""
    if language_for_path(rel) is not None or _suffix(rel) in _PLAIN_BY_EXTENSION:
        return None
    found = _SHEBANG.match(text[:200])
    name = _GRAMMAR_BY_INTERPRETER.get(found.group(1)) if found else None
    return _BY_NAME[name] if name else None


def has_grammar(language: str) -> bool:
    """Whether a language name (a file record's) is one a grammar chunks."""
    return language in _BY_NAME


def language_name(rel: str) -> str:
    """A name for any file: a grammar language, 'markdown', 'rst', a plain name, else 'text'."""
    spec = language_for_path(rel)
    if spec is not None:
        return spec.name
    base = _base(rel)
    if base in _PLAIN_BY_NAME:
        return _PLAIN_BY_NAME[base]
    if base.startswith("dockerfile"):
        return "dockerfile"
    return _PLAIN_BY_EXTENSION.get(_suffix(rel), "text")
