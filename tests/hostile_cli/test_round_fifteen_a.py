"""Round 15a: a run directory read back agrees with itself (``harness/reporting/_consistency.py``). Each gap was
read silently before: a ``traces.jsonl`` line lost or taken from another run, a ``summary.json`` number the rows
contradict, a lost ``check`` or ``dream`` probe row, results rows swapped; and invalid JSON named no field. All
generated: Hypothesis picks the line, the field, the value, the position of the damage."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.reporting import read_jsonl, read_run
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

_RUNS: dict[str, Path] = {}
SETTINGS = settings(max_examples=examples(40), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _runs(factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs of the same scenarios (another run id, other trace ids): ``a`` is damaged, ``twin`` gives pieces."""
    if not _RUNS:
        root = factory.mktemp("fifteen")
        for name in ("a", "twin"):
            code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), str(SCENARIOS / "dream"),
                         "--strategy", "heuristic,bm25", "--no-gates", "--out", str(root / name)],
                        environ={"MEMHARNESS_HISTORY": str(root / "history.sqlite")})
            assert code in (0, 1)
            _RUNS[name] = root / name
    return _RUNS["a"], _RUNS["twin"]


def _copy(tmp_path: Path, base: Path) -> Path:
    run = tmp_path / f"run-{os.urandom(4).hex()}"
    shutil.copytree(base, run)
    return run


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line]


def _put(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _refused(run: Path) -> str:
    with pytest.raises(HarnessError) as caught:
        read_run(run)
    message = str(caught.value)
    assert "\n" not in message
    assert re.match(rf"^{re.escape(str(run))}/\S+:\d+: \S+: ", message), message
    return message


def _trace_ids(line: str) -> set[str]:
    request = json.loads(line)
    return {s["traceId"] for rs in request["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


@SETTINGS
@given(data=st.data(), how=st.sampled_from(["drop", "duplicate", "replace-twin", "insert-twin", "file-twin", "shuffle"]))
def test_a_trace_line_lost_or_from_another_run_is_refused_and_the_order_is_normalised(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, data: st.DataObject, how: str) -> None:
    """Gap 1: a trace line lost, or one of another run (its own trace ids and run id), was read silently."""
    base, twin = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    lines, theirs = _lines(run / "traces.jsonl"), _lines(twin / "traces.jsonl")
    n = data.draw(st.integers(0, len(lines) - 1), label="line")
    rows = _lines(run / "results.jsonl")
    if how == "shuffle":  # the order of trace lines carries nothing: read in the order of the results rows
        order = data.draw(st.permutations(range(len(lines))))
        _put(run / "traces.jsonl", [lines[i] for i in order])
        assert read_run(run)[2] == read_run(base)[2]
        return
    if how == "duplicate":  # a trace present twice: its spans are (round 12's check, kept)
        lines.insert(data.draw(st.integers(n + 1, len(lines)), label="at"), lines[n])
        _put(run / "traces.jsonl", lines)
        assert "is written twice" in _refused(run)
        return
    if how == "drop":
        [trace] = _trace_ids(lines.pop(n))
        [row] = [i for i, r in enumerate(rows, 1) if json.loads(r)["trace_id"] == trace]
        _put(run / "traces.jsonl", lines)
        assert f"results.jsonl:{row}: trace_id: trace {trace} has no span in" in _refused(run)
        return
    if how == "file-twin":
        shutil.copyfile(twin / "traces.jsonl", run / "traces.jsonl")
        at = 1
    else:
        line = data.draw(st.sampled_from(theirs), label="their line")
        lines[n:n + (how == "replace-twin")] = [line]
        _put(run / "traces.jsonl", lines)
        at = n + 1
    message = _refused(run)
    assert f"traces.jsonl:{at}: resourceSpans[0].resource.memharness.run_id: " in message, message
    assert "a line of another run?" in message


@SETTINGS
@given(data=st.data())
def test_a_summary_number_the_rows_contradict_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                           tmp_path: Path, data: st.DataObject) -> None:
    """Gap 2: any metric, comparison field, ``incomplete`` or ``passed`` of summary.json changed was read silently
    (compare gated on it, the report showed it)."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    targets: list[tuple[Any, ...]] = [("passed",), ("incomplete",)]
    targets += [("strategies", c, "metrics", m) for c, b in summary["strategies"].items() for m, v in b["metrics"].items()
                if v is not None]
    targets += [("comparisons", i, k) for i, c in enumerate(summary["comparisons"]) for k, v in c.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
    path = data.draw(st.sampled_from(targets), label="field")
    parent = summary
    for part in path[:-1]:
        parent = parent[part]
    old = parent[path[-1]]
    if path == ("passed",):
        new: Any = not old
    elif path == ("incomplete",):
        new = [data.draw(st.sampled_from(["boundary-lock-age [heuristic]", "x [bm25]"]))]
    else:
        new = data.draw(st.one_of(st.integers(-5, 1000), st.floats(-1e6, 1e6)).filter(
            lambda v: not math.isclose(v, old, abs_tol=1.0)), label="value")
    parent[path[-1]] = new
    text = json.dumps(summary, indent=2)
    (run / "summary.json").write_text(text, encoding="utf-8")
    message = _refused(run)
    field = re.sub(r"^comparisons\.(\d+)\.", r"comparisons[\1].", ".".join(map(str, path)))
    assert re.search(rf"/summary\.json:\d+: {re.escape(field)}: ", message), (field, message)


def test_a_summary_of_another_run_of_the_same_scenarios_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                                    tmp_path: Path) -> None:
    """Gap 2, pieces of two runs: the twin's summary (same counts) over this run's rows."""
    base, twin = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    shutil.copyfile(twin / "summary.json", run / "summary.json")
    _refused(run)


@SETTINGS
@given(data=st.data())
def test_a_lost_check_or_dream_probe_row_is_refused(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                      data: st.DataObject) -> None:
    """Gap 3: recall rows were counted by summary.json, a check or dream row lost was read silently."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    probes = _lines(run / "probes.jsonl")
    kinds = {i: json.loads(p)["kind"] for i, p in enumerate(probes)}
    n = data.draw(st.sampled_from([i for i, k in kinds.items() if k in ("check", "dream")]), label="row")
    lost = json.loads(probes.pop(n))
    _put(run / "probes.jsonl", probes)
    rows = [json.loads(r) for r in _lines(run / "results.jsonl")]
    [line] = [i for i, r in enumerate(rows, 1) if (r["scenario"], r["strategy"]) == (lost["scenario"], lost["strategy"])]
    message = _refused(run)
    assert f"results.jsonl:{line}: probe_kinds.{lost['kind']}: {rows[line - 1]['probe_kinds'][lost['kind']]}, " \
           f"but probes.jsonl has {rows[line - 1]['probe_kinds'][lost['kind']] - 1} {lost['kind']} row(s)" in message


@SETTINGS
@given(data=st.data())
def test_results_rows_swapped_are_refused(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                          data: st.DataObject) -> None:
    """Two results rows with probes swapped: the report listed them swapped, read silently."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    rows = _lines(run / "results.jsonl")
    with_probes = [i for i, r in enumerate(rows) if sum(json.loads(r)["probe_kinds"].values())]
    i, j = sorted(data.draw(st.lists(st.sampled_from(with_probes), min_size=2, max_size=2, unique=True)))
    rows[i], rows[j] = rows[j], rows[i]
    _put(run / "results.jsonl", rows)
    assert "probes.jsonl:" in _refused(run)


KEYS = st.text("abcdefgh", min_size=1, max_size=3)
TREES = st.recursive(st.integers(0, 9) | st.text("xyz", max_size=2),
                     lambda inner: st.lists(inner, min_size=1, max_size=3)
                     | st.dictionaries(KEYS, inner, min_size=1, max_size=3), max_leaves=8)


def _leaves(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, f"{path}[{i}]")]
    return [path]


def _set(value: Any, path: str, new: Any) -> None:
    parts: list[Any] = [int(p[1:-1]) if p.startswith("[") else p for p in re.findall(r"\[\d+\]|[^.\[\]]+", path)]
    for part in parts[:-1]:
        value = value[part]
    value[parts[-1]] = new


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=st.dictionaries(KEYS, TREES, min_size=1, max_size=3), data=st.data(),
       bad=st.sampled_from(["nul", "+1", "'x'", "01", "tru", "CUT"]), summary=st.booleans())
def test_invalid_json_names_the_field_and_the_column(tmp_path: Path, tree: dict[str, Any], data: st.DataObject,
                                                     bad: str, summary: bool) -> None:
    """Gap 4: ``probes.jsonl:12: invalid JSON (Expecting value)`` named no field and no column; a line cut short
    said nothing of it."""
    field = data.draw(st.sampled_from(_leaves(tree)), label="field")
    _set(tree, field, "SENTINEL")
    text = json.dumps(tree, indent=2 if summary else None)
    at = text.index('"SENTINEL"')
    text = text[:at] + ('"SENT' if bad == "CUT" else bad) + ("" if bad == "CUT" else text[at + len('"SENTINEL"'):])
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    if summary:
        path = tmp_path / "summary.json"
        path.write_text(text, encoding="utf-8")
        call: Any = lambda: read_run(tmp_path)  # noqa: E731
    else:
        path = tmp_path / "probes.jsonl"
        path.write_text('{"ok": 1}\n' + text + "\n", encoding="utf-8")
        line += 1
        call = lambda: read_jsonl(path)  # noqa: E731
    with pytest.raises(HarnessError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: {field}: invalid JSON at column "), (field, message)
    found = int(re.search(r"at column (\d+)", message).group(1))  # type: ignore[union-attr]
    assert column <= found <= column + 4, (column, message)
    if bad == "CUT":
        assert "cut short?" in message, message


def test_a_bom_is_ignored_as_in_scenario_files(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """A documented normalisation (docs/limits.md): a UTF-8 BOM an editor added reads as without it."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    for name in ("summary.json", "results.jsonl", "probes.jsonl", "traces.jsonl"):
        (run / name).write_bytes(b"\xef\xbb\xbf" + (run / name).read_bytes())
    assert read_run(run) == read_run(base)


@SETTINGS
@given(data=st.data(), how=st.sampled_from(["failures", "error", "passed"]))
def test_a_results_row_whose_verdict_is_not_its_failures_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                                   tmp_path: Path, data: st.DataObject,
                                                                   how: str) -> None:
    """A row passes exactly when it has no failure and no error (the writer's rule): a failure or an error added to
    a passing row, or a passing row marked failed with its status, was read as written."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    rows = _lines(run / "results.jsonl")
    n = data.draw(st.integers(0, len(rows) - 1), label="row")
    row = json.loads(rows[n])
    if how == "failures":
        row["failures"] = data.draw(st.lists(st.text(max_size=5), min_size=1, max_size=2))
    elif how == "error":
        row["error"] = data.draw(st.text(max_size=5))
    else:
        row["passed"], row["status"] = False, "failed"
    rows[n] = json.dumps(row)
    _put(run / "results.jsonl", rows)
    message = _refused(run)
    from harness.errors import text_problem

    said = [*row["failures"], row.get("error") or ""]
    if any(text_problem(t) for t in said if isinstance(t, str)):  # round 20: a control character is refused, too
        assert re.search(rf"results\.jsonl:{n + 1}: (failures\[\d+\]|error): |summary\.json:", message), message
    elif how == "failures" or (how == "error" and not row["error"]):  # the counts agree: the row's own check finds it
        assert f"results.jsonl:{n + 1}: passed: true, but it has {len(row['failures'])} failure(s)" in message, message
    else:  # the status the reader derives (an error, a failure) changes a count first
        assert "summary.json:" in message, message


@SETTINGS
@given(data=st.data())
def test_a_failing_probe_of_a_passing_row_is_refused(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                     data: st.DataObject) -> None:
    """A failing probe fails its scenario (the writer records a failure for it): a probe row's ``passed`` flipped
    to false under a passing results row was read as written (found by the blind class, seed 256)."""
    base, _ = _runs(tmp_path_factory)
    run = _copy(tmp_path, base)
    probes = _lines(run / "probes.jsonl")
    n = data.draw(st.integers(0, len(probes) - 1), label="probe")
    probe = json.loads(probes[n])
    probe["passed"] = False
    probes[n] = json.dumps(probe)
    _put(run / "probes.jsonl", probes)
    rows = [json.loads(r) for r in _lines(run / "results.jsonl")]
    [line] = [i for i, r in enumerate(rows, 1) if (r["scenario"], r["strategy"]) == (probe["scenario"], probe["strategy"])]
    assert f"results.jsonl:{line}: passed: true, but probes.jsonl has its step {probe['step']} ({probe['kind']}) " \
           "failed" in _refused(run)
