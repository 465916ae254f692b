"""Tokenize a few short texts (a search query) without building the whole WordPiece vocabulary.

Building potion's tokenizer from its tokenizer.json (29,528 tokens) took ~40 ms, a tenth of a
one-shot `codeask search` (issue 29), to tokenize one short question. WordPiece splits each
word greedily into the longest vocabulary entry that starts it, then the longest `##` entry
that continues it: it only ever looks up pieces of the word itself. So a tokenizer whose
vocabulary holds just the entries the texts' words can reach (every piece `word[i:j]`, with
the `##` prefix when i > 0, that is in the vocabulary; plus the special tokens) gives the
same ids for those texts as the full one. The pieces are looked up in the vocabulary read by
msgspec (~8 ms); the small tokenizer is built from the same document with only the vocabulary
cut down, so its normalizer, pre-tokenizer, added tokens and model settings are the file's.

Words are found with the file's own normalizer and pre-tokenizer on the whole text. The real
pipeline first splits out added tokens ([CLS], [UNK], ...); their boundaries are punctuation,
where the pre-tokenizer splits anyway, so the words it sees are among these (a superset of
pieces only adds entries that are never looked up). tests/unit/test_static_reach.py holds
the two tokenizers to the same ids on real source files and hostile text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def reachable(document: dict[str, Any]) -> bool:
    """Whether a tokenizer.json document is one this module can cut down: a WordPiece model
    whose special tokens are all in its vocabulary and start and end with punctuation."""
    model = document.get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        return False
    for token in document.get("added_tokens") or []:
        content = token.get("content", "")
        if vocab.get(content) != token.get("id") or not _punctuation_ends(content):
            return False
    return model.get("unk_token") in vocab


def _punctuation_ends(content: str) -> bool:
    return bool(content) and not content[0].isalnum() and not content[-1].isalnum()


class ReachTokenizers:
    """Builds, for given texts, a tokenizer holding only the vocabulary their words reach."""

    def __init__(self, document: dict[str, Any], max_tokens: int) -> None:
        model = document["model"]
        self.vocab: dict[str, int] = model["vocab"]
        self._prefix: str = model.get("continuing_subword_prefix") or ""
        self._max_word: int = int(model.get("max_input_chars_per_word", 100))
        self._longest = max(map(len, self.vocab)) if self.vocab else 0
        self._max_tokens = max_tokens
        self.unk_id: int = self.vocab[model["unk_token"]]
        self._always = {model["unk_token"]: self.unk_id}
        for token in document.get("added_tokens") or []:
            self._always[token["content"]] = token["id"]
        self._skeleton = {**document, "model": {**model, "vocab": {}}}
        self._words = self._build(self._always)

    def for_texts(self, texts: Sequence[str]) -> Tokenizer:
        """A tokenizer that gives `texts` the ids the full vocabulary would."""
        reach = dict(self._always)
        for text in texts:
            for word in self._words_of(text):
                self._add_pieces(word, reach)
        return self._build(reach)

    @property
    def specials(self) -> list[str]:
        """The unknown token and the added ones: text holding one is not plain words."""
        return list(self._always)

    def split(self, word: str) -> tuple[int, ...]:
        """WordPiece's ids for one word as its model splits it: the longest entry that starts
        the word, then the longest `##` entry that continues it, and so on; the unknown token
        alone when some part matches nothing or the word is over `max_input_chars_per_word`
        (a query's words without building a tokenizer: wordpiece_ascii.py)."""
        if len(word) > self._max_word:
            return (self.unk_id,)
        vocab, longest, ids, start = self.vocab, self._longest, [], 0
        while start < len(word):
            head = "" if start == 0 else self._prefix
            for end in range(min(len(word), start + longest), start, -1):
                found = vocab.get(head + word[start:end])
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                return (self.unk_id,)
        return tuple(ids)

    def _words_of(self, text: str) -> list[str]:
        normalizer, pre_tokenizer = self._words.normalizer, self._words.pre_tokenizer
        normalized = normalizer.normalize_str(text) if normalizer is not None else text
        if pre_tokenizer is None:
            return normalized.split()
        return [word for word, _ in pre_tokenizer.pre_tokenize_str(normalized)]

    def _add_pieces(self, word: str, reach: dict[str, int]) -> None:
        """Every vocabulary entry WordPiece could look up while splitting `word`."""
        if len(word) > self._max_word:
            return  # the whole word becomes [UNK]: nothing is looked up
        vocab, longest = self.vocab, self._longest
        for start in range(len(word)):
            head = "" if start == 0 else self._prefix
            for end in range(start + 1, min(len(word), start + longest) + 1):
                piece = head + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    reach[piece] = found

    def _build(self, vocab: dict[str, int]) -> Tokenizer:
        from tokenizers import Tokenizer

        document = {**self._skeleton, "model": {**self._skeleton["model"], "vocab": vocab}}
        tokenizer = Tokenizer.from_str(json.dumps(document))
        tokenizer.enable_truncation(self._max_tokens)
        tokenizer.no_padding()
        return tokenizer
