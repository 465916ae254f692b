"""Prompt assembly: budget, merging, left-out notes, truncation, redaction, citations."""

from __future__ import annotations

import math
import random
import re

import pytest

from codeask.config import LLMSettings
from codeask.core.ask.prompt import (
    SYSTEM_PROMPT,
    TOKEN_SCALE,
    ContextBlock,
    EditorContext,
    build_prompt,
    estimate_tokens,
    merge_blocks,
    prompt_budget,
)
from codeask.core.source.redact_outbound import REDACTED, redact_secrets


def code(start: int, end: int, tag: str = "x") -> str:
    """Distinct, recognisable source lines for the given line range."""
    return "\n".join(f"{tag}_line_{n} = compute({n})" for n in range(start, end + 1))


def block(
    path: str = "src/app.py",
    start: int = 1,
    end: int = 10,
    score: float = 1.0,
    symbol: str = "f",
    kind: str = "function",
    text: str | None = None,
) -> ContextBlock:
    return ContextBlock(
        path=path,
        start_line=start,
        end_line=end,
        language="python",
        symbol=symbol,
        kind=kind,
        text=code(start, end, path.split("/")[-1].split(".")[0]) if text is None else text,
        score=score,
    )


def user_text(prompt_messages: list[dict[str, str]]) -> str:
    assert [m["role"] for m in prompt_messages] == ["system", "user"]
    return prompt_messages[1]["content"]


SMALL = LLMSettings(context_tokens=2048, max_tokens=256)


# ---------------------------------------------------------------- basics and citations


def test_system_prompt_sets_the_rules() -> None:
    p = build_prompt("what does f do?", [block()], SMALL)
    system = p.messages[0]["content"]
    assert system == SYSTEM_PROMPT
    assert "only from" in system
    assert "path:line" in system
    assert "not enough" in system


def test_block_header_and_fence() -> None:
    p = build_prompt("q", [block("pkg/mod.py", 40, 42, symbol="Parser.parse")], SMALL)
    text = user_text(p.messages)
    assert "pkg/mod.py:40-42 (python, Parser.parse)\n```python\nmod_line_40 = compute(40)\n" in text
    assert "mod_line_42 = compute(42)\n```" in text
    assert p.sources[0].path == "pkg/mod.py"
    assert text.rstrip().endswith("## Question\nq")


def test_line_numbers_on_request() -> None:
    blk = block("pkg/mod.py", 99, 101)
    p = build_prompt("q", [blk], SMALL, line_numbers=True)
    text = user_text(p.messages)
    assert "pkg/mod.py:99-101 (python, f)\n```python\n 99| mod_line_99 = compute(99)\n" in text
    assert "101| mod_line_101 = compute(101)\n```" in text
    plain = build_prompt("q", [blk], SMALL)
    assert p.prompt_tokens > plain.prompt_tokens  # numbers cost tokens


def test_single_line_block_cites_path_line() -> None:
    p = build_prompt("q", [block("a.py", 7, 7)], SMALL)
    assert "a.py:7 (python, f)" in user_text(p.messages)


def test_fence_grows_when_the_code_contains_backticks() -> None:
    md = "Example:\n```\nprint(1)\n```"
    p = build_prompt("q", [block("README.md", 1, 4, text=md, kind="section")], SMALL)
    assert "````python\n" in user_text(p.messages)


def test_sources_are_in_prompt_order_best_first() -> None:
    blocks = [block("a.py", score=0.2), block("b.py", score=0.9), block("c.py", score=0.5)]
    p = build_prompt("q", blocks, SMALL)
    assert [b.path for b in p.sources] == ["b.py", "c.py", "a.py"]
    text = user_text(p.messages)
    positions = [text.index(f"{b.path}:1-10") for b in p.sources]
    assert positions == sorted(positions)
    assert p.left_out == 0 and not p.truncated


# ---------------------------------------------------------------- merging


def test_overlapping_blocks_of_one_file_are_merged() -> None:
    a = block("m.py", 1, 10, score=0.5, symbol="f")
    b = block("m.py", 8, 20, score=0.9, symbol="g")
    p = build_prompt("q", [a, b], SMALL)
    assert len(p.sources) == 1
    merged = p.sources[0]
    assert (merged.start_line, merged.end_line, merged.score) == (1, 20, 0.9)
    assert merged.symbol == "f, g"
    lines = merged.text.split("\n")
    assert lines == [f"m_line_{n} = compute({n})" for n in range(1, 21)]  # each line once
    assert "m.py:1-20 (python, f, g)" in user_text(p.messages)


def test_adjacent_blocks_merge_and_contained_block_disappears() -> None:
    merged = merge_blocks(
        [block("m.py", 11, 20), block("m.py", 1, 10), block("m.py", 3, 5, score=2.0)]
    )
    assert len(merged) == 1
    assert (merged[0].start_line, merged[0].end_line, merged[0].score) == (1, 20, 2.0)
    assert merged[0].text == code(1, 20, "m")


def test_separate_ranges_and_other_files_stay_apart() -> None:
    merged = merge_blocks([block("m.py", 1, 10), block("m.py", 12, 20), block("n.py", 5, 9)])
    assert sorted((b.path, b.start_line) for b in merged) == [
        ("m.py", 1),
        ("m.py", 12),
        ("n.py", 5),
    ]


def test_history_blocks_are_never_merged() -> None:
    hunks = [block("m.py", 1, 10, kind="hunk"), block("m.py", 5, 12, kind="hunk")]
    assert len(merge_blocks(hunks)) == 2


# ---------------------------------------------------------------- budget


def test_budget_is_window_minus_answer_minus_margin() -> None:
    s = LLMSettings(context_tokens=8192, max_tokens=1024)
    assert 0 < prompt_budget(s) < 8192 - 1024
    assert 8192 - 1024 - prompt_budget(s) >= 64


def test_budget_respected_and_left_out_stated() -> None:
    blocks = [block(f"f{i}.py", 1, 40, score=1.0 - i / 100) for i in range(40)]
    p = build_prompt("how does it work?", blocks, SMALL)
    assert p.prompt_tokens <= prompt_budget(SMALL)
    assert 0 < len(p.sources) < 40
    assert p.left_out == 40 - len(p.sources)
    # best first: the kept ones are the top-scored ones
    assert [b.path for b in p.sources] == [f"f{i}.py" for i in range(len(p.sources))]
    assert f"{p.left_out} more retrieved code blocks were left out" in user_text(p.messages)


def test_prompt_tokens_is_the_estimate_of_what_is_sent() -> None:
    p = build_prompt("q", [block()], SMALL)
    sent = sum(estimate_tokens(m["content"]) for m in p.messages)
    assert sent <= p.prompt_tokens <= sent + 40


def test_huge_block_is_cut_into_the_room_the_smaller_ones_leave() -> None:
    huge = block("big.py", 1, 400, score=0.9)
    small = block("small.py", 1, 5, score=0.1)
    top = block("top.py", 1, 5, score=1.0)
    p = build_prompt("q", [top, huge, small], SMALL)
    assert [b.path for b in p.sources] == ["top.py", "big.py", "small.py"]
    assert p.left_out == 0 and p.truncated
    assert 1 < p.sources[1].end_line < 400
    assert p.prompt_tokens <= prompt_budget(SMALL)


def test_huge_best_block_leaves_room_for_the_others() -> None:
    huge = block("big.py", 1, 2000, score=1.0)
    others = [block(f"o{i}.py", 1, 5, score=0.5) for i in range(3)]
    p = build_prompt("q", [huge, *others], SMALL)
    assert [b.path for b in p.sources] == ["big.py", "o0.py", "o1.py", "o2.py"]
    assert p.sources[0].end_line > 20  # the cut keeps a real part of the best block
    assert p.prompt_tokens <= prompt_budget(SMALL)


@pytest.mark.parametrize("numbered", [False, True])
def test_huge_single_block_is_truncated_to_fit(numbered: bool) -> None:
    huge = block("big.py", 100, 2099, score=1.0)
    p = build_prompt("explain big", [huge], SMALL, line_numbers=numbered)
    assert p.truncated
    assert p.prompt_tokens <= prompt_budget(SMALL)
    assert len(p.sources) == 1 and p.left_out == 0
    src = p.sources[0]
    assert src.start_line == 100 and 100 < src.end_line < 2099
    text = user_text(p.messages)
    assert f"big.py:100-{src.end_line} (python, f)" in text
    last = f"big_line_{src.end_line} = compute({src.end_line})\n… [truncated]\n```"
    assert (f"{src.end_line}| " if numbered else "") + last in text
    assert "explain big" in text


def test_one_enormous_line_is_cut_too() -> None:
    minified = "var a=" + "1+" * 50_000 + "1;"
    p = build_prompt("q", [block("dist/app.min.js", 1, 1, text=minified)], SMALL)
    assert p.truncated
    assert p.prompt_tokens <= prompt_budget(SMALL)
    assert "[truncated]" in user_text(p.messages)


@pytest.mark.parametrize("seed", range(60))
def test_random_overfull_inputs_always_fit(seed: int) -> None:
    rng = random.Random(seed)
    settings = LLMSettings(
        context_tokens=rng.choice([1024, 2048, 4096, 8192]), max_tokens=rng.choice([64, 256, 512])
    )
    blocks = [
        block(f"f{rng.randrange(8)}.py", s, s + rng.randrange(1, 300), score=rng.random())
        for s in (rng.randrange(1, 500) for _ in range(rng.randrange(0, 30)))
    ]
    editor = EditorContext(
        path="cur.py", selection=code(1, rng.randrange(0, 600)), selection_start_line=1
    )
    sections = [("Git history", "commit abc\n" * rng.randrange(0, 2000))]
    p = build_prompt(
        "why? " * rng.randrange(1, 50),
        blocks,
        settings,
        editor=editor,
        extra_sections=sections,
        index_note="warming up",
        line_numbers=rng.random() < 0.5,
        redact=rng.random() < 0.5,
    )
    assert p.prompt_tokens <= prompt_budget(settings)
    assert len(p.sources) + p.left_out == len(merge_blocks(blocks))
    assert user_text(p.messages).count("## Question") == 1


# ---------------------------------------------------------------- editor, sections, notes


@pytest.mark.parametrize("numbered", [False, True])
def test_editor_context_is_included(numbered: bool) -> None:
    editor = EditorContext(
        path="src/cur.py",
        selection="def g():\n    return 1",
        selection_start_line=30,
        cursor_symbol="g",
    )
    p = build_prompt("what is g?", [block()], SMALL, editor=editor, line_numbers=numbered)
    text = user_text(p.messages)
    assert "Current file: src/cur.py" in text
    assert "Cursor is in: g" in text
    assert "Selected code (src/cur.py:30-31):" in text
    selected = "30| def g():\n31|     return 1" if numbered else "def g():\n    return 1"
    assert f"```\n{selected}\n```" in text


def test_huge_selection_is_cut_and_the_prompt_fits() -> None:
    editor = EditorContext(path="cur.py", selection=code(1, 5000), selection_start_line=1)
    p = build_prompt("q", [block()], SMALL, editor=editor)
    assert p.truncated and p.prompt_tokens <= prompt_budget(SMALL)
    assert "Selected code (cur.py:1-" in user_text(p.messages)
    assert [b.path for b in p.sources] == ["src/app.py"]  # the code blocks still get room


def test_empty_editor_context_adds_nothing() -> None:
    p = build_prompt("q", [block()], SMALL, editor=EditorContext())
    assert "## Editor" not in user_text(p.messages)


def test_extra_sections_follow_the_editor_context() -> None:
    editor = EditorContext(path="src/cur.py")
    sections = [("Git history", "abc123 fix parser"), ("Working tree diff", "+new line")]
    p = build_prompt("q", [block()], SMALL, editor=editor, extra_sections=sections)
    text = user_text(p.messages)
    i_editor = text.index("## Editor")
    i_history = text.index("## Git history\nabc123 fix parser")
    i_diff = text.index("## Working tree diff\n+new line")
    assert i_editor < i_history < i_diff < text.index("## Question")


def test_extra_sections_are_budgeted_and_not_starved() -> None:
    blocks = [block(f"f{i}.py", 1, 60) for i in range(30)]
    history = "\n".join(f"commit {i:040x} tweak" for i in range(2000))
    p = build_prompt("q", blocks, SMALL, extra_sections=[("Git history", history)])
    text = user_text(p.messages)
    assert "## Git history\ncommit " in text
    assert p.truncated
    assert p.prompt_tokens <= prompt_budget(SMALL)


def test_index_note_is_stated() -> None:
    note = "the index is still warming up: 40% embedded"
    p = build_prompt("q", [block()], SMALL, index_note=note)
    assert note in user_text(p.messages)


def test_no_context_still_makes_a_valid_prompt() -> None:
    p = build_prompt("what is x?", [], SMALL)
    assert p.sources == [] and p.left_out == 0
    assert user_text(p.messages).endswith("## Question\nwhat is x?")


# ---------------------------------------------------------------- redaction


def mixed(n: int, alphabet: str = "aZ3kQ9mX7pL2wR5tY8") -> str:
    """A deterministic token body of n characters (no literal token in the source)."""
    return "".join(alphabet[i * 7 % len(alphabet)] for i in range(n))


def placeholders(text: str) -> int:
    return text.count(REDACTED) + text.count("«redacted:")


@pytest.mark.parametrize(
    "text",
    [
        'password = "hunter2"',
        "db_password: str = 'pa55'",
        '{"client_secret": "abc"}',
        'authToken="abc"',
        "connect(api_key='k-123')",
        "export DB_PASSWORD=s3cr3t",
        "API_TOKEN=abcd1234efgh",
        "password: hunter2",
        "key = AKIA" + mixed(16, "QZ7RT3VX2MB5WKJ4"),
        "x = 'AIza" + mixed(35) + "'",
        "gh = 'ghp_" + mixed(36) + "'",
        "pat = github_pat_" + mixed(82),
        "slack = 'xoxb-1234567890-1234567890" + mixed(24) + "'",
        "openai = 'sk-proj-" + mixed(74) + "T3BlbkFJ" + mixed(74) + "'",
        'url = "postgres://bob:pw123@db.internal/x"',
    ],
)
def test_secrets_are_redacted(text: str) -> None:
    clean, count = redact_secrets(text)
    assert count == 1
    assert placeholders(clean) == 1
    for secret in ("hunter2", "pa55", "s3cr3t", "AKIAQ", "ghp_", "xoxb-", "sk-proj", "pw123"):
        assert secret not in clean


def test_private_key_block_redacted_and_surroundings_kept() -> None:
    pem = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAKCAQ\n"
        "-----END RSA PRIVATE KEY-----\nafter"
    )
    clean, count = redact_secrets(pem)
    kept = "-----BEGIN RSA PRIVATE KEY-----\n{0}\n{0}\n-----END RSA PRIVATE KEY-----"
    assert clean == "before\n" + kept.format("«redacted:private-key»") + "\nafter"
    assert count == 2  # one per body line: line numbers never move


def test_gcp_service_account_json_redacted() -> None:
    sa = (
        '{"type": "service_account", "private_key_id": "0123abcd",\n'
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n"}'
    )
    clean, count = redact_secrets(sa)
    assert "MIIEv" not in clean and "0123abcd" not in clean
    assert count == 2
    assert '"type": "service_account"' in clean


@pytest.mark.parametrize(
    "text",
    [
        "token = get_token()",
        'tokenizer = "bert-base"',
        'max_tokens = "12"',
        "TOKEN_TTL = 3600",
        "password: str",
        "SECRET_KEY = settings.secret_key",
        'if password == "":',
        "def check_password(pw): ...",
    ],
)
def test_ordinary_code_is_not_redacted(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_build_prompt_redacts_all_context_when_asked() -> None:
    secret_block = block("settings.py", 1, 2, text='API_KEY = "abcd1234"\nDEBUG = True')
    editor = EditorContext(path="x.py", selection="password = 'hunter2'", selection_start_line=3)
    sections = [("Working tree diff", "+TOKEN='ghp_" + mixed(36) + "'")]
    p = build_prompt("q", [secret_block], SMALL, editor=editor, extra_sections=sections,
                     redact=True)  # fmt: skip
    text = user_text(p.messages)
    assert "abcd1234" not in text and "hunter2" not in text and "ghp_" not in text
    assert placeholders(text) == 3 and p.redactions == 3
    assert "DEBUG = True" in text
    assert REDACTED in p.sources[0].text


def test_build_prompt_does_not_redact_by_default() -> None:
    secret_block = block("settings.py", 1, 1, text='API_KEY = "abcd1234"')
    p = build_prompt("q", [secret_block], SMALL)
    assert 'API_KEY = "abcd1234"' in user_text(p.messages) and p.redactions == 0


# ---------------------------------------------------------------- estimate


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("", 0),
        ("x", 1),
        ("return", 1),
        ("getUserName", 3),  # get User Name
        ("HTTPServer", 3),  # HTT P Server
        ("x = 42", 4),  # x = 4 2  (a single space is free)
        ("a\n    b", 3),  # newline + indent is one piece
        ("    ", 1),
    ],
)
def test_estimate_tokens_counts_token_sized_pieces(text: str, pieces: int) -> None:
    assert estimate_tokens(text) == math.ceil(pieces * TOKEN_SCALE)


def test_estimate_is_additive_enough_for_budgeting() -> None:
    text = code(1, 200)
    assert estimate_tokens(text) <= sum(estimate_tokens(line) + 1 for line in text.split("\n"))


def test_left_out_note_is_singular_for_one_block() -> None:
    blocks = [block("a.py", 1, 3000, score=1.0), block("b.py", 1, 3000, score=0.5)]
    p = build_prompt("q", blocks, SMALL)
    assert [b.path for b in p.sources] == ["a.py"] and p.left_out == 1
    assert re.search(r"\b1 more retrieved code block was left out", user_text(p.messages))
