"""Round 16b (blind, generated): a plug-in that replaced harness code in its process and passed anyway.

Found by a generator of hostile plug-ins (random misbehaviour per protocol method, 300 runs); see the comment below."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.system import reference_factory
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

# 2. A plug-in that replaced harness code in its process, and whose scenario run passed anyway, was left PASSED.
#
# ``_isolated._restore`` put the functions back after the run, but ``_blamed`` failed only a run that had errored: a
# system that swapped ``harness.errors.one_line`` (or a check of ``harness.replay._checks``) for a wrapper of its own
# passed, judged by code it had replaced, and the run said PASSED, exit 0 (docs/system-protocol.md: "that run fails
# as the system's failure naming what it replaced"). The hostile-plug-in generator found it with a replacement that
# behaves as the original: the replay met no error, so nothing was said. Now such a run fails, naming what it replaced.

HOSTILE_SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"  # seed, finish_seeding, recall, documents
CLEAN_SCENARIO = SCENARIOS / "forget" / "one-entry-of-many.yaml"  # replayed after it, in the same child process
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")
PLAN: dict[str, Any] = {}
_TARGETS = {"harness.errors": ["one_line", "deepest_line"], "harness.scenario._limits": ["bad_char", "duration"],
            "harness.replay._checks": ["run_check", "hold_extractions"], "harness.system": ["system_name"],
            "builtins": ["len", "sorted", "isinstance"]}


def _same(original: Any, how: str) -> Any:
    """A replacement that behaves as ``original`` does (the replay cannot tell by any error)."""
    if how == "wrapper":
        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return original(*args, **kwargs)
        return wrapper
    if how == "partial":
        return functools.partial(original)
    return lambda *args, **kwargs: original(*args, **kwargs)


class _Patching:
    """The reference, replacing harness code in ``PLAN["call"]`` of the hostile scenario only (the one that seeds
    ``feedback/real-db.md``; the clean one replays after it in the same process)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._hostile = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name not in (PLAN.get("call"), "seed") or not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self._hostile = self._hostile or (name == "seed" and args[0].path == "feedback/real-db.md")
            for module_name, attr, how in PLAN["patch"] if self._hostile and name == PLAN["call"] else ():
                module = importlib.import_module(module_name)
                setattr(module, attr, _same(getattr(module, attr), how))
            return real(*args, **kwargs)
        return call


def patching_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Patching:
    return _Patching(reference_factory(workdir, clock, model, events))


_PATCH = st.sampled_from(sorted(_TARGETS)).flatmap(
    lambda m: st.tuples(st.just(m), st.sampled_from(_TARGETS[m]), st.sampled_from(["wrapper", "partial", "lambda"])))


def _run_both(tmp_path: Path, factory: str) -> tuple[int, dict[str, dict[str, Any]], Path]:
    """Run the hostile and the clean scenario on this module's ``factory``: the exit code, each one's results row
    (every output written) and the run directory."""
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), str(CLEAN_SCENARIO), "--system", f"{__name__}:{factory}",
                 "--no-gates", "--out", str(out)], environ={})
    assert all((out / name).is_file() for name in OUTPUTS)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return code, {r["scenario"].rsplit("/", 1)[-1]: r for r in rows}, out


@settings(max_examples=examples(6), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(call=st.sampled_from(["seed", "finish_seeding", "recall", "documents"]),
       patch=st.lists(_PATCH, min_size=1, max_size=3, unique_by=lambda p: p[:2]))
def test_a_system_that_replaced_harness_code_fails_even_when_the_replay_passed(
        tmp_path: Path, call: str, patch: list[tuple[str, str, str]]) -> None:
    PLAN.clear()
    PLAN.update(call=call, patch=patch)
    code, results, _ = _run_both(tmp_path, "patching_factory")
    assert code == 1, results  # FAILED: the system's doing, never PASSED, never INCOMPLETE
    hostile = results["multi-fact"]
    assert not hostile["passed"], hostile
    assert not hostile["error"], hostile
    named = [f for f in hostile["failures"] if "replaced the harness's own" in f]
    assert named, hostile["failures"]
    assert all(f"{m}.{a}" in named[0] for m, a, _ in patch), named
    assert all("\n" not in f and f.isprintable() for f in hostile["failures"]), hostile["failures"]
    assert results["one-entry-of-many"]["passed"], results  # put back: the next run is judged by the harness's code


# 3. A result's vocabulary field (``strategy``, ``fallback_reason``, ``status``, ``reason``) of any length or lines.
#
# The shape check took any ``str``: a recall answering ``strategy="h" * 10_000_000`` passed, and the probe wrote
# 10 MB into probes.jsonl and report.html (a suite of such recalls, a run past the 512 MiB its readers read); a
# strategy holding a line break went into the report's one-line cells. Now each is one printable line of at most
# ``MAX_WORD_CHARS`` (200), else the step fails as the system's.

WORD_PLAN: dict[str, Any] = {}


class _Wordy:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != "recall":
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            return dataclasses.replace(real(*args, **kwargs), **{WORD_PLAN["field"]: WORD_PLAN["text"]})
        return call


def wordy_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Wordy:
    return _Wordy(reference_factory(workdir, clock, model, events))


_WORDS = st.one_of(
    st.integers(201, 3_000_000).map(lambda n: "h" * n),
    st.tuples(st.text(st.characters(codec="utf-8", categories=("L", "N")), max_size=20),
              st.sampled_from(["\n", "\r", "\x00", "\x1b[31m", "\u2028", "\x85", "\t"]),
              st.text(st.characters(codec="utf-8", categories=("L", "N")), max_size=20)).map("".join))


@settings(max_examples=examples(6), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(field=st.sampled_from(["strategy", "fallback_reason"]), text=_WORDS)
def test_a_vocabulary_field_of_any_length_or_lines_is_the_systems_failure(
        tmp_path: Path, field: str, text: str) -> None:
    WORD_PLAN.update(field=field, text=text)
    code, results, out = _run_both(tmp_path, "wordy_factory")
    assert code == 1, results
    failures = results["multi-fact"]["failures"]
    assert any(f"the system under test failed: recall() returned a RecallResult with {field}=" in f
               for f in failures), failures
    assert all(len(f) < 1200 for f in failures), [len(f) for f in failures]
    assert results["one-entry-of-many"]["passed"], results  # it never recalls
    assert all((out / name).stat().st_size < 2_000_000 for name in OUTPUTS)


@settings(max_examples=examples(6), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(field=st.sampled_from(["error", "selected"]), size=st.integers(2_001, 3_000_000))
def test_an_error_or_an_id_of_megabytes_is_the_systems_failure(tmp_path: Path, field: str, size: int) -> None:
    """The same for a recall's ``error`` (at most 2,000 characters) and each id it selects (1,000): before, 5 MB of
    either went whole into probes.jsonl, traces.jsonl, junit.xml, the report and the console's FAILED line."""
    text = "y" * size
    WORD_PLAN.update(field=field, text=(text,) if field == "selected" else text)
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), "--system", f"{__name__}:wordy_factory", "--no-gates",
                 "--out", str(out)], environ={})
    assert code == 1
    failures = json.loads((out / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])["failures"]
    assert any(f"recall() returned a RecallResult with {field} holding" in f for f in failures), failures
    assert all((out / name).stat().st_size < 2_000_000 for name in OUTPUTS)
