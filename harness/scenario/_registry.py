"""The strategy registry: every recall/extract/dream/forget strategy a run can name, with what it needs.

One place answers "is this a model strategy?", "is it ranked?" and "what must be installed for it?"; the loader,
the runner, the evaluation and the CLI all ask here instead of comparing bare strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

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


_SPECS: dict[str, StrategySpec] = {
    "heuristic": StrategySpec("heuristic", "heuristic", (), "the spec's keyword scoring, extractor, dedupe and forget"),
    "model": StrategySpec("model", "model", ("model",), "structured side-queries to a model (cassettes by default)"),
    "bm25": StrategySpec("bm25", "ranked", (), "Okapi BM25 recall ranking"),
    "embedding": StrategySpec("embedding", "ranked", ("embedding",), "MiniLM cosine recall ranking"),
    "hybrid": StrategySpec("hybrid", "ranked", ("embedding",), "reciprocal-rank fusion of BM25 and MiniLM"),
}
BUILTIN_STRATEGIES: Final = tuple(_SPECS)
STRATEGIES: Final[Mapping[str, StrategySpec]] = MappingProxyType(_SPECS)
"""Every strategy a run can name: the built-ins, then the recall rankers plugins registered (``harness.plugins``)."""
RANKER_PLUGINS: dict[str, Callable[..., Any]] = {}
"""A plugin strategy's scoring function by name: ``score(query, docs) -> one number per doc`` (``harness.plugins``)."""


class _Live(Sequence[str]):
    """The names of the registered strategies that ``keep`` accepts, read at each use: a plugin registered after
    import is in every list (a tuple built at import would miss it)."""

    def __init__(self, keep: Callable[[StrategySpec], bool], head: tuple[str, ...] = ()) -> None:
        self._keep, self._head = keep, head

    def _names(self) -> tuple[str, ...]:
        return (*self._head, *(n for n, s in _SPECS.items() if self._keep(s)))

    def __getitem__(self, i: Any) -> Any:
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())


STRATEGY_NAMES: Final[Sequence[str]] = _Live(lambda s: True)
OUTCOME_STRATEGIES: Final[Sequence[str]] = _Live(lambda s: True, ("none",))
"""What a result may report as the strategy that produced it (``none``: nothing ran)."""
MODEL_STRATEGIES: Final[Sequence[str]] = _Live(lambda s: s.uses_model)
RANKED_STRATEGIES: Final[Sequence[str]] = _Live(lambda s: s.ranked)


def register_ranker(name: str, score: Callable[..., Any], description: str = "") -> None:
    """Add recall strategy ``name`` ranked by ``score`` (``harness.plugins.ranker`` validates the name first)."""
    _SPECS[name] = StrategySpec(name, "ranked", (), description or f"a plugin ranker ({name})")
    RANKER_PLUGINS[name] = score


def ranker_plugin(name: str) -> Callable[..., Any] | None:
    """The scoring function a plugin registered for recall strategy ``name`` (None for any other name)."""
    return RANKER_PLUGINS.get(name)


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
