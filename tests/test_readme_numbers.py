"""README numbers go stale (issue 26, item 10): every measured number in README.md must sit in
a section that says when it was measured (a date), or come from a generator a test checks (the
settings table: tests/hostile/test_config_trust.py). A bound the code sets ("within 2 s",
"every 5 s") is behaviour, not a measurement."""

from __future__ import annotations

import re
from pathlib import Path

from codeask.config import settings_markdown

README = Path(__file__).resolve().parent.parent / "README.md"
#: A measurement: a number with a unit of time, size, rate or a test count.
MEASURED = re.compile(
    r"(?<!within )(?<!every )\b\d[\d,.]*\s?"
    r"(?:ms|s|min|minutes|MB|GB|KB|chunks/s|texts/s|passed|tests)\b(?!-)"
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) per `##`/`###` section, without code blocks and the generated table."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = text.replace(settings_markdown(), "")
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def test_every_measured_number_is_dated() -> None:
    undated = [
        (heading, MEASURED.search(body).group(0))  # type: ignore[union-attr]
        for heading, body in sections(README.read_text(encoding="utf-8"))
        if MEASURED.search(body) and not DATE.search(body)
    ]
    assert undated == [], "sections with measured numbers but no date (measured when?)"


def test_the_check_sees_numbers() -> None:
    body = "## A\n\nit took 12 s and 300 MB\n"
    assert sections(body) == [("## A", "\n\nit took 12 s and 300 MB\n")]
    assert MEASURED.search(body) and not DATE.search(body)
