"""FTS5's BM25 over numpy postings: the lexical index itself, in memory or memory-mapped.

The chunk and whole-file tables are held as postings (term → rows and their column-weighted
frequencies) and scored with FTS5's formula (fts5_aux.c, `fts5Bm25Function`), which is what the
index answered with when it lived in SQLite FTS5:

    idf(t) = max(log((N - n_t + 0.5) / (n_t + 0.5)), 1e-6)
    score  = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 − b + b·|D| / avgdl)),   f = Σ_col w_col·tf_col

with k1 = 1.2, b = 0.75, |D| the row's tokens over all columns. Rows arrive already tokenized
(space-separated). A `LiveTable` is a few segments (`Postings`, built in memory or read through
a memory map from a segment file: storage/lexical/segment_file.py) plus the writes made since:
rows replaced or removed are masked, new rows sit in small extra segments, so a write costs
milliseconds. storage/lexical/disk.py keeps the segments on disk.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from codeask.core.runtime import resident
from codeask.core.storage.lexical.batch import Bodies, batch_postings, new_vocab
from codeask.core.storage.lexical.merge_runs import Run, merge_runs
from codeask.core.storage.lexical.packed import term_postings
from codeask.core.storage.lexical.ranked_vocab import RankedVocab
from codeask.core.storage.lexical.vocab import merge_vocabularies

if TYPE_CHECKING:
    from codeask.core.storage.lexical.packed import PackedFreqs, PackedRows

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
#: Postings of one term, and rows of the row space, taken at a time by a search: a common term's
#: float64 temporaries stay a few MB however long its list grows with the tree (issue 42).
SCORE_BLOCK = 65_536
#: Rows tokenized at a time by Postings.build (bounds the Python token lists alive at once).
BUILD_BATCH = 1024
#: ... and at most about this many characters of row text.
BUILD_CHARS = 2_000_000
#: Extra segments a LiveTable keeps before merging them into one (each costs a little per query).
MAX_SEGMENTS = 8
#: bm25 column weights of the chunk table: body, symbol (name + parent), path.
CHUNK_WEIGHTS = (1.0, 4.0, 2.0)
#: The whole-file table's: body 2.0, path 1.0 (as FTS5's `bm25(files_fts, 1.0, 2.0)` applied
#: them when the first weight went to its unindexed `file` column).
FILE_WEIGHTS = (2.0, 1.0)
_Arrays = list[np.ndarray]
#: What `collect` gathers: keys, vocabulary, term ids, rows, weighted tf, row lengths.
Collected = tuple[list[object], dict[str, int], _Arrays, _Arrays, _Arrays, _Arrays]
#: Term lookups a segment's dictionary remembers (~100 B each): a few dozen queries' terms.
MEMO_TERMS = 2048
#: Key lookups a column answers by searching its bytes before it builds a dict of every key: a
#: one-file edit looks up a key or two, and the dict of the kernel's 78k whole-file keys (~10 MB
#: in 78k small objects, made amid the walk's garbage) stayed in the daemon's held writer.
SCAN_LOOKUPS = 32
#: Places a search of the bytes may find `key` inside longer keys before the dict is built.
SCAN_HITS = 64


class StringColumn:
    """Strings back to back in one byte buffer (UTF-8) with where each starts: the term
    dictionary and the whole-file keys, in memory or read straight from a memory-mapped segment
    file (nothing decoded until asked). A dict of the terms held ~110 bytes per term in ~80k
    small objects (sphinx: 39k terms per table) and pinned allocator arenas after a build."""

    __slots__ = ("_base", "_blob", "_bounds", "_index", "_scans")

    def __init__(self, blob: bytes | mmap.mmap, bounds: np.ndarray, base: int = 0) -> None:
        """`bounds[i]`: where string i starts in `blob` after `base`; `bounds[-1]`: the end."""
        self._blob = blob
        self._base = base
        self._bounds = np.ascontiguousarray(bounds, dtype=np.int64).data.cast("B").cast("q")
        self._index: dict[bytes, int] | None = None
        self._scans = 0

    @classmethod
    def of(cls, strings: Sequence[str]) -> StringColumn:
        return cls.of_bytes([s.encode() for s in strings])

    @classmethod
    def of_bytes(cls, encoded: Sequence[bytes]) -> StringColumn:
        """From strings already encoded as UTF-8."""
        widths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        return cls(b"".join(encoded), np.concatenate(([0], np.cumsum(widths))))

    def raw(self, index: int) -> bytes:
        base = self._base
        return self._blob[base + self._bounds[index] : base + self._bounds[index + 1]]

    def __getitem__(self, index: int) -> str:
        return self.raw(index).decode()

    def __len__(self) -> int:
        return len(self._bounds) - 1

    def tolist(self) -> list[str]:
        """Every string (sliced from one read of the blob: a slice of the map per string cost
        ~0.1 s for the kernel's 78k file keys, paid by a writer's first one-file edit)."""
        return [raw.decode() for raw in self.raw_list()]

    def raw_list(self) -> list[bytes]:
        """Every string's UTF-8 bytes (one read of the blob, then slices of it)."""
        data, bounds = self.blob(), self.bounds().tolist()
        return [data[start:end] for start, end in pairwise(bounds)]

    def blob(self) -> bytes:
        """Every string's bytes, back to back."""
        return bytes(self._blob[self._base + self._bounds[0] : self._base + self._bounds[-1]])

    def bounds(self) -> np.ndarray:
        return np.asarray(self._bounds, dtype=np.int64) - self._bounds[0]

    def find(self, value: str) -> int | None:
        """Where `value` is (the last of equal strings): the first `SCAN_LOOKUPS` calls search
        the bytes, later ones a dict of the UTF-8 keys (whole-file keys, a writer's)."""
        raw = value.encode("utf-8", "surrogatepass")
        if self._index is None and self._scans < SCAN_LOOKUPS:
            self._scans += 1
            found = self._scan(raw)
            if found != -1:
                return found
        if self._index is None:
            self._index = {key: i for i, key in enumerate(self.raw_list())}
        return self._index.get(raw)

    def _scan(self, raw: bytes) -> int | None:
        """The last string equal to `raw`, searched for from the end of the bytes (None: not
        there; -1: more than `SCAN_HITS` places inside longer strings, the caller asks the
        dict)."""
        base, blob, width = self._base, self._blob, len(raw)
        bounds = np.frombuffer(self._bounds, dtype=np.int64)
        start, end = base + int(bounds[0]), base + int(bounds[-1])
        for _ in range(SCAN_HITS if width else 0):  # empty strings: the dict
            pos = blob.rfind(raw, start, end)
            if pos < 0:
                return None
            # the last string starting there (empty strings before it start there too)
            row = int(np.searchsorted(bounds, pos - base, side="right")) - 1
            if bounds[row] == pos - base and bounds[row + 1] == pos - base + width:
                return row
            end = pos + width - 1  # an earlier place, overlapping this one or not
        return -1


class TermSlices:
    """term → (start, end) of its postings: the sorted terms (a `StringColumn`) and where each
    one's postings start; a term is found by bisection (~17 byte-string slices, ~16 µs in
    Python, memory-mapped or not), then remembered: one query asks each segment about the same
    terms several times (document frequencies, chunk scores, file scores), and a big tree has
    dozens of segments (issue 42)."""

    __slots__ = ("_memo", "names", "starts")

    def __init__(self, names: StringColumn, starts: np.ndarray) -> None:
        """`names` sorted (byte order of UTF-8 = code point order, as Python compares
        strings); `starts[i]` where the postings of term i start, `starts[-1]` the end."""
        self.names = names
        self.starts = starts
        #: Terms looked up lately → their slice ((0, 0): absent); cleared past MEMO_TERMS.
        self._memo: dict[str, tuple[int, int]] = {}

    @classmethod
    def of(cls, terms: Sequence[str], starts: np.ndarray) -> TermSlices:
        return cls(StringColumn.of(terms), starts)

    def _find(self, term: str) -> int | None:
        wanted, names = term.encode(), self.names
        low, high = 0, len(names)
        while low < high:
            middle = (low + high) // 2
            if names.raw(middle) < wanted:
                low = middle + 1
            else:
                high = middle
        if low < len(names) and names.raw(low) == wanted:
            return low
        return None

    def get(self, term: str, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        found = self._memo.get(term)
        if found is None:
            at = self._find(term)
            found = (0, 0) if at is None else (int(self.starts[at]), int(self.starts[at + 1]))
            if len(self._memo) >= MEMO_TERMS:
                self._memo.clear()
            self._memo[term] = found
        return default if found == (0, 0) else found

    def terms(self) -> Iterator[str]:
        """Every term, in sorted order."""
        return (self.names[i] for i in range(len(self)))

    def __len__(self) -> int:
        return len(self.names)


def _batches(
    rows: Iterable[Sequence[object]], most: int, columns: int
) -> Iterator[list[Sequence[object]]]:
    """Rows in lists of at most `most` rows and BUILD_CHARS characters of text (whole files
    are ~100x a chunk: 1,024 of them held ~280 MB of tokens at once)."""
    chunk: list[Sequence[object]] = []
    size = 0
    for row in rows:
        chunk.append(row)
        size += sum(len(str(row[c] or "")) for c in range(1, columns + 1))
        if len(chunk) >= most or size >= BUILD_CHARS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def compact_freqs(freqs: np.ndarray) -> np.ndarray:
    """float32 if it holds every frequency exactly (half the bytes), else the float64 array."""
    narrow = freqs.astype(np.float32)
    return narrow if np.array_equal(narrow, freqs) else freqs


def _compact_keys(keys: list[object]) -> StringColumn | np.ndarray:
    """Integer keys as one int64 array (15k Python ints pin the allocator's arenas), others
    (paths) as one `StringColumn`."""
    if all(type(key) is int for key in keys):
        return np.asarray(keys, dtype=np.int64)
    return StringColumn.of([str(key) for key in keys])


def compact_lengths(lengths: np.ndarray) -> np.ndarray:
    """Row lengths (token counts) as uint32: they are read as float64 where they are scored."""
    return lengths.astype(np.uint32) if not len(lengths) or lengths.max() < 2**32 else lengths


@dataclass(eq=False)
class Postings:
    """One table as compressed rows: term → a slice of (row, weighted tf); in memory, or read
    through a memory map from a segment file (storage/lexical/segment_file.py)."""

    #: Row keys: an int64 array when every key is an int (chunk ids), else the paths.
    keys: StringColumn | np.ndarray
    #: Tokens per row (uint32; float64 if one ever held more).
    lengths: np.ndarray
    average: float
    slices: TermSlices
    #: Rows of each term's postings (int32); a mapped segment's decode the slice asked for.
    rows: np.ndarray | PackedRows
    #: Weighted term frequencies: float32 when that holds every one exactly (integer column
    #: weights, as here), else float64; read as float64 (`Segment.matches`).
    freqs: np.ndarray | PackedFreqs
    #: Sum of `lengths` (kept so a mapped segment never reads them all at open).
    total: float = -1.0
    #: Rows in key order (int keys): a key is found by bisection, no dict of every key.
    key_sort: np.ndarray | None = None
    #: The segment file's map (None in memory): a one-shot process gives its pages back.
    mapping: mmap.mmap | None = None

    def __post_init__(self) -> None:
        if self.total < 0:
            self.total = float(np.asarray(self.lengths, dtype=np.float64).sum())

    @classmethod
    def build(
        cls,
        rows: Iterable[Sequence[object]],
        weights: Sequence[float],
        batch: int = BUILD_BATCH,
        *,
        vocab: dict[str, int] | None = None,
        bodies: Bodies | None = None,
    ) -> Postings:
        """`rows`: (key, column text, column text, ...); each text is space-separated tokens.

        Batch by batch: C-level splitting and id lookups (`map`), a Python loop only over
        distinct tokens, numpy sums each batch's weighted (term, row) counts at once (a row
        lives in one batch, so the sums and their order are those of one pass over all rows),
        and only the postings are kept: the peak follows postings, not tokens (sphinx: +365 →
        ~+100 MB). 15k chunks, 1.5M tokens: ~0.3 s, all of it holding the GIL that hover and
        search threads need. `vocab` (a `new_vocab()`, empty) is left holding the terms;
        `bodies` collects the first column's (term, row, count) (lexical/file_postings.py)."""
        vocab = new_vocab() if vocab is None else vocab
        return cls.assemble(*collect(rows, weights, vocab, batch, bodies))

    @classmethod
    def assemble(
        cls,
        keys: list[object],
        vocab: dict[str, int],
        terms: list[np.ndarray],
        places: list[np.ndarray],
        freqs: list[np.ndarray],
        lengths: list[np.ndarray],
    ) -> Postings:
        """The batches' postings as one table, ids renumbered in term order (the slices bisect
        the terms) and sorted by term, then row: one pass's order."""
        ranked = RankedVocab.of(vocab)
        del vocab
        places_of = [ranked.rank[term] for term in terms]
        del terms
        return cls.ranked(keys, ranked, places_of, places, freqs, lengths)

    @classmethod
    def ranked(
        cls,
        keys: list[object],
        vocab: RankedVocab,
        terms: list[np.ndarray],
        places: list[np.ndarray],
        freqs: list[np.ndarray],
        lengths: list[np.ndarray],
    ) -> Postings:
        """`assemble` of terms given as their places in `vocab` (sorted once for a build's
        two tables: lexical/ranked_vocab.py); the table keeps the terms its postings use, of
        those a query can ask for (asked.py; the rows' lengths still count every token)."""
        term_of = np.concatenate(terms) if terms else np.zeros(0, np.int64)
        row_of = np.concatenate(places).astype(np.int32) if places else np.zeros(0, np.int32)
        freq = np.concatenate(freqs) if freqs else np.zeros(0)
        del terms, places, freqs
        asked = vocab.asked[term_of]
        if not asked.all():
            term_of, row_of, freq = term_of[asked], row_of[asked], freq[asked]
        del asked
        names, term_of = vocab.used(term_of)
        # one int64 key per (term, row): its stable argsort (timsort, which takes each batch's
        # runs of a term's rows as they are) is lexsort's order, ~2x cheaper
        order = np.argsort(term_of.astype(np.int64) * (len(keys) + 1) + row_of, kind="stable")
        row_of, freq = row_of[order], compact_freqs(freq[order])
        starts = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=len(names)), out=starts[1:])
        del term_of, order
        widths = np.concatenate(lengths).astype(np.float64) if lengths else np.zeros(0)
        average = float(widths.sum()) / max(len(keys), 1)
        slices = TermSlices(StringColumn.of_bytes(names), starts)
        return cls(_compact_keys(keys), compact_lengths(widths), average, slices, row_of, freq)

    def key_list(self) -> list[object]:
        """Every row's key as a plain Python object, in row order."""
        return list(self.keys.tolist())

    def keys_at(self, rows: list[int]) -> list[object]:
        """`key` of each row (plain Python objects)."""
        keys = self.keys
        if isinstance(keys, np.ndarray):
            return list(keys[rows].tolist())
        return [keys[row] for row in rows]

    def key(self, row: int) -> object:
        """One row's key as a plain Python object (an int, not a numpy scalar)."""
        found = self.keys[int(row)]
        return found.item() if isinstance(found, np.generic) else found

    def find(self, key: object) -> int | None:
        """The row of `key`, or None (masked or not: the caller checks)."""
        keys = self.keys
        if isinstance(keys, StringColumn):
            return keys.find(str(key)) if isinstance(key, str) else None
        if type(key) is not int or not len(keys):
            return None
        if key > self.highest_key():
            return None
        assert self.key_sort is not None
        at = int(np.searchsorted(keys, key, sorter=self.key_sort))
        if at < len(keys) and int(keys[self.key_sort[at]]) == key:
            return int(self.key_sort[at])
        return None

    def highest_key(self) -> int:
        """The largest int key (-1: none, or path keys): a first pass's new chunk ids are all
        above it, so its writes skip the lookup (`LiveTable.apply`)."""
        keys = self.keys
        if isinstance(keys, StringColumn) or not len(keys):
            return -1
        if self.key_sort is None:
            self.key_sort = np.argsort(keys, kind="stable")
        return int(keys[self.key_sort[-1]])

    def doc_frequency(self, term: str) -> int:
        """Rows containing the term (FTS5's fts5vocab `doc`)."""
        start, end = self.slices.get(term, (0, 0))
        return end - start

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[object, float]]:
        """(key, score) of the best `limit` rows matching any term, best first."""
        return LiveTable(self).search(terms, limit)


def collect(
    rows: Iterable[Sequence[object]],
    weights: Sequence[float],
    vocab: dict[str, int],
    batch: int = BUILD_BATCH,
    bodies: Bodies | None = None,
) -> Collected:
    """(keys, vocab, term ids, rows, weighted tf, row lengths) of `rows`, batch by batch (see
    `Postings.build`), before they are assembled into one table."""
    keys: list[object] = []
    weight_of = np.asarray(weights, dtype=np.float64)
    terms: list[np.ndarray] = []
    places: list[np.ndarray] = []
    freqs: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    for chunk in _batches(rows, batch, len(weights)):
        first = len(keys)
        keys.extend(row[0] for row in chunk)
        term, place, freq, total = batch_postings(chunk, vocab, weight_of, bodies, first)
        terms.append(term)
        places.append(place + first)
        freqs.append(freq)
        lengths.append(total)
    return keys, vocab, terms, places, freqs, lengths


@dataclass(eq=False)
class Segment:
    """Postings of some rows, and which of them a later write replaced or removed."""

    postings: Postings
    #: Tie order of each row (FTS5 breaks ties by rowid: chunk ids, or insertion order).
    order: np.ndarray
    #: A small segment: rows of writes since the base (merged with the other small ones).
    small: bool = False
    #: Its segment file once written (storage/lexical/disk.py), and the mask file saved.
    name: str | None = None
    mask_name: str | None = None
    masked: np.ndarray | None = None
    masked_count: int = 0
    masked_length: float = 0.0
    #: Rows masked since the mask was last saved.
    mask_dirty: bool = False

    def live(self) -> int:
        return len(self.postings.keys) - self.masked_count

    def mask(self, position: int) -> None:
        if self.masked is None:
            self.masked = np.zeros(len(self.postings.keys), dtype=bool)
        if not self.masked[position]:
            self.masked[position] = True
            self.masked_count += 1
            self.masked_length += float(self.postings.lengths[position])
            self.mask_dirty = True

    def set_mask(self, positions: np.ndarray) -> None:
        """The saved mask of a segment read back from its file."""
        self.masked = np.zeros(len(self.postings.keys), dtype=bool)
        self.masked[positions] = True
        self.masked_count = int(self.masked.sum())
        lengths = np.asarray(self.postings.lengths[positions], dtype=np.float64)
        self.masked_length = float(lengths.sum())

    def locate(self, key: object) -> int | None:
        """The live row of `key` here, or None."""
        row = self.postings.find(key)
        if row is None or (self.masked is not None and self.masked[row]):
            return None
        return row

    def doc_frequency(self, term: str) -> int:
        if self.masked is None:
            return self.postings.doc_frequency(term)
        return len(self.matches(term)[0])

    def matches(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, weighted tf) of the live rows holding the term."""
        start, end = self.postings.slices.get(term, (0, 0))
        rows, freqs = term_postings(self.postings.rows, self.postings.freqs, start, end)
        if self.masked is not None and len(rows):
            keep = ~self.masked[rows]
            rows, freqs = rows[keep], freqs[keep]
        return rows, freqs


class LiveTable:
    """One table as it is now: its segments (a base, memory-mapped or built in memory, and the
    small ones of later writes) plus rows written since the last read (`pending`).

    A write masks the rows it replaces or removes and keeps its new rows pending; the next read
    indexes them as a small segment, so scores stay FTS5's over the current table (N, average
    length and document frequencies count live rows only). Past MAX_SEGMENTS the small segments
    are merged into one (`merge_segments`; their vocabularies: lexical/vocab.py).
    """

    def __init__(
        self,
        base: Postings | None = None,
        weights: Sequence[float] = (),
        *,
        tie_by_key: bool = False,
    ) -> None:
        self.weights = tuple(weights)
        self.tie_by_key = tie_by_key
        self.segments: list[Segment] = []
        #: Rows written and not indexed yet, by key (a later write of a key replaces it).
        self.pending: dict[object, tuple[object, ...]] = {}
        self.pending_chars = 0
        self.next_order = 0
        #: Rows added since the base was built.
        self.added = 0
        if base is not None:
            self.segments.append(Segment(base, self.order_of(base)))

    def order_of(self, postings: Postings) -> np.ndarray:
        """Tie order of new rows: their keys, or the next insertion numbers."""
        if self.tie_by_key:
            return np.asarray(postings.keys, np.int64)
        count = len(postings.keys)
        order = np.arange(self.next_order, self.next_order + count, dtype=np.int64)
        self.next_order += count
        return order

    def row_count(self) -> int:
        """Live rows (FTS5's N)."""
        return sum(s.live() for s in self.segments) + len(self.pending)

    def live_keys(self) -> list[object]:
        """Every live row's key (consistency checks: the rows a stamp claims)."""
        keys = list(self.pending)
        for segment in self.segments:
            every = segment.postings.key_list()
            dead = segment.masked
            keys.extend(k for i, k in enumerate(every) if dead is None or not dead[i])
        return keys

    def doc_frequency(self, term: str) -> int:
        """Live rows containing the term."""
        self.settle()
        return sum(s.doc_frequency(term) for s in self.segments)

    def apply(self, added: Sequence[tuple[object, ...]], removed: Iterable[object] = ()) -> None:
        """A write: `removed` keys and the keys of `added` rows lose their old row, `added` rows
        (key, column texts...) are pending until the next read."""
        ceiling = max((s.postings.highest_key() for s in self.segments), default=-1)
        for key in [*removed, *(row[0] for row in added)]:
            if self.pending.pop(key, None) is not None:
                continue
            if type(key) is int and key > ceiling:
                continue  # a new chunk id: in no segment (one comparison, not one per segment)
            for segment in reversed(self.segments):
                found = segment.locate(key)
                if found is not None:
                    segment.mask(found)
                    break
        for row in added:
            self.pending[row[0]] = tuple(row)
            self.pending_chars += sum(len(str(text or "")) for text in row[1:])
        self.added += len(added)

    def settle(self) -> Segment | None:
        """Index the pending rows as a small segment (merging the small ones past MAX_SEGMENTS)."""
        if not self.pending:
            return None
        rows = list(self.pending.values())
        self.pending, self.pending_chars = {}, 0
        return self.add_built(Postings.build(rows, self.weights))

    def add_built(self, postings: Postings) -> Segment:
        """The pending rows, built into `postings` by the caller, as a small segment."""
        self.pending, self.pending_chars = {}, 0
        segment = Segment(postings, self.order_of(postings), small=True)
        self.segments.append(segment)
        if sum(s.small and s.name is None for s in self.segments) > MAX_SEGMENTS:
            self.merge([s for s in self.segments if s.small and s.name is None])
        return segment

    def merge(self, parts: list[Segment], *, small: bool = True) -> Segment:
        """`parts` (live rows only) become one segment in place of the first."""
        postings, order = merge_segments(parts)
        merged = Segment(postings, order, small=small)
        at = self.segments.index(parts[0])
        self.segments = [s for s in self.segments if all(s is not p for p in parts)]
        self.segments.insert(min(at, len(self.segments)), merged)
        return merged

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[object, float]]:
        """(key, score) of the best `limit` live rows matching any term, best first.

        The segments are scored as one row space (segment i's rows after those before it): a
        term costs a few numpy calls per segment to gather its postings and one computation
        over all of them, where a big tree's dozens of segments made it dozens (issue 42).
        Each row's score is the same sum in the same term order as scoring segment by segment.
        A term's postings are scored `SCORE_BLOCK` at a time (each the same float64 expression
        as scored whole; a term holds a row once), so memory does not follow a common term."""
        self.settle()
        count = self.row_count()
        if not count or limit <= 0:
            return []
        live_length = sum(s.postings.total - s.masked_length for s in self.segments)
        average = max(live_length / count, 1e-9)
        sizes = [len(s.postings.keys) for s in self.segments]
        starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        scores: np.ndarray | None = None
        touched = np.zeros(0, dtype=bool)  # the rows a term scored: what `_best` looks at
        for term in dict.fromkeys(terms):
            parts = [segment.matches(term) for segment in self.segments]
            found = sum(len(rows) for rows, _ in parts)
            if found:
                idf = max(math.log((count - found + 0.5) / (found + 0.5)), MIN_IDF)
                if scores is None:
                    scores = np.zeros(int(starts[-1]), dtype=np.float64)
                    touched = np.zeros(len(scores), dtype=bool)
                joined = zip(self.segments, starts.tolist(), parts, strict=False)  # one more
                for segment, start, (rows, freqs) in joined:
                    for at in range(0, len(rows), SCORE_BLOCK):
                        where = slice(at, at + SCORE_BLOCK)
                        block = (rows[where], freqs[where])
                        _add_scores(scores, touched, segment, *block, start, idf, average)
            for segment in self.segments:  # one term's pages at a time (runtime/resident.py)
                resident.step_done(segment.postings.mapping)
        return [] if scores is None else self._best(scores, touched, starts, limit)

    def _best(
        self, scores: np.ndarray, touched: np.ndarray, starts: np.ndarray, limit: int
    ) -> list[tuple[object, float]]:
        """The top rows of the joined scores (a matching row scores > 0), ties in FTS5's rowid
        order (each segment's `order`, looked up for the rows that made the cut only)."""
        # a block of rows at a time (issue 42: the whole row space cost ~32 bytes a matching row
        # at once), then the cut over the blocks' survivors: the same rows, in the same order
        blocks = range(0, len(scores), SCORE_BLOCK)
        parts = [_matching(scores, touched, at, limit) for at in blocks]
        picked, value = _cut(
            np.concatenate([rows for rows, _ in parts]),
            np.concatenate([score for _, score in parts]),
            limit,
        )
        segment_of = np.searchsorted(starts, picked, side="right") - 1
        row_of = picked - starts[segment_of]
        order = np.empty(len(picked), dtype=np.int64)
        for i, segment in enumerate(self.segments):
            here = segment_of == i
            if here.any():
                order[here] = segment.order[row_of[here]]
        ordered = np.lexsort((order, -value))[:limit]
        rows, numbers = row_of[ordered].tolist(), segment_of[ordered].tolist()
        places: dict[int, list[int]] = {}  # each segment's places in the answer
        for place, number in enumerate(numbers):
            places.setdefault(number, []).append(place)
        keys: list[object] = [None] * len(rows)
        for number, at in places.items():  # a segment's keys in one call, not one per row
            found = self.segments[number].postings.keys_at([rows[p] for p in at])
            for place, key in zip(at, found, strict=True):
                keys[place] = key
        return list(zip(keys, value[ordered].tolist(), strict=True))


def _matching(
    scores: np.ndarray, touched: np.ndarray, first: int, limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, ascending, and scores) of the block from `first`'s matching rows (score > 0)
    that can make the cut: a row that makes it over all rows makes it in its block. The rows
    are found in `touched`, a byte a row, not in the float64 scores: on the kernel's 1.28M rows
    3.75 -> 1.29 ms a search; a touched row is kept when it scored > 0, as before."""
    picked = np.flatnonzero(touched[first : first + SCORE_BLOCK]) + first
    value = scores[picked]
    matched = value > 0
    if not matched.all():
        picked, value = picked[matched], value[matched]
    return _cut(picked, value, limit)


def _cut(picked: np.ndarray, value: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows that beat or tie the `limit`-th best score (their order kept)."""
    if picked.size > limit:  # keep every row tied with the last place, then cut
        cut = np.partition(-value, limit - 1)[limit - 1]
        keep = -value <= cut
        picked, value = picked[keep], value[keep]
    return picked, value


def _add_scores(
    scores: np.ndarray,
    touched: np.ndarray,
    segment: Segment,
    rows: np.ndarray,
    freqs: np.ndarray,
    start: int,
    idf: float,
    average: float,
) -> None:
    """Add one block of a term's postings in `segment` (its rows, weighted tf as float64) to
    `scores` over the joined row space (the segment's rows from `start`), and mark its rows in
    `touched`."""
    freq = np.asarray(freqs, dtype=np.float64)
    lengths = np.asarray(segment.postings.lengths[rows], dtype=np.float64)
    norm = K1 * (1 - B + B * lengths / average)
    joined = rows.astype(np.int64) + start
    scores[joined] += idf * (freq * (K1 + 1)) / (freq + norm)
    touched[joined] = True


# ---- segments folded into one from their postings (no row text is read again) ------------
def _live_rows(segment: Segment) -> np.ndarray:
    """Which rows of `segment` are live."""
    count = len(segment.postings.keys)
    return np.ones(count, dtype=bool) if segment.masked is None else ~segment.masked


def _keys(parts: list[Segment], alive: list[np.ndarray]) -> StringColumn | np.ndarray:
    first = parts[0].postings.keys
    if isinstance(first, np.ndarray):
        return np.concatenate(
            [np.asarray(p.postings.keys)[a] for p, a in zip(parts, alive, strict=True)]
        )
    paths = [
        key
        for part, live in zip(parts, alive, strict=True)
        for key, keep in zip(part.postings.key_list(), live.tolist(), strict=True)
        if keep
    ]
    return StringColumn.of([str(key) for key in paths])


def _run(part: Segment, live: np.ndarray, numbers: np.ndarray, offset: int, wide: bool) -> Run:
    """`part`'s live postings as a sorted run, its live rows numbered from `offset` on."""
    postings = part.postings
    row_of = np.asarray(postings.rows)
    freqs = np.asarray(postings.freqs, dtype=np.float64 if wide else np.float32)
    starts = np.asarray(postings.slices.starts)
    if part.masked is None:
        return Run(numbers, starts, None, (row_of + offset).astype(np.int32, copy=False), freqs)
    keep = live[row_of]
    renumber = (np.cumsum(live) - 1 + offset).astype(np.int32)
    return Run(numbers, starts, keep, renumber[row_of[keep]], freqs[keep])


def merge_segments(parts: list[Segment]) -> tuple[Postings, np.ndarray]:
    """(postings, tie order) of the live rows of `parts`, in their order."""
    alive = [_live_rows(p) for p in parts]
    # terms as UTF-8 bytes, never decoded: their byte order is the code point order of str;
    # joined in numpy (lexical/vocab.py), no Python object per term
    names = [p.postings.slices.names for p in parts]
    vocab, bounds, numbers = merge_vocabularies([(n.blob(), n.bounds()) for n in names])
    wide = any(p.postings.freqs.dtype != np.float32 for p in parts)
    offsets = np.cumsum([0, *(int(live.sum()) for live in alive)]).tolist()
    runs = [_run(*part, wide) for part in zip(parts, alive, numbers, offsets[:-1], strict=True)]
    starts, row_of, freq = merge_runs(
        runs, len(bounds) - 1, np.dtype(np.float64 if wide else np.float32)
    )
    del runs
    return merged_postings(
        parts, alive, TermSlices(StringColumn(vocab, bounds), starts), row_of, compact_freqs(freq)
    )


def merged_postings(
    parts: list[Segment],
    alive: list[np.ndarray],
    slices: TermSlices,
    row_of: np.ndarray,
    freq: np.ndarray,
) -> tuple[Postings, np.ndarray]:
    """A merge's table from its merged postings: the parts' live rows' keys, lengths and
    average, and their tie order."""
    lengths = np.concatenate(
        [np.asarray(p.postings.lengths)[a] for p, a in zip(parts, alive, strict=True)]
    )
    widths = lengths.astype(np.float64)
    average = float(widths.sum()) / max(len(widths), 1)
    ties = np.concatenate([np.asarray(p.order)[a] for p, a in zip(parts, alive, strict=True)])
    merged = Postings(_keys(parts, alive), compact_lengths(widths), average, slices, row_of, freq)
    return merged, ties.astype(np.int64)
