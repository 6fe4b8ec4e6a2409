"""The strategy registry: every recall/extract/dream/forget strategy a run can name, with what it needs.

One place answers "is this a model strategy?", "is it ranked?" and "what must be installed for it?"; the loader,
the runner, the evaluation and the CLI all ask here instead of comparing bare strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

StrategyKind = Literal["heuristic", "model", "ranked"]


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """A named strategy: its kind and the optional parts it needs."""

    name: str
    kind: StrategyKind
    needs: tuple[str, ...] = ()
    """``model`` (a model or cassettes), ``embedding`` (the optional MiniLM extra)."""
    description: str = ""

    @property
    def uses_model(self) -> bool:
        return self.kind == "model"

    @property
    def ranked(self) -> bool:
        return self.kind == "ranked"


STRATEGIES: Final[Mapping[str, StrategySpec]] = MappingProxyType({
    "heuristic": StrategySpec("heuristic", "heuristic", (), "the spec's keyword scoring, extractor, dedupe and forget"),
    "model": StrategySpec("model", "model", ("model",), "structured side-queries to a model (cassettes by default)"),
    "bm25": StrategySpec("bm25", "ranked", (), "Okapi BM25 recall ranking"),
    "embedding": StrategySpec("embedding", "ranked", ("embedding",), "MiniLM cosine recall ranking"),
    "hybrid": StrategySpec("hybrid", "ranked", ("embedding",), "reciprocal-rank fusion of BM25 and MiniLM"),
})
STRATEGY_NAMES: Final = tuple(STRATEGIES)
OUTCOME_STRATEGIES: Final = ("none", *STRATEGY_NAMES)
"""What a result may report as the strategy that produced it (``none``: nothing ran)."""
MODEL_STRATEGIES: Final = frozenset(n for n, s in STRATEGIES.items() if s.uses_model)
RANKED_STRATEGIES: Final = tuple(n for n, s in STRATEGIES.items() if s.ranked)


def base_strategy(name: str) -> str:
    """The registered strategy a run's strategy name stands for: ``model:SET`` (the model strategy replaying the
    cassette set SET, for model-versus-model runs) is ``model``; any other name is itself."""
    base, sep, which = name.partition(":")
    return base if sep and which and base in MODEL_STRATEGIES else name


def strategy_spec(name: str) -> StrategySpec:
    """The registered strategy ``name``; ``KeyError`` with the known names otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}") from None
