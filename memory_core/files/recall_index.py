"""A query index for the spec §7.3 heuristic over one scan: ``select_heuristic``'s exact ranking, per query only
the query-dependent work.

The heuristic adds +2 per query token found as a substring of a doc's lower-cased ``type title description body``,
+1 per token that is a keyword of the doc's type, and +1 for a non-empty body; it keeps scores > 0 and orders by
score, then type, then recency. Here every doc is one bit (its position in the scan), and:

* a token is a substring of a haystack exactly when it is a substring of one of the haystack's words (maximal runs
  of token bytes, see ``snapshot.Derived.words``), so one search of the scan's vocabulary (every distinct word,
  newline-joined) finds the words that contain the token, and OR-ing their posting masks gives the docs;
* scores are kept bit-sliced (one int per bit of the score), so adding a token's mask, a type's keyword weight or
  the body bonus to all docs at once is a few integer operations;
* the top ``limit`` is read off the slices: the docs with the highest score, split by type in ``locale_key`` order,
  lowest position (most recent) first, then the next-highest score, and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from memory_core.files.formats import locale_key
from memory_core.files.snapshot import Derived
from memory_core.files.topic import MEMORY_TYPES, MemoryType, TopicDoc

TYPE_ORDER: Final = tuple(sorted(MEMORY_TYPES, key=locale_key))
_MEMO_LIMIT: Final = 4096


def _add(planes: list[int], mask: int, weight: int) -> None:
    """Add ``weight`` to the bit-sliced counter of every doc in ``mask``."""
    bit = 0
    while weight:
        if weight & 1:
            carry, j = mask, bit
            while carry:
                while j >= len(planes):
                    planes.append(0)
                plane = planes[j]
                planes[j] = plane ^ carry
                carry &= plane
                j += 1
        weight >>= 1
        bit += 1


@dataclass(slots=True)
class HeuristicIndex:
    """Postings of one scan's docs, by position."""

    docs: tuple[TopicDoc, ...]
    postings: dict[bytes, int]
    """Word → mask of the docs whose haystack has it."""
    vocabulary: bytes
    """Every word, each followed by a newline."""
    type_masks: dict[MemoryType, int]
    nonempty: int
    """Docs with a non-empty (normalized) body."""
    positions: dict[str, int]
    """Relative path → position."""
    memo: dict[str, int] = field(default_factory=dict)
    """Token → mask, filled as queries come."""

    @classmethod
    def build(cls, docs: Sequence[TopicDoc], derive: Callable[[TopicDoc], Derived]) -> HeuristicIndex:
        postings: dict[bytes, int] = {}
        get = postings.get
        type_masks = dict.fromkeys(MEMORY_TYPES, 0)
        nonempty = 0
        for i, doc in enumerate(docs):
            bit = 1 << i
            for word in derive(doc).words:
                postings[word] = get(word, 0) | bit
            type_masks[doc.type] |= bit
            if doc.normalized_body:
                nonempty |= bit
        vocabulary = b"\n".join(postings) + b"\n"
        return cls(tuple(docs), postings, vocabulary, type_masks, nonempty,
                   {d.relative_path: i for i, d in enumerate(docs)})

    def token_mask(self, token: str) -> int:
        """The docs whose haystack contains ``token`` (a ``[a-z0-9]`` token) as a substring."""
        mask = self.memo.get(token)
        if mask is None:
            mask = 0
            needle, vocabulary, postings = token.encode("ascii"), self.vocabulary, self.postings
            at = vocabulary.find(needle)
            while at >= 0:
                start = vocabulary.rfind(b"\n", 0, at) + 1
                end = vocabulary.find(b"\n", at)
                mask |= postings[vocabulary[start:end]]
                at = vocabulary.find(needle, end)
            if len(self.memo) >= _MEMO_LIMIT:
                self.memo.clear()
            self.memo[token] = mask
        return mask

    def select(self, tokens: Sequence[str], *, keywords: Mapping[MemoryType, Collection[str]], excluded: Collection[str],
               limit: int) -> list[TopicDoc]:
        """``select_heuristic`` over the index's docs minus ``excluded`` (same docs, same order)."""
        if not tokens or limit <= 0:
            return []
        universe = (1 << len(self.docs)) - 1
        for path in excluded:
            at = self.positions.get(path)
            if at is not None:
                universe &= ~(1 << at)
        planes: list[int] = []
        _add(planes, self.nonempty, 1)
        for kind, mask in self.type_masks.items():
            _add(planes, mask, sum(1 for t in tokens if t in keywords[kind]))
        for token in tokens:
            _add(planes, self.token_mask(token), 2)
        remaining = 0
        for plane in planes:
            remaining |= plane
        remaining &= universe
        out: list[TopicDoc] = []
        while remaining and len(out) < limit:
            best = remaining
            for plane in reversed(planes):
                if best & plane:
                    best &= plane
            remaining &= ~best
            for kind in TYPE_ORDER:
                tied = best & self.type_masks[kind]
                while tied and len(out) < limit:
                    low = tied & -tied
                    out.append(self.docs[low.bit_length() - 1])
                    tied ^= low
        return out
