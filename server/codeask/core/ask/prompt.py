"""Context assembly for "ask": retrieved code, editor state and extras under a token budget.

A leaf: imports nothing of ours except `config` and `records`. The prompt is two chat messages
(system + user). The user message holds, in order: an index note, the code blocks (best score
first, each under a `path:start-end (language, symbol)` header so the model can cite it), the
editor context, the extra sections, a note on what was left out, and finally the question.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from codeask.config import LLMSettings
from codeask.core.records import HISTORY_KINDS
from codeask.core.source import secrets
from codeask.core.source.names import display_path
from codeask.core.source.redact_outbound import redact_secrets

#: Pieces that are roughly one BPE token each: short letter runs (a camelCase hump, an acronym),
#: single digits, single punctuation marks, a newline with its indentation, runs of spaces.
#: A lone space is free: BPE merges it into the next word.
_TOKEN_PIECE = re.compile(
    r"[A-Z]{1,3}(?![a-z])|[A-Z]?[a-z]{1,6}|\d|\n[ \t]*|[ \t]{2,}|[^\sA-Za-z\d]"
)
#: Scale on the piece count. Measured against SmolLM2's tokenizer (49k vocab) on 64 samples of
#: code, config and prose: the estimate is median 1.22x the real count, at least 1.0x in 95% of
#: samples, 0.95x at worst (base64 blobs). Larger vocabularies (Qwen2.5, Llama 3) need fewer
#: tokens, so there it errs higher. A flat chars/3.2 ranged 0.54x-1.37x on the same samples.
TOKEN_SCALE = 1.1
#: Tokens each chat message costs in the chat template (role markers, separators).
MESSAGE_OVERHEAD = 8
#: Tokens kept free beyond the answer: the estimate's error margin (a fixed part plus 5%).
SAFETY_TOKENS = 64
#: The `## Index` note at most: which tiers answered and each vector tier's counts (digits cost
#: a token each; ~74 for six-digit counts).
INDEX_NOTE_TOKENS = 96
SAFETY_FRACTION = 0.05
#: Room reserved for the closing notes (left-out count, truncation note).
NOTES_TOKENS = 48
#: Share of the budget held back for extra sections so code blocks cannot starve them.
SECTIONS_SHARE = 0.25
#: Below this many free tokens a block is not worth truncating to fit.
MIN_PARTIAL_TOKENS = 48
CODE_HEADER = "## Code context\n\n"
TRUNCATED_MARK = "… [truncated]"

SYSTEM_PROMPT = """\
You are codeask, an assistant that answers questions about the user's code base.
Rules:
- Answer only from the code and notes given in the user message. Do not invent files, \
functions or behaviour that are not shown.
- Each code block has a header `path:start-end`; its first line is line `start` of that file. \
Cite the code you rely on as `path:line` or `path:start-end`.
- If the given context is not enough to answer, say so plainly and say what is missing; \
do not guess.
- Be concise. Prefer short explanations and small code excerpts."""


@dataclass
class ContextBlock:
    """One retrieved piece of code to show the model."""

    path: str
    start_line: int
    end_line: int
    language: str
    symbol: str
    kind: str
    text: str
    score: float


@dataclass
class EditorContext:
    """What the editor adds: current file, selection, cursor symbol (all optional)."""

    path: str | None = None
    selection: str = ""
    selection_start_line: int = 0
    cursor_symbol: str = ""


@dataclass
class Prompt:
    """The assembled chat request and what went into it (the sources are what the answer cites)."""

    messages: list[dict[str, str]]
    sources: list[ContextBlock]
    left_out: int
    prompt_tokens: int
    truncated: bool
    redactions: int = 0
    """Secrets replaced by a placeholder (known formats always; named literals when `redact`)."""


@dataclass
class _Parts:
    """The user message under construction, and its running token estimate."""

    budget: int
    numbered: bool
    used: int = 0
    truncated: bool = False
    redactions: int = 0
    sections: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- tokens


def estimate_tokens(text: str) -> int:
    """Token estimate without a tokenizer: count token-sized pieces (see `_TOKEN_PIECE`).

    About 20 MB/s; errs high by ~20% on code so a budgeted prompt fits the real window.
    """
    return math.ceil(len(_TOKEN_PIECE.findall(text)) * TOKEN_SCALE)


def prompt_budget(settings: LLMSettings) -> int:
    """Tokens the whole prompt may use: the window minus the answer minus a safety margin."""
    window = settings.context_tokens
    margin = SAFETY_TOKENS + int(window * SAFETY_FRACTION)
    return max(0, window - settings.max_tokens - margin)


def truncate_to_tokens(text: str, tokens: int) -> str:
    """Cut text to about `tokens` at a line boundary (mid-line only for one huge line); mark it."""
    if estimate_tokens(text) <= tokens:
        return text
    room = tokens - estimate_tokens(TRUNCATED_MARK) - 1
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = estimate_tokens(line) + 1
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    if not kept:
        kept = [_cut_line(text.split("\n", 1)[0], room)]
    return "\n".join([*kept, TRUNCATED_MARK]) if kept[0] else TRUNCATED_MARK


def _cut_line(line: str, tokens: int) -> str:
    """The longest prefix of one line within `tokens` (binary search on the estimate)."""
    lo, hi = 0, len(line)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(line[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return line[:lo]


# ---------------------------------------------------------------- merging


def _lines(block: ContextBlock) -> list[str]:
    """The block's lines (a trailing newline does not make an extra empty line)."""
    return block.text.removesuffix("\n").split("\n")


def _mergeable(a: ContextBlock, b: ContextBlock) -> bool:
    """Same file, overlapping or adjacent lines, and both real file text (not history)."""
    if a.path != b.path or not a.path or a.kind in HISTORY_KINDS or b.kind in HISTORY_KINDS:
        return False
    return b.start_line <= a.end_line + 1


def _merge_two(a: ContextBlock, b: ContextBlock) -> ContextBlock:
    """Join b (starting at or after a) onto a, keeping each line once."""
    if b.end_line > a.end_line:
        tail = _lines(b)[a.end_line + 1 - b.start_line :]
        text = "\n".join([*_lines(a), *tail])
    else:
        text = a.text
    symbols = [s for s in dict.fromkeys([a.symbol, b.symbol]) if s]
    best = a if a.score >= b.score else b
    return ContextBlock(
        path=a.path,
        start_line=a.start_line,
        end_line=max(a.end_line, b.end_line),
        language=a.language or b.language,
        symbol=", ".join(symbols),
        kind=best.kind,
        text=text,
        score=max(a.score, b.score),
    )


def merge_blocks(blocks: Sequence[ContextBlock]) -> list[ContextBlock]:
    """Merge overlapping/adjacent blocks of one file, so no line is shown (and paid for) twice."""
    ordered = sorted(blocks, key=lambda b: (b.path, b.start_line, b.end_line))
    merged: list[ContextBlock] = []
    for block in ordered:
        if merged and _mergeable(merged[-1], block):
            merged[-1] = _merge_two(merged[-1], block)
        else:
            merged.append(block)
    return sorted(merged, key=lambda b: (-b.score, b.path, b.start_line))


# ---------------------------------------------------------------- rendering


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks inside the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _numbered(text: str, first_line: int) -> str:
    """Prefix lines with their numbers (not the cut mark). Costs ~6 tokens a line."""
    lines = text.removesuffix("\n").split("\n")
    mark = [TRUNCATED_MARK] if len(lines) > 1 and lines[-1] == TRUNCATED_MARK else []
    lines = lines[: len(lines) - len(mark)]
    width = len(str(first_line + len(lines) - 1))
    numbered = [f"{first_line + i:>{width}}| {line}" for i, line in enumerate(lines)]
    return "\n".join(numbered + mark)


def citation(block: ContextBlock) -> str:
    """`path:line` or `path:start-end`, the form the model is told to cite."""
    if block.start_line == block.end_line:
        return f"{block.path}:{block.start_line}"
    return f"{block.path}:{block.start_line}-{block.end_line}"


def render_block(block: ContextBlock, numbered: bool = False) -> str:
    """Header `path:start-end (language, symbol)` and a fenced code block."""
    detail = ", ".join(x for x in (block.language, block.symbol) if x)
    header = f"{citation(block) if block.path else block.kind} ({detail})"
    body = block.text.removesuffix("\n")
    if numbered and block.start_line > 0:
        body = _numbered(body, block.start_line)
    fence = _fence(body)
    return f"{header}\n{fence}{block.language}\n{body}\n{fence}"


def _render_editor(editor: EditorContext, selection: str, numbered: bool) -> str:
    """The editor's state as a section; empty when the editor told us nothing."""
    lines: list[str] = []
    path = display_path(editor.path or "")  # a newline in a name must not forge prompt lines
    if path:
        lines.append(f"Current file: {path}")
    if editor.cursor_symbol:
        lines.append(f"Cursor is in: {editor.cursor_symbol}")
    if selection:
        start = editor.selection_start_line
        body = selection.removesuffix("\n")
        end = start + len(body.removesuffix(TRUNCATED_MARK).rstrip("\n").split("\n")) - 1
        where = f" ({path}:{start}-{end})" if path and start > 0 else ""
        body = _numbered(body, start) if numbered and start > 0 else body
        fence = _fence(body)
        lines.append(f"Selected code{where}:\n{fence}\n{body}\n{fence}")
    return "## Editor\n" + "\n".join(lines) if lines else ""


# ---------------------------------------------------------------- assembly


def _add(parts: _Parts, text: str) -> None:
    """Append a section to the user message and count its tokens."""
    parts.sections.append(text)
    parts.used += estimate_tokens(text) + 1


def _fit(parts: _Parts, text: str, room: int) -> str:
    """Text cut down to `room` tokens (marking the prompt truncated when cut)."""
    if estimate_tokens(text) <= room:
        return text
    parts.truncated = True
    return truncate_to_tokens(text, room)


def _redacted(parts: _Parts, text: str, redact: bool) -> str:
    """Redact known secrets always (editor text never went through the index), and secret-named
    literals too when asked; count what was replaced."""
    clean, n = redact_secrets(text) if redact else secrets.redact(text)
    parts.redactions += n
    return clean


def _cost(parts: _Parts, block: ContextBlock) -> int:
    """Tokens the rendered block adds to the message (with its separator)."""
    return estimate_tokens(render_block(block, parts.numbered)) + 1


def _take_blocks(
    parts: _Parts, blocks: list[ContextBlock], room: int
) -> tuple[list[ContextBlock], int]:
    """Whole blocks best-first while they fit, then the best skipped one cut into what is left.

    When the best block alone is too big, half the room is held for a cut of it, so one huge
    function neither vanishes nor pushes out every other relevant block.
    """
    taken: list[ContextBlock] = []
    skipped: list[ContextBlock] = []
    used, held = estimate_tokens(CODE_HEADER) + 1, 0
    for i, block in enumerate(blocks):
        cost = _cost(parts, block)
        if used + held + cost <= room:
            taken.append(block)
            used += cost
        else:
            held = (room - used) // 2 if i == 0 else held
            skipped.append(block)
    if skipped and room - used >= MIN_PARTIAL_TOKENS:
        taken.append(_truncate_block(parts, skipped[0], room - used))
        parts.truncated = True
    taken.sort(key=lambda b: -b.score)
    if taken:
        _add(parts, CODE_HEADER + "\n\n".join(render_block(b, parts.numbered) for b in taken))
    return taken, len(blocks) - len(taken)


def _truncate_block(parts: _Parts, block: ContextBlock, tokens: int) -> ContextBlock:
    """The block cut to fit `tokens` once rendered; end_line follows the kept lines."""
    body_room = tokens - _cost(parts, replace(block, text="")) - 2
    while True:
        text = truncate_to_tokens(block.text, max(1, body_room))
        kept = len(text.removesuffix(TRUNCATED_MARK).rstrip("\n").split("\n"))
        end = min(block.end_line, block.start_line + max(0, kept - 1))
        cut = replace(block, text=text, end_line=end)
        if _cost(parts, cut) <= tokens or body_room <= 1:
            return cut
        body_room = int(body_room * 0.85)


def _take_sections(parts: _Parts, sections: Sequence[tuple[str, str]], room: int) -> None:
    """Extra sections in the caller's order, the last one cut to the room left."""
    for title, text in sections:
        rendered = f"## {title}\n{text}"
        left = room - estimate_tokens(rendered) - 1
        if left >= 0:
            _add(parts, rendered)
            room = left
        elif room >= MIN_PARTIAL_TOKENS:
            _add(parts, _fit(parts, rendered, room - 1))
            room = 0
        else:
            parts.truncated = True


def _notes(left_out: int, truncated: bool) -> str:
    """The closing note that tells the model the context is partial."""
    notes = []
    if left_out:
        what = "block was" if left_out == 1 else "blocks were"
        notes.append(f"{left_out} more retrieved code {what} left out to fit the budget.")
    if truncated:
        notes.append("Some context was truncated (marked '[truncated]').")
    return "## Note\n" + " ".join(notes) if notes else ""


def build_prompt(
    question: str,
    blocks: list[ContextBlock],
    settings: LLMSettings,
    *,
    editor: EditorContext | None = None,
    extra_sections: Sequence[tuple[str, str]] = (),
    redact: bool = False,
    index_note: str = "",
    line_numbers: bool = False,
) -> Prompt:
    """Assemble system + user messages within `prompt_budget(settings)`.

    Priority when the budget is tight: the question, the editor context, then code blocks
    best-score-first (with a share held back for the extra sections), then the extra sections.
    Known secret formats are always replaced in everything taken from files (blocks, selection,
    sections), whatever the endpoint; `redact` also blanks literals assigned to secret-looking
    names. The question is left as typed.
    `line_numbers` prefixes every code line with its number: exact `path:line` citations, but
    ~6 tokens a line (digits are single tokens), so about half as much code fits.
    """
    budget = prompt_budget(settings)
    parts = _Parts(budget=budget, numbered=line_numbers)
    parts.used = estimate_tokens(SYSTEM_PROMPT) + 2 * MESSAGE_OVERHEAD
    question_text = "## Question\n" + _fit(parts, question.strip(), max(16, budget // 4))
    parts.used += estimate_tokens(question_text) + NOTES_TOKENS
    if index_note:
        _add(parts, _fit(parts, f"## Index\n{index_note}", INDEX_NOTE_TOKENS))
    editor_text = _editor_text(parts, editor, redact)
    sections = [(t, _redacted(parts, s, redact)) for t, s in extra_sections]
    merged = merge_blocks([replace(b, text=_redacted(parts, b.text, redact)) for b in blocks])
    free = max(0, budget - parts.used - estimate_tokens(editor_text))
    wanted = sum(estimate_tokens(f"## {t}\n{s}") + 1 for t, s in sections)
    reserve = min(wanted, int(free * SECTIONS_SHARE))
    taken, left_out = _take_blocks(parts, merged, free - reserve)
    if editor_text:
        _add(parts, editor_text)
    _take_sections(parts, sections, max(0, budget - parts.used))
    notes = _notes(left_out, parts.truncated)
    user = "\n\n".join([*parts.sections, *([notes] if notes else []), question_text])
    tokens = estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(user) + 2 * MESSAGE_OVERHEAD
    return Prompt(
        messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
        sources=taken,
        left_out=left_out,
        prompt_tokens=tokens,
        truncated=parts.truncated,
        redactions=parts.redactions,
    )


def _editor_text(parts: _Parts, editor: EditorContext | None, redact: bool) -> str:
    """The editor section, its selection redacted and held to half the free budget."""
    if editor is None:
        return ""
    free = parts.budget - parts.used
    room = free // 2 - estimate_tokens(_render_editor(editor, "x", parts.numbered))
    if parts.numbered:
        room = room * 2 // 3  # the line numbers come on top
    selection = _redacted(parts, editor.selection, redact)
    if selection and room < MIN_PARTIAL_TOKENS:
        selection, parts.truncated = "", True
    text = _render_editor(editor, _fit(parts, selection, room), parts.numbered)
    if estimate_tokens(text) + 1 > free:
        parts.truncated = True
        return ""
    return text
