"""Paired statistics for strategy and baseline comparisons: bootstrap CI, exact McNemar, detectable effect."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Final

import numpy as np

SEED: Final = 20_260_302
RESAMPLES: Final = 10_000
Z_975: Final = 1.959963984540054
Z_80: Final = 0.8416212335729143


NULL_IS_INF: Final = ("p_value", "mcnemar_p", "mde")
"""The fields of a ``Comparison`` whose infinity is written as null (JSON has no inf)."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """``b − a`` on paired probes."""

    a: str
    b: str
    metric: str
    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci95: tuple[float, float]
    p_value: float
    """Two-sided bootstrap p-value from the same 10,000 resamples as the CI (they always agree)."""
    wins: int
    ties: int
    losses: int
    mcnemar_b: int
    """Probes where a succeeded and b did not."""
    mcnemar_c: int
    """Probes where b succeeded and a did not."""
    mcnemar_p: float
    mde: float
    """Smallest mean difference detectable at α = 0.05 with 80% power at this n (normal approximation)."""

    @property
    def significant(self) -> bool:
        """The 95% CI excludes 0 and p < 0.05 (they agree, except when every delta is the same: then the CI is a
        point and the p-value is the exact sign test's, so one probe, or five that all moved alike, is not enough)."""
        return (self.ci95[0] > 0 or self.ci95[1] < 0) and self.p_value < 0.05

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci95"] = list(self.ci95)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        values = {f: data[f] for f in cls.__dataclass_fields__}
        values["ci95"] = (float(data["ci95"][0]), float(data["ci95"][1]))
        for name in NULL_IS_INF:  # JSON has no inf/nan: written as null
            values[name] = math.inf if values[name] is None else float(values[name])
        return cls(**values)


def p_text(p: float, *, prefix: str = "") -> str:
    """A bootstrap p-value as every output prints it: 3 significant digits, and never ``0`` (the resampling cannot
    resolve below 1 / RESAMPLES, so that is written ``< 0.0001``). ``prefix="p"`` gives ``p = 0.04`` / ``p < 0.0001``."""
    text = f"< {1 / RESAMPLES:g}" if p < 1 / RESAMPLES else f"{p:.3g}"
    return f"{prefix} {text}" if prefix and text.startswith("<") else f"{prefix} = {text}" if prefix else text


PairedComparison = Comparison
"""The old name (kept for imports)."""


_BLOCK: Final = 1 << 18


def bootstrap(deltas: Sequence[float], *, seed: int = SEED) -> tuple[tuple[float, float], float]:
    """Percentile bootstrap of the mean of paired deltas: the 95% CI and the two-sided p-value from the SAME
    resamples (p = 2 · the share of resampled means on the far side of 0), so "the CI excludes 0" and "p < 0.05"
    agree. When every delta is the same the resamples cannot vary: the CI is that point and p is the exact two-sided
    sign test's (2 · 0.5^n). Reproducible (fixed seed)."""
    arr = np.asarray(deltas, dtype=float)
    if arr.size == 0:
        return (0.0, 0.0), 1.0
    if np.all(arr == arr[0]):  # every resample has the same mean: the bootstrap says nothing; an exact sign test
        return (float(arr[0]), float(arr[0])), (1.0 if arr[0] == 0 else min(1.0, 2 * 0.5 ** arr.size))
    rng = np.random.default_rng(seed)
    # resampled in blocks of ~256K draws (3 MB: the evaluation's peak was this block when it was 1M, 12 MB): the same
    # stream as one (RESAMPLES × n) draw (test_bootstrap_block_size), but never a matrix that grows
    # with the suite (10,000 × 5,000 probes was 400 MB of indices and 400 MB of gathered values; issue 34)
    rows = max(1, _BLOCK // arr.size)
    means = np.concatenate([arr[rng.integers(0, arr.size, size=(min(rows, RESAMPLES - at), arr.size),
                                             dtype=np.int32)].mean(axis=1) for at in range(0, RESAMPLES, rows)])
    low, high = np.percentile(means, [2.5, 97.5])
    p = 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    return (float(low), float(high)), min(1.0, p)


def bootstrap_ci(deltas: Sequence[float], *, seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% CI of the mean of paired deltas (reproducible)."""
    return bootstrap(deltas, seed=seed)[0]


def sign_flip_p(deltas: Sequence[float], *, seed: int = SEED) -> float:
    """Two-sided paired permutation p-value for mean(delta) = 0."""
    arr = np.asarray(deltas, dtype=float)
    if arr.size == 0 or np.all(arr == 0):
        return 1.0
    from scipy import stats as sps

    res = sps.permutation_test((arr,), np.mean, permutation_type="samples", n_resamples=RESAMPLES,
                               alternative="two-sided", rng=np.random.default_rng(seed))
    return float(min(1.0, res.pvalue))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact (binomial) McNemar p-value on discordant pairs: two-sided binomial test of min(b, c) of b + c at 1/2.

    The distribution is symmetric, so the two-sided p is twice the lower tail, capped at 1 — the value
    ``scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue`` gives (checked against it in the tests),
    in exact integer arithmetic and without importing scipy.stats (1.3 s of every run that compares strategies)."""
    n = b + c
    if n == 0:
        return 1.0
    term = tail = 1  # C(n, 0), then each C(n, i + 1) from C(n, i): linear in min(b, c), not a fresh comb per term
    for i in range(min(b, c)):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def minimum_detectable_effect(deltas: Sequence[float], fallback_sd: float) -> float:
    """(z₀.₉₇₅ + z₀.₈) · sd / √n; uses ``fallback_sd`` when the deltas have no spread yet."""
    n = len(deltas)
    if n < 2:
        return math.inf
    sd = float(np.std(np.asarray(deltas, dtype=float), ddof=1)) or fallback_sd
    return (Z_975 + Z_80) * sd / math.sqrt(n)


def compare(a_name: str, b_name: str, metric: str, a: Sequence[float], b: Sequence[float],
            a_ok: Sequence[bool], b_ok: Sequence[bool]) -> Comparison:
    """Paired comparison of two aligned per-probe series."""
    deltas = [y - x for x, y in zip(a, b, strict=True)]
    wins = sum(1 for d in deltas if d > 1e-12)
    losses = sum(1 for d in deltas if d < -1e-12)
    mc_b = sum(1 for x, y in zip(a_ok, b_ok, strict=True) if x and not y)
    mc_c = sum(1 for x, y in zip(a_ok, b_ok, strict=True) if y and not x)
    pooled = float(np.std(np.asarray([*a, *b], dtype=float), ddof=1)) if len(a) > 1 else 0.0
    mean_a = float(np.mean(a)) if len(a) else 0.0
    mean_b = float(np.mean(b)) if len(b) else 0.0
    ci, p = bootstrap(deltas)
    return Comparison(
        a_name, b_name, metric, len(deltas), mean_a, mean_b, mean_b - mean_a, ci, p, wins,
        len(deltas) - wins - losses, losses, mc_b, mc_c, mcnemar_exact(mc_b, mc_c),
        minimum_detectable_effect(deltas, pooled or 0.5),
    )
