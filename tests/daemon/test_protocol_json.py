"""The wire's JSON without the json module (daemon/protocol.py, to keep `re` out of every
forwarded command) must be json's: the same bytes written, the same values read, the same
documents refused."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from codeask.daemon import protocol

TEXTS = [
    "",
    "plain",
    'quote " and backslash \\',
    "controls \x00 \x01 \x1f \x7f \t \n \r",
    "ünïcödé ☃ 😀 \u2028 \u202e",
    "lone \udce9 \ud800 surrogates",
    "a" * 10_000,
]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice(TEXTS) + "".join(chr(rng.randrange(0x110000)) for _ in range(3))
    if kind == 1:
        return rng.choice([None, True, False])
    if kind == 2:
        return rng.randint(-(1 << 70), 1 << 70)
    if kind == 3:
        return rng.choice([0.5, -1e300, 3.0, 1e-7, 0.1 + 0.2, -0.0, float("inf")])
    if kind == 4:
        return rng.randint(-5, 5)
    if kind == 5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 6:
        return tuple(random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {rng.choice(TEXTS)[:5] + str(n): random_value(rng, depth + 1) for n in range(3)}


def test_what_is_written_is_json_dumps_byte_for_byte() -> None:
    rng = random.Random(29)
    request = {
        "protocol": 1,
        "args": {"query": TEXTS[5], "k": None, "root": ["a", "b"], "json": True, "v": 2},
        "environment": {"HOME": "/root", "CODEASK_X": TEXTS[4]},
    }
    for value in [request, *TEXTS, None, True, 0, -3, [], {}, [[]], {"": {}}, {1: "a", None: 2}]:
        assert protocol.encode(value) == json.dumps(value, separators=(",", ":")).encode()
    for _ in range(500):
        value = {"v": random_value(rng)}
        assert protocol.encode(value) == json.dumps(value, separators=(",", ":")).encode()


def test_indented_it_is_json_dumps_with_indent_byte_for_byte() -> None:
    """`codeask search --json` (codeask/search_view.py) is written with `indent=2`."""
    rng = random.Random(43)
    for value in [[], {}, [[]], {"": {}}, {"a": [1, {"b": []}]}, 1e-05, float("nan"), "x"]:
        assert protocol.encode(value, indent=2) == json.dumps(value, indent=2).encode()
    for _ in range(500):
        value = {"v": random_value(rng)}
        assert protocol.encode(value, indent=2) == json.dumps(value, indent=2).encode()


def test_what_is_read_is_json_loads() -> None:
    rng = random.Random(30)
    for _ in range(500):
        data = json.dumps({"v": random_value(rng)}).encode()  # spaces after separators too
        assert protocol.decode(data) == json.loads(data)
    for text in ['  {"a": [1, 2.5, -0, 1e3, "x"]}\n', "[NaN]", "[-Infinity]", '"\\ud800"', "7"]:
        assert repr(protocol.decode(text.encode())) == repr(json.loads(text))


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b'{"a":1}x', b'{"a":1} {}', b"[1,]", b"{'a': 1}", b"\xff", b"nul", b'"\x01"'],
)
def test_a_document_json_refuses_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(data)
    with pytest.raises(ValueError):
        protocol.decode(data)
