"""The user config read without tomllib (daemon/light_toml.py): whatever it reads, it reads as
tomllib does; whatever tomllib refuses, or it is not sure of, it leaves to tomllib (None)."""

from __future__ import annotations

import random
import tomllib

import pytest

from codeask.daemon.light_toml import loads

READ = [
    "",
    "\n\n# only a comment\n",
    "[daemon]\nenabled = true\n",
    "[daemon]\r\nenabled = false\r\nidle_seconds = 600\r\n",
    "# mine\n[llm]\nmodel = \"qwen2.5-coder:7b\"  # local\nendpoint = 'http://127.0.0.1:8080/v1'\n"
    "\n[ daemon ]   # the daemon\n  enabled=true\nidle_seconds = 0\n",
    "top = 1\n[daemon]\nenabled = true#no space\n",
    '[llm]\nname = "ünï ☃ # not a comment"\n[daemon]\nenabled = true\n',
    "[a]\n[b]\nx = ''\n",
    "[daemon]\nenabled = true",  # no final newline
]
#: Documents it leaves to tomllib: valid TOML it does not read, and invalid TOML.
LEFT = [
    "[daemon]\nenabled = True\n",  # invalid
    "[daemon]\nenabled = true\n[daemon]\n",  # a table twice: invalid
    "[daemon]\nenabled = true\nenabled = false\n",  # a key twice: invalid
    "daemon = 1\n[daemon]\n",  # invalid
    "[daemon]\nidle_seconds = 010\n",  # leading zero: invalid
    "[daemon]\nidle_seconds = 1_000\n",
    "[daemon]\nidle_seconds = +5\n",
    "[daemon]\nidle_seconds = 1.5\n",
    "[daemon.sub]\nx = 1\n",
    "[[daemon]]\nenabled = true\n",
    "daemon.enabled = true\n",
    '"daemon" = 1\n',
    "[llm]\nheaders = { a = 1 }\n",
    '[llm]\nstop = [\n  "[daemon]",\n]\n[daemon]\nenabled = true\n',
    '[llm]\nprompt = """\n[daemon]\nenabled = false\n"""\n',
    '[llm]\nname = "a\\"b"\n',
    "[llm]\nname = 'a\\b'\n",
    '[llm]\nname = "a" "b"\n',
    '[llm]\nname = "unterminated\n',
    "[daemon]\nenabled = true x\n",
    "[daemon]]\n",
    "[daemon]\nenabled = true\r",  # a lone carriage return: invalid
    "[daemon]\x0cenabled = true\n",
    "[daemon]\nenabled = \x7f\n",
    "\ufeff[daemon]\nenabled = true\n",
    "= 1\n",
    "[]\n",
    "when = 2024-01-01\n",
]


@pytest.mark.parametrize("text", READ, ids=repr)
def test_what_it_reads_is_tomllibs_reading(text: str) -> None:
    assert loads(text) == tomllib.loads(text)


@pytest.mark.parametrize("text", LEFT, ids=repr)
def test_what_it_is_not_sure_of_is_left_to_tomllib(text: str) -> None:
    assert loads(text) is None


def test_random_documents_read_the_same_or_not_at_all() -> None:
    pieces = [
        "[daemon]", "[llm]", "[ daemon ]", "[[x]]", "[a.b]", "enabled = true", "enabled=false",
        "idle_seconds = 600", "idle_seconds = 0", "n = 007", "x = 1.5", "s = \"a # b\"",
        "s = 'c'", "s = \"\"", "s = \"x\\ty\"", "k = [1, 2]", "k = [", "]", "# c", "", "  ",
        "t = true # c", "t = true x", "\"q\" = 1", "a.b = 1", "s = \"\"\"", "=", "x =",
        "enabled = true\r", "ü = 1", "s = \"ü\"",
    ]  # fmt: skip
    rng = random.Random(29)
    taken = 0
    for _ in range(5000):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 7)))
        light = loads(text)
        if light is None:
            continue
        taken += 1
        assert light == tomllib.loads(text), text  # tomllib raising here fails the test too
    assert taken > 500, taken
