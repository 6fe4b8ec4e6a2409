"""``memharness bench locomo``: turn-level evidence retrieval on LoCoMo for every offline strategy, with per-category
R@5, R@10, hit@k and MRR, paired comparisons, time and memory, next to the dataset's calibration numbers."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError, one_line
from harness.evaluation import compare, p_text
from harness.tools._locomo import CATEGORIES, Conversation, dia_of, load_locomo, observation_docs, turn_docs
from memory_core.files.embedding import EmbeddingUnavailable
from memory_core.files.rankers import RANKED_STRATEGIES, Ranker, make_rankers
from memory_core.files.topic import TopicDoc

CALIBRATION: Final = {
    "bm25 (dataset README, turns, categories 1-4)": {"R@5": 50.0, "R@10": 56.5, "MRR": 42.2},
    "DRAGON dense retriever (LoCoMo paper, categories 1-5)": {"R@5": 56.7, "R@10": 66.2},
    "BM25 (LoCoMo paper, categories 1-5)": {"R@5": 51.9, "R@10": 58.3},
}
DEPTH: Final = 10


@dataclass
class QuestionScore:
    sample: str
    index: int
    category: int
    r5: float
    r10: float
    hit5: float
    hit10: float
    rr: float


@dataclass
class StrategyResult:
    strategy: str
    seconds: float
    peak_rss_mb: float
    questions: list[QuestionScore] = field(default_factory=list)

    def table(self) -> dict[str, dict[str, float]]:
        """Per category and overall (1-4 micro, 1-5 micro): mean metrics in percent and n."""
        groups: dict[str, list[QuestionScore]] = {CATEGORIES[c]: [q for q in self.questions if q.category == c]
                                                  for c in sorted(CATEGORIES)}
        groups["overall 1-4"] = [q for q in self.questions if q.category in (1, 2, 3, 4)]
        groups["overall 1-5"] = list(self.questions)
        out = {}
        for name, qs in groups.items():
            if qs:
                out[name] = {"n": len(qs), **{m: round(100 * sum(getattr(q, a) for q in qs) / len(qs), 1) for m, a in
                             (("R@5", "r5"), ("R@10", "r10"), ("hit@5", "hit5"), ("hit@10", "hit10"), ("MRR", "rr"))}}
        return out


def _turn_ranking(ranked: Sequence[TopicDoc], provenance: dict[str, tuple[str, ...]] | None) -> list[list[str]]:
    """Each ranked doc as the turns it covers (itself, or an observation's provenance)."""
    if provenance is None:
        return [[dia_of(d)] for d in ranked]
    return [list(provenance.get(d.relative_path, ())) for d in ranked]


def score_question(gold: set[str], covered: Sequence[Sequence[str]]) -> tuple[float, float, float, float, float]:
    """R@5, R@10, hit@5, hit@10 and reciprocal rank of the first doc covering a gold turn."""
    def recall_at(k: int) -> float:
        seen = {t for c in covered[:k] for t in c}
        return len(gold & seen) / len(gold)

    rr = next((1.0 / (i + 1) for i, c in enumerate(covered) if gold & set(c)), 0.0)
    r5, r10 = recall_at(5), recall_at(10)
    return r5, r10, float(r5 > 0), float(r10 > 0), rr


def evaluate(conversations: Sequence[Conversation], ranker: Ranker, *, mode: str = "turns",
             progress: Callable[[str], None] | None = None) -> StrategyResult:
    """Rank within each question's own conversation; score against repaired evidence turns."""
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    result = StrategyResult(ranker.name, 0.0, 0.0)
    for conv in conversations:
        if mode == "turns":
            docs, provenance = turn_docs(conv), None
        else:
            docs, prov = observation_docs(conv)
            provenance = prov
        for i, q in enumerate(conv.questions):
            if not q.evidence:
                continue
            ranked = [r.doc for r in ranker.rank(q.question, docs, limit=DEPTH)]
            result.questions.append(QuestionScore(conv.sample_id, i, q.category,
                                                  *score_question(set(q.evidence), _turn_ranking(ranked, provenance))))
        if progress:
            progress(f"{ranker.name}: {conv.sample_id} done")
    result.seconds = time.perf_counter() - t0
    result.peak_rss_mb = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_rss) / 1024
    return result


def run_benchmark(path: Path, strategies: Sequence[str], *, mode: str = "turns",
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every strategy over the whole file; tables, paired R@10 comparisons and calibration references."""
    if not strategies:  # round 13: `--strategy ,,` scored nothing and wrote an empty benchmark, exit 0
        raise HarnessError(f"--strategy: expected comma-separated strategies ({', '.join(RANKED_STRATEGIES)}), "
                           "got none")
    conversations = load_locomo(path)
    try:  # an unknown name, or (round 13) the embedding extra not installed: it was an internal error
        rankers = make_rankers(strategies, abstain=False, hybrid_depth=100)
    except (ValueError, EmbeddingUnavailable) as exc:
        raise HarnessError(f"benchmark: {one_line(str(exc))}") from None
    results = [evaluate(conversations, rankers[s], mode=mode, progress=progress) for s in strategies]
    if results and not results[0].questions:
        raise HarnessError(f"{path}: no question with evidence that resolves to a turn: nothing to score")
    comparisons = []
    for i, a in enumerate(results):
        for b in results[i + 1:]:
            qa = [q for q in a.questions if q.category in (1, 2, 3, 4)]
            qb = [q for q in b.questions if q.category in (1, 2, 3, 4)]
            for metric in ("r10", "rr"):
                comparisons.append(compare(a.strategy, b.strategy, f"locomo.{metric}", [getattr(q, metric) for q in qa],
                                           [getattr(q, metric) for q in qb], [q.hit10 > 0 for q in qa],
                                           [q.hit10 > 0 for q in qb]).to_dict())
    return {
        "dataset": str(path), "mode": mode, "questions": sum(len(c.questions) for c in conversations),
        "scored": len(results[0].questions) if results else 0,
        "dropped_evidence_ids": sorted({d for c in conversations for d in c.dropped_evidence}),
        "strategies": {r.strategy: {"table": r.table(), "seconds": round(r.seconds, 2),
                                    "peak_rss_mb": round(r.peak_rss_mb, 1)} for r in results},
        "comparisons": comparisons, "calibration": CALIBRATION,
        "per_question": {r.strategy: [asdict(q) for q in r.questions] for r in results},
    }


def format_table(bench: dict[str, Any]) -> str:
    """The plain-text table the command prints."""
    lines = [f"LoCoMo {bench['mode']}-level evidence retrieval: {bench['scored']} of {bench['questions']} questions "
             f"have resolvable evidence ({bench['dataset']})", ""]
    header = f"{'strategy':10} {'category':13} {'n':>5} {'R@5':>6} {'R@10':>6} {'hit@5':>6} {'hit@10':>6} {'MRR':>6}"
    lines += [header, "-" * len(header)]
    for strategy, block in bench["strategies"].items():
        for category, row in block["table"].items():
            lines.append(f"{strategy:10} {category:13} {row['n']:>5} {row['R@5']:>6} {row['R@10']:>6} "
                         f"{row['hit@5']:>6} {row['hit@10']:>6} {row['MRR']:>6}")
        lines.append(f"{strategy:10} time {block['seconds']:.1f} s, peak memory +{block['peak_rss_mb']:.0f} MB")
        lines.append("")
    lines.append("Calibration (same method):")
    for name, values in bench["calibration"].items():
        lines.append("  " + name + ": " + ", ".join(f"{k} {v}" for k, v in values.items()))
    dragon = bench["calibration"]["DRAGON dense retriever (LoCoMo paper, categories 1-5)"]["R@10"]
    for strategy in ("embedding", "hybrid"):
        if "overall 1-5" in bench["strategies"].get(strategy, {}).get("table", {}):
            ours = bench["strategies"][strategy]["table"]["overall 1-5"]["R@10"]
            lines.append(f"  {strategy}: R@10 {ours} over categories 1-5 vs DRAGON {dragon} "
                         f"({ours - dragon:+.1f} points)")
    if "overall 1-4" in bench["strategies"].get("bm25", {}).get("table", {}):  # none when every question is 5
        row = bench["strategies"]["bm25"]["table"]["overall 1-4"]
        lines.append(f"  our bm25, categories 1-4: R@5 {row['R@5']}, R@10 {row['R@10']}, MRR {row['MRR']} "
                     f"(README: 50.0 / 56.5 / 42.2)")
    if bench["comparisons"]:
        lines += ["", "Paired comparisons, categories 1-4 (B - A):"]
        for c in bench["comparisons"]:
            lines.append(f"  {c['b']} - {c['a']} {c['metric']}: {c['delta']:+.3f} 95% CI [{c['ci95'][0]:+.3f}, "
                         f"{c['ci95'][1]:+.3f}] {p_text(c['p_value'], prefix='p')} W/T/L {c['wins']}/{c['ties']}/{c['losses']} "
                         f"n={c['n']}")
    return "\n".join(lines)
