"""Two recall metrics of our own (docs/plugins.md): loaded by `memharness run` through the ``memharness.plugins``
entry point once this package is installed, or directly with ``--plugin memharness_example_plugin``.

- ``recall.first_pick_relevant``: 1 when the first selected memory covers an expected fact, 0 when it does not or
  nothing was selected; undefined (None) on abstention probes. Higher is better.
- ``recall.extra_picks``: selected memories that cover no expected fact. Lower is better.

And a recall strategy of our own (``--strategy heuristic,overlap``):

- ``overlap``: the share of the query's words (3+ letters) that occur in a memory's title, description or text;
  memories sharing no word are not recalled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.plugins import metric, ranker
from harness.replay import MemoryRecord, Probe

_WORD = re.compile(r"[^\W\d_]{3,}")


@metric("recall.first_pick_relevant", description="the first selected memory covers an expected fact")
def first_pick_relevant(probe: Probe) -> float | None:
    if not probe.expected:
        return None  # an abstention probe: nothing is relevant, the metric is undefined
    return 1.0 if probe.metric("mrr") == 1.0 else 0.0


@metric("recall.extra_picks", lower_is_better=True, description="selected memories that cover no expected fact")
def extra_picks(probe: Probe) -> float | None:
    precision = probe.metric("precision")
    if precision is None:
        return float(len(probe.selected))  # an abstention probe: every pick is extra
    return round(len(probe.selected) * (1.0 - precision), 6)


@ranker("overlap", description="share of the query's words found in a memory (a plugin ranker)")
def overlap(query: str, docs: Sequence[MemoryRecord]) -> list[float]:
    wanted = {w.lower() for w in _WORD.findall(query)}
    if not wanted:
        return [0.0] * len(docs)
    scores = []
    for doc in docs:
        words = {w.lower() for w in _WORD.findall(f"{doc.title} {doc.description} {doc.text}")}
        scores.append(len(wanted & words) / len(wanted))
    return scores
