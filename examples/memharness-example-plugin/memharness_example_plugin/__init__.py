"""Two recall metrics of our own (docs/plugins.md): loaded by `memharness run` through the ``memharness.plugins``
entry point once this package is installed, or directly with ``--plugin memharness_example_plugin``.

- ``recall.first_pick_relevant``: 1 when the first selected memory covers an expected fact, 0 when it does not or
  nothing was selected; undefined (None) on abstention probes. Higher is better.
- ``recall.extra_picks``: selected memories that cover no expected fact. Lower is better.
"""

from __future__ import annotations

from harness.plugins import metric
from harness.replay import Probe


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
