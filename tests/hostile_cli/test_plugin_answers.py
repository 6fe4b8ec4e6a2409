"""What a plugin's metric or ranker returns, generated (hostile probe, round 12).

docs/plugins.md: a metric returns a number or None, a ranker one finite number per doc; "another answer, or an
exception" is an error naming the plugin (exit 2), "never a silent gap". On the old code a metric's inf, -inf, an
int too large for a float and a number subclass whose ``__float__`` raised were ``internal error``s, NaN was
stored as None (a silent gap), and ``sys.exit`` in a metric ended the run with no output; a ranker's answer whose
``len``, iteration or ``str`` raised, an int too large for a float or ``sys.exit`` was blamed on the system under
test ('the system under test failed: recall() raised …', exit 1). Now each is a ``HarnessError`` naming the plugin,
or the answer read as plain floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import plugins
from harness.errors import HarnessError
from harness.replay import Probe, ScenarioResult
from harness.systems.files import PluginRanker
from memory_core.files.topic import TopicDoc

TRAPS = ("__float__", "__len__", "__iter__", "__str__", "__repr__", "__eq__", "__hash__", "__index__")


def _raiser(*_: object) -> Any:
    raise RuntimeError("booby trap")


def _trapped(base: type, traps: frozenset[str]) -> type:
    return type(f"Trapped{base.__name__.title()}", (base,), {name: _raiser for name in traps})


TRAP_SETS = st.frozensets(st.sampled_from(TRAPS), max_size=3)
NUMBER = st.one_of(st.none(), st.booleans(), st.floats(), st.integers(-2**1100, 2**1100), st.text(max_size=3),
                   st.builds(lambda t, v: _trapped(float, t)(v), TRAP_SETS, st.floats()),
                   st.builds(lambda t, v: _trapped(int, t)(v), TRAP_SETS, st.integers(-2**1100, 2**1100)))
ANSWER = st.one_of(NUMBER, st.lists(NUMBER, max_size=4), st.lists(NUMBER, max_size=4).map(tuple),
                   st.builds(lambda t, v: _trapped(list, t)(v), TRAP_SETS, st.lists(NUMBER, max_size=4)),
                   st.lists(NUMBER, max_size=4).map(lambda v: (x for x in v)), st.just(SystemExit(3)),
                   st.just(ValueError("plain")), st.builds(lambda t: _trapped(Exception, t)("x"), TRAP_SETS))


def _plugin(answer: object) -> Callable[..., object]:
    def score(*_: object) -> object:
        if isinstance(answer, BaseException):
            raise answer
        return answer
    return score


def _finite(value: object) -> bool:
    if not isinstance(value, int | float):
        return False
    try:
        number = float.__float__(value) if isinstance(value, float) else int.__float__(value)
        return math.isfinite(number) and abs(number) < 2.0**53
    except OverflowError:
        return False


@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(answer=ANSWER)
def test_a_metric_answer_is_a_plain_float_none_or_an_error_naming_it(answer: object,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "REGISTRY", {})
    plugins.metric("recall.generated")(_plugin(answer))
    probe = Probe("s", 0, "recall", "heuristic", expected=("f",))
    result = ScenarioResult("s", "heuristic", True, (), (probe,), "0" * 32)
    error = ""
    try:
        scored = plugins.score_results([result])[0].probes[0].metrics["plugin.generated"]
    except HarnessError as exc:
        error = str(exc)
    if error:
        assert "plugin metric recall.generated" in error
        assert answer is not None
        assert not _finite(answer), error
    else:
        assert (answer is None and scored is None) or (type(scored) is float and math.isfinite(scored)
                                                       and _finite(answer))


DOCS = 3


@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(answer=ANSWER)
def test_a_ranker_answer_is_plain_floats_or_an_error_naming_it(answer: object) -> None:
    docs = [TopicDoc("user", f"user/t{i}.md", f"title {i}", f"desc {i}", f"body {i}") for i in range(DOCS)]
    ranker = PluginRanker("generated", _plugin(answer))
    try:
        ranked = ranker.rank("query", docs, limit=5)
    except HarnessError as exc:
        ranked, error = [], str(exc)
    else:
        error = "plugin strategy generated"
    assert "plugin strategy generated" in error
    assert len(ranked) <= DOCS
