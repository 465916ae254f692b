"""Loading the static tier is part of every one-shot hybrid search (issue 29: ≤ 0.4 CPU-s on
flask). The shipped tokenizer's character cap is a constant, so a load no longer builds its
29,528-token vocabulary as a dict (~25 ms); these tests hold the constant to the file and the
embedder to what the measured path gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from codeask.core.embedding.static import (
    MAX_TOKENS,
    PINNED_CHAR_CAP,
    STATIC_MODEL_DIR,
    StaticEmbedder,
    char_cap,
)

TEXTS = [
    "def load_config(path):\n    return yaml.safe_load(open(path))\n",
    "[UNK] ünïcödé ✓ and a \x00 byte",
    "word " * (MAX_TOKENS * 4),  # longer than the cap: the cut decides its vector
    "",
]


def test_the_pinned_cap_is_the_shipped_tokenizers() -> None:
    tokenizer = Tokenizer.from_file(str(STATIC_MODEL_DIR / "tokenizer.json"))
    assert char_cap(tokenizer.get_vocab()) == PINNED_CHAR_CAP


def test_the_pinned_load_embeds_as_the_measured_one(tmp_path: Path) -> None:
    copy = tmp_path / "potion"
    shutil.copytree(STATIC_MODEL_DIR, copy)
    pinned = StaticEmbedder()
    measured = StaticEmbedder(copy, pinned={})  # no pins: the vocabulary is read and measured
    assert (pinned._char_cap, pinned._unk_id) == (measured._char_cap, measured._unk_id)
    assert pinned._unk_id is not None
    assert np.array_equal(pinned.embed(TEXTS), measured.embed(TEXTS))
    assert pinned.token_ids(TEXTS) == measured.token_ids(TEXTS)
