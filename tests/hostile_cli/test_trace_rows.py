"""A run directory's ``traces.jsonl`` with a span written twice (issue 33, round 12; left from round 11).

Before: ``report``, ``compare``, ``merge`` and ``traces push`` read a line written twice silently — the report drew
the trace twice and ``traces push`` sent its spans twice. A run writes each span once (span ids are drawn per span).
Now a span seen before — a whole line copied, or one span copied into another line or into its own — is one located
line, ``<run>/traces.jsonl:<line>: resourceSpans[i].scopeSpans[j].spans[k].spanId: span … is written twice (lines
m and n)``, exit 2, and nothing is written or sent. Generated: which line or span, where the copy goes, how the line
is re-serialised."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli.test_probe_rows import _refused, _rows, copied_shard
from tests.hostile_cli.test_run_dir_mutations import _shards


def _spans(line: dict) -> list[tuple[int, int, int]]:
    return [(i, j, k) for i, rs in enumerate(line.get("resourceSpans", []))
            for j, ss in enumerate(rs.get("scopeSpans", [])) for k, _ in enumerate(ss.get("spans", []))]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), how=st.sampled_from(["line", "span-elsewhere", "span-same-line"]))
def test_a_span_written_twice_is_one_located_line(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        data: st.DataObject, how: str) -> None:
    base, other, run = copied_shard(tmp_path_factory, tmp_path)
    path = run / "traces.jsonl"
    rows = [json.loads(r) for r in _rows(path)]
    assert rows, "the shard has traces"
    n = data.draw(st.integers(0, len(rows) - 1), label="line")
    separators = data.draw(st.sampled_from([(",", ":"), (", ", ": ")]), label="spacing")
    if how == "line":
        at = data.draw(st.integers(0, len(rows)), label="copy at")
        rows.insert(at, copy.deepcopy(rows[n]))
        second = max(at, n + 1) + 1  # 1-based line of the later copy
    else:
        i, j, k = data.draw(st.sampled_from(_spans(rows[n])), label="span")
        span = copy.deepcopy(rows[n]["resourceSpans"][i]["scopeSpans"][j]["spans"][k])
        target = n if how == "span-same-line" else data.draw(
            st.integers(0, len(rows) - 1).filter(lambda t: t != n) if len(rows) > 1 else st.just(n), label="into")
        spans = rows[target]["resourceSpans"][0]["scopeSpans"][0]["spans"]
        spans.insert(data.draw(st.integers(0, len(spans)), label="at"), span)
        second = max(n, target) + 1
    path.write_text("".join(json.dumps(r, separators=separators) + "\n" for r in rows), encoding="utf-8")
    expected = f"traces.jsonl:{second}: resourceSpans["
    env = {"MEMHARNESS_HISTORY": str(tmp_path / "history.sqlite")}
    report = tmp_path / f"{run.name}.html"
    _refused(capsys, ["report", str(run), "--output", str(report)], env, expected)
    assert not report.exists()
    _refused(capsys, ["compare", str(base), str(run)], env, expected)
    merged = tmp_path / f"{run.name}-merged"
    _refused(capsys, ["merge", str(merged), str(run), str(other)], env, expected)
    assert not merged.exists()
    _refused(capsys, ["traces", "push", str(run), "--endpoint", "http://127.0.0.1:9"], env, expected)
    err_lines = capsys.readouterr().err
    assert "Traceback" not in err_lines


def test_the_same_run_read_back_whole_is_accepted(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The other side: an untouched run (every span once) reads back, and the check names no line."""
    from harness.cli import main

    base, _other = _shards(tmp_path_factory)
    env = {"MEMHARNESS_HISTORY": str(tmp_path / "history.sqlite")}
    assert main(["report", str(base), "--output", str(tmp_path / "r.html")], environ=env) == 0
    assert "written twice" not in capsys.readouterr().err
