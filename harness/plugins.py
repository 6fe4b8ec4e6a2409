"""Metrics of your own, computed like the built-ins (issue 31: extension points).

A plugin is a Python module that registers metrics when imported::

    # my_metrics.py
    from harness.plugins import metric

    @metric("recall.first_pick_relevant", description="1 when the first selected memory covers an expected fact")
    def first_pick_relevant(probe):
        if not probe.expected:            # an abstention probe: undefined
            return None
        return float(bool(probe.selected) and bool(probe.covered) and probe.metric("mrr") == 1.0)

Load it with ``memharness run --plugin my_metrics`` (a module path or a ``.py`` file; repeatable), with
``MEMHARNESS_PLUGINS=my_metrics,other`` or, for an installed package, an entry point in the group
``memharness.plugins``. Each metric is scored on every graded probe of its ``kind`` (``recall``, ``forget``,
``extract``, ``dream`` or ``check``) and stored in the probe's metrics (``probes.jsonl``); its mean per strategy is a
headline metric (terminal, summary.md, summary.json, report), a gate may name it (``metric = "recall.…"``, with
``min``, ``max`` or ``max_drop``), and a recall metric is compared probe by probe between strategies and against
a baseline like recall F1. A score of None leaves the probe out of the mean. An exception in a metric is an
error naming the metric and the probe, never a silent gap. docs/plugins.md has the whole story.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness.errors import HarnessError, call_plugin, plain_number, shown

if TYPE_CHECKING:
    from harness.replay import Probe, ScenarioResult

KINDS: Final = ("recall", "forget", "extract", "dream", "check")
ENTRY_POINT_GROUP: Final = "memharness.plugins"
_NAME = re.compile(r"^(recall|forget|extract|dream|check)\.[a-z][a-z0-9_]*$")
_BUILTIN_KEYS: Final = frozenset({"precision", "recall", "f1", "mrr", "ndcg", "abstention", "quality_miss",
                                  "model_answered", "retention", "residual_duplicates"})


@dataclass(frozen=True)
class MetricPlugin:
    """A registered metric: ``score(probe) -> float | None`` on each graded probe of ``kind``."""

    name: str
    score: Callable[[Probe], float | None]
    kind: str
    lower_is_better: bool = False
    description: str = ""
    source: str = ""

    @property
    def key(self) -> str:
        """The probe-metrics key (``recall.first_pick_relevant`` → ``plugin.first_pick_relevant``)."""
        return "plugin." + self.name.split(".", 1)[1]


REGISTRY: dict[str, MetricPlugin] = {}
"""Every metric registered in this process, by name."""


def metric(name: str, *, lower_is_better: bool = False,
           description: str = "") -> Callable[[Callable[[Probe], float | None]], Callable[[Probe], float | None]]:
    """Register the decorated function as metric ``name`` (``<kind>.<snake_case>``, kind from the name)."""
    if not _NAME.fullmatch(name):
        raise HarnessError(f"plugin metric {name!r}: expected '<kind>.<snake_case>' with kind one of {', '.join(KINDS)}")
    kind, short = name.split(".", 1)
    if short in _BUILTIN_KEYS:
        raise HarnessError(f"plugin metric {name!r}: {short!r} is a built-in metric's name")

    def register(fn: Callable[[Probe], float | None]) -> Callable[[Probe], float | None]:
        previous = REGISTRY.get(name)
        source = _source(fn)
        if previous is not None and previous.source != source:
            raise HarnessError(f"plugin metric {name!r} is registered twice ({previous.source} and {source})")
        REGISTRY[name] = MetricPlugin(name, fn, kind, lower_is_better, description, source)
        return fn

    return register


_RANKER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


def ranker(name: str, *, description: str = "") -> Callable[[Callable[[str, Sequence[Any]], Sequence[float]]],
                                                             Callable[[str, Sequence[Any]], Sequence[float]]]:
    """Register the decorated ``score(query, docs) -> one number per doc`` as recall strategy ``name``.

    A run names it like a built-in (``--strategy heuristic,NAME``, a scenario's ``strategies:``, a gate's
    ``strategy``). ``docs`` are ``harness.system.MemoryRecord`` (``id``, ``type``, ``title``, ``description``,
    ``text``); a system that ranks with it (the reference: its topic files) recalls the docs scoring above 0, best
    first, ties in the order given, at most the recall limit; a system that declares ``strategies`` without it
    skips it, with the reason."""
    from harness.scenario._registry import BUILTIN_STRATEGIES, RANKER_PLUGINS, register_ranker

    if not _RANKER_NAME.fullmatch(name) or name == "none":
        raise HarnessError(f"plugin strategy {name!r}: expected a name of lower-case letters, digits, '_' or '-' "
                           "(at most 40, starting with a letter)")
    if name in BUILTIN_STRATEGIES:
        raise HarnessError(f"plugin strategy {name!r}: a built-in strategy's name")

    def register(fn: Callable[[str, Sequence[Any]], Sequence[float]]) -> Callable[[str, Sequence[Any]], Sequence[float]]:
        previous = RANKER_PLUGINS.get(name)
        if previous is not None and _source(previous) != _source(fn):
            raise HarnessError(f"plugin strategy {name!r} is registered twice ({_source(previous)} and {_source(fn)})")
        register_ranker(name, fn, description)
        return fn

    return register


def _source(fn: object) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"


def load_plugins(specs: Iterable[str] = (), *, environ: dict[str, str] | None = None,
                 entry_points: bool = True) -> list[str]:
    """Import every plugin named by ``specs``, ``$MEMHARNESS_PLUGINS`` and the ``memharness.plugins`` entry points;
    returns the names loaded. A plugin that cannot be imported is an error naming it."""
    import os

    env = os.environ if environ is None else environ
    names = [s.strip() for s in (*specs, *env.get("MEMHARNESS_PLUGINS", "").split(",")) if s.strip()]
    loaded = []
    for spec in dict.fromkeys(names):
        _import(spec)
        loaded.append(spec)
    if entry_points:
        from importlib.metadata import entry_points as found

        for ep in found(group=ENTRY_POINT_GROUP):
            try:
                ep.load()
            except Exception as exc:
                raise HarnessError(f"plugin entry point {ep.name} ({ep.value}): cannot load ({type(exc).__name__}: "
                                   f"{exc})") from None
            loaded.append(f"{ep.name} (entry point)")
    return loaded


def _import(spec: str) -> None:
    try:
        if spec.endswith(".py"):
            path = Path(spec)
            if not path.is_file():
                raise FileNotFoundError(f"no file {spec}")
            module_spec = importlib.util.spec_from_file_location(f"memharness_plugin_{path.stem}", path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot load {spec}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_spec.name] = module
            module_spec.loader.exec_module(module)
        else:
            import os

            if os.getcwd() not in sys.path:  # a module of the current project, as `python -m` finds it
                sys.path.insert(0, os.getcwd())
            importlib.import_module(spec)
    except HarnessError:
        raise
    except Exception as exc:
        raise HarnessError(f"--plugin {spec}: cannot import ({type(exc).__name__}: {exc})") from None


def metric_names() -> tuple[str, ...]:
    """The registered metrics' names, sorted (gates and outputs accept them like built-ins)."""
    return tuple(sorted(REGISTRY))


def score_results(results: Sequence[ScenarioResult]) -> Sequence[ScenarioResult]:
    """Every result with each registered metric scored on its graded probes of that metric's kind (``results`` as
    they are when no metric is registered; a run's spool of results stays a spool)."""
    if not REGISTRY:
        return results
    from harness.replay import ResultSpool

    out: list[ScenarioResult] | ResultSpool = ResultSpool() if isinstance(results, ResultSpool) else []
    for r in results:
        probes = []
        for p in r.probes:
            extra: dict[str, float | None] = {}
            for plugin in REGISTRY.values():
                if p.kind != plugin.kind or not p.graded:
                    continue
                where = f"{plugin.name} ({plugin.source}) on {r.scenario} [{r.strategy}] step {p.step}"
                value = call_plugin(f"plugin metric {where}", plugin.score, p)
                number = None if value is None else plain_number(value)
                if value is not None and number is None:  # NaN read as None was a silent gap (round 12)
                    raise HarnessError(f"plugin metric {where} returned {type(value).__name__} {shown(value, 40)}; "
                                       "expected a finite number or None")
                extra[plugin.key] = number
            probes.append(replace(p, metrics={**p.metrics, **extra}) if extra else p)
        scored = replace(r, probes=tuple(probes))
        if isinstance(out, list):
            out.append(scored)
        else:
            out.add([scored])
    return out
