"""A call whose answer the protocol does not read returns None (docs/system-protocol.md: ``seed``,
``finish_seeding``, ``add_turns`` and ``close`` return nothing). Round 17: anything they returned was dropped without
a word — an ``async def seed`` returned a coroutine nobody awaited, so no memory was stored, the run went on, and
Python later printed "coroutine … was never awaited". Now any other answer fails the scenario runs that met it as
the system's failure, naming the call and what it returned; an awaitable is closed unrun and said to be one.
Generated: the call and the answer (None, the boundary, passes)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED
from harness.system import reference_factory
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

SEEDING = SCENARIOS / "recall" / "multi-fact.yaml"  # seeds memories, then recalls
TURNS = SCENARIOS / "extract" / "explicit-remember.yaml"  # seeds nothing; adds turns and extracts
PLAN: dict[str, Any] = {}


class _Answering:
    """The reference system, except that ``PLAN["call"]`` does its work and then returns ``PLAN["answer"]()``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != PLAN.get("call"):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            return PLAN["answer"]()
        return call

    def close(self) -> Any:
        getattr(self._inner, "close", lambda: None)()
        return PLAN["answer"]() if PLAN.get("call") == "close" else None


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Answering:
    return _Answering(reference_factory(workdir, clock, model, events))


async def _later() -> None:
    return None


ANSWERS = st.one_of(
    st.just(lambda: None),
    st.sampled_from([lambda: _later(), lambda: (x for x in ()), lambda: 0, lambda: "", lambda: False, lambda: [],
                     lambda: {}, lambda: object(), lambda: NotImplemented, lambda: Ellipsis]),
    st.builds(lambda v: (lambda: v), st.one_of(st.integers(), st.text(max_size=8), st.booleans(),
                                               st.lists(st.integers(), max_size=3))),
)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(["seed", "finish_seeding", "add_turns", "close"]), answer=ANSWERS)
def test_an_answer_where_none_is_expected_is_the_system_s_failure(tmp_path_factory: pytest.TempPathFactory,
                                                                  capfd: pytest.CaptureFixture[str], call: str,
                                                                  answer: Any) -> None:
    PLAN.clear()
    PLAN.update(call=call, answer=answer)
    sample = answer()
    returned = sample is not None
    if hasattr(sample, "close"):
        sample.close()
    out = tmp_path_factory.mktemp("run") / os.urandom(4).hex()
    capfd.readouterr()
    code = main(["run", str(SEEDING), str(TURNS), "--system", f"{__name__}:factory", "--no-gates", "--out", str(out)],
                environ={})
    err = capfd.readouterr().err
    rows = {r["scenario"].rsplit("/", 1)[-1]: r for r in map(json.loads, (out / "results.jsonl").read_text().split(
        "\n")[:-1])}
    met = {"seed": ["multi-fact"], "add_turns": ["explicit-remember"]}.get(call, ["multi-fact", "explicit-remember"])
    assert "never awaited" not in err, err
    if not returned:
        assert code == 0, rows
        return
    assert code == 1, rows
    for name, row in rows.items():
        if name not in met:
            assert row["passed"], row
            continue
        assert not row["error"], row["error"]
        (failure,) = [f for f in row["failures"] if SYSTEM_FAILED in f]
        assert f"{call}() returned " in failure, failure
        assert "expected None" in failure, failure
        assert ("awaitable" in failure) == (type(sample).__name__ in ("coroutine", "generator") and
                                            hasattr(sample, "__await__")), failure
