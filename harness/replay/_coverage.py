"""Which gold facts a doc or an entry covers (DESIGN §2 semantics), and the per-probe metric formulas (§5)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from harness.scenario import Fact
from harness.system import MemoryRecord


def _contains_all(text: str, phrases: Iterable[str]) -> bool:
    low = text.lower()
    return all(p.lower() in low for p in phrases)


def doc_covers(doc: MemoryRecord, facts: Mapping[str, Fact], seeded: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """Facts whose phrases all occur in title + description + text, plus the facts the record was seeded with."""
    text = " ".join((doc.title, doc.description, doc.text))
    found = {fid for fid, f in facts.items() if _contains_all(text, f.match)}
    return frozenset(found | seeded.get(doc.id, frozenset()))


def entry_coverage(docs: Sequence[MemoryRecord], facts: Mapping[str, Fact],
                   seeded: Mapping[str, frozenset[str]]) -> dict[str, int]:
    """How many entries cover each fact (spec §2.2 entries; the seeded rule for single-entry records; a record
    without entries counts as one entry)."""
    counts = dict.fromkeys(facts, 0)
    for doc in docs:
        entries = doc.entries if doc.entries is not None else (None,)
        for entry in entries:
            if entry is None:
                text = " ".join((doc.title, doc.description, doc.text))
            else:
                text = " ".join(p for p in (entry.summary, entry.why, entry.how_to_apply) if p)
            covered = {fid for fid, f in facts.items() if _contains_all(text, f.match)}
            if len(entries) == 1:
                covered |= seeded.get(doc.id, frozenset())
            for fid in covered:
                counts[fid] += 1
    return counts


def covered_facts(docs: Sequence[MemoryRecord], facts: Mapping[str, Fact],
                  seeded: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """Facts covered by any doc."""
    out: set[str] = set()
    for doc in docs:
        out |= doc_covers(doc, facts, seeded)
    return frozenset(out)


def recall_metrics(selected: Sequence[frozenset[str]], expected: frozenset[str], *, k: int,
                   relevant_in_store: int) -> dict[str, float | None]:
    """precision, recall, f1, mrr, ndcg@k (binary gains) and abstention for one recall probe (docs/metrics.md).

    ``selected`` holds the facts each selected doc covers, in rank order. A probe that expects nothing is an
    abstention probe: only ``abstention`` is defined (1 when nothing was selected); precision, recall, f1, mrr and
    ndcg are None there (changed 2026-11-26: DESIGN §5 counted its recall as 1.0, which inflated the headline
    recall). A probe that expects something has no abstention.
    """
    if not expected:  # an abstention probe: only abstention is defined (it is not a recall of 1.0, issue 32)
        return {"precision": None, "recall": None, "f1": None, "mrr": None, "ndcg": None,
                "abstention": 1.0 if not selected else 0.0}
    hits = [bool(c & expected) for c in selected]
    precision = sum(hits) / len(selected) if selected else 1.0
    found = set().union(*selected) & expected if selected else set()
    recall = len(found) / len(expected)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    metrics: dict[str, float | None] = {"precision": precision, "recall": recall, "f1": f1}
    first = next((i for i, h in enumerate(hits) if h), None)
    metrics["mrr"] = 1.0 / (first + 1) if first is not None else 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, h in enumerate(hits[:k]) if h)
    ideal_n = min(k, max(relevant_in_store, 1))
    idcg = sum(1.0 / math.log2(i + 2) for i in range(ideal_n))
    metrics["ndcg"] = dcg / idcg if idcg else 0.0
    metrics["abstention"] = None
    return metrics
