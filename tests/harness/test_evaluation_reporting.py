"""Evaluation and reporting on hand-made typed records: numbers, round trips, rendering."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.evaluation import Gate, RunSummary, evaluate_run
from harness.replay import Probe, ScenarioResult, TokenUsage
from harness.reporting import read_run, render_report, summary_markdown, write_run


def _recall(scenario: str, step: int, strategy: str, precision: float, recall: float, *, query: str = "q",
            ms: float = 1.0, skipped: str | None = None) -> Probe:
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Probe(scenario=scenario, step=step, kind="recall", strategy=strategy, query=query, selected=("a.md",),
                 expected=("fact",), covered=("fact",) if recall else (), passed=True, duration_ms=ms,
                 metrics={"precision": precision, "recall": recall, "f1": f1, "mrr": recall, "ndcg": recall,
                          "abstention": None},
                 tokens=TokenUsage(calls=1 if strategy == "model" else 0, input=7, output=2), k=5, skipped=skipped)


def _result(scenario: str, strategy: str, probes: tuple[Probe, ...], *, failures: tuple[str, ...] = ()) -> ScenarioResult:
    return ScenarioResult(scenario=scenario, strategy=strategy, passed=not failures, failures=failures, probes=probes,
                          trace_id="0" * 32, description=f"desc of {scenario}", tags=("t",))


def _results() -> list[ScenarioResult]:
    out = []
    for i in range(6):
        sid = f"s{i}"
        out.append(_result(sid, "heuristic", (_recall(sid, 0, "heuristic", 0.5, 1.0, query="<script>x</script>"),)))
        out.append(_result(sid, "model", (_recall(sid, 0, "model", 1.0, 0.5 if i % 2 else 1.0),)))
    out.append(_result("skip", "heuristic", (_recall("skip", 0, "heuristic", 0.0, 0.0, skipped="needs capability x"),)))
    return out


def test_metrics_exclude_skipped_probes_and_gates_read_them() -> None:
    summary = evaluate_run(_results(), ["heuristic", "model"],
                           gates=[Gate("recall.recall", "model", min=0.8), Gate("recall.precision", min=0.6)])
    h, m = summary.strategies["heuristic"], summary.strategies["model"]
    assert h.metrics["recall.precision"] == 0.5  # the skipped probe (precision 0) feeds nothing
    assert h.metrics["recall.probes"] == 6.0
    assert m.metrics["recall.recall"] == 0.75
    assert m.metrics["llm.calls"] == 6.0
    assert [(g.name, g.passed) for g in summary.gates] == [
        ("model recall.recall >= 0.8", False), ("heuristic recall.precision >= 0.6", False),
        ("model recall.precision >= 0.6", True)]
    assert not summary.passed
    [f1] = [c for c in summary.comparisons if c.metric == "recall.f1"]
    assert (f1.a, f1.b, f1.n) == ("heuristic", "model", 6)


def test_run_directory_round_trips_into_the_same_records(tmp_path: Path) -> None:
    results = _results()
    summary = evaluate_run(results, ["heuristic", "model"])
    write_run(tmp_path, summary=summary, results=results, spans=[], html="<html></html>")
    again, back, spans = read_run(tmp_path)
    assert back == results
    assert again == RunSummary.from_dict(json.loads((tmp_path / "summary.json").read_text()))
    assert again.strategies == summary.strategies
    assert again.comparisons == summary.comparisons
    assert spans == []
    assert oct((tmp_path / "summary.json").stat().st_mode & 0o777) != oct(0o600)  # the umask's mode, not mkstemp's


def test_markdown_and_html_render_what_evaluation_computed() -> None:
    results = _results()
    summary = evaluate_run(results, ["heuristic", "model"], gates=[Gate("recall.recall", "model", min=0.8)])
    md = summary_markdown(summary)
    assert "## memharness — FAILED" in md
    assert "| recall.precision | 0.5 | 1 |" in md
    assert "**FAIL**" in md
    html = render_report(summary, results, [])
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<script>x</script>" not in html
    assert "skipped: needs capability x" in html
    assert "model recall.recall &gt;= 0.8" in html
    assert "Significant = the 95% CI excludes 0 and p &lt; 0.05" in html  # the rule `Comparison.significant` applies


def _one(scenario: str, probe: Probe, *, failures: tuple[str, ...] = (), skipped: str | None = None) -> ScenarioResult:
    return ScenarioResult(scenario=scenario, strategy="heuristic", passed=not failures, failures=failures,
                          probes=(probe,), trace_id="0" * 32, skipped=skipped)


def test_a_check_that_passed_and_is_skipped_or_failing_now_is_a_flip_even_in_a_failed_scenario() -> None:
    from dataclasses import replace

    from harness.evaluation import compare_runs

    ok = _recall("s", 0, "heuristic", 1.0, 1.0)
    base = [_one("s", ok, failures=("step 3 (check, line 9): something else",)),  # the scenario failed overall
            _one("t", replace(ok, scenario="t"))]
    cand = [_one("s", replace(ok, passed=False), failures=("step 0 (recall, line 4): recall 0 < 1",)),
            _one("t", replace(ok, scenario="t", skipped="needs capability recall_prompt"))]
    flips = {(f.scenario, f.step, f.now) for f in compare_runs(base, cand).flips}
    assert flips == {("s", 0, "failed"), ("t", 0, "skipped")}


def test_a_metric_measured_in_the_baseline_and_no_longer_fails_its_gate() -> None:
    from dataclasses import replace

    from harness.evaluation import compare_runs

    base = [_one(f"s{i}", _recall(f"s{i}", 0, "heuristic", 1.0, 1.0)) for i in range(4)]
    cand = [_one(r.scenario, replace(r.probes[0], skipped="needs capability x")) for r in base]
    baseline = compare_runs(base, cand)
    summary = evaluate_run(cand, ["heuristic"], gates=[Gate("recall.recall", max_drop=0.0, vs="baseline")],
                           baseline=baseline)
    by_name = {g.name: g for g in summary.gates}
    assert not by_name["heuristic recall.recall drop vs baseline <= 0.0"].passed
    assert "no longer measured" in by_name["heuristic recall.recall drop vs baseline <= 0.0"].detail
    assert [v.verdict for v in baseline.verdicts] == ["worse"]
    measured = evaluate_run(base, ["heuristic"]).strategies["heuristic"].metrics
    assert measured["recall.recall"] == 1.0
    assert measured["dedupe.retention"] is None  # nothing dreamt: no invented 1.0 for a gate to pass on
    assert measured["index.within_limits"] is None


def test_a_run_whose_text_holds_unicode_line_breaks_reads_back(tmp_path: Path) -> None:
    # the writers leave non-ASCII unescaped: U+2028, U+0085 or a form feed inside a query must not split a row
    odd = "tabs\u2028or\u0085spaces\x0cand\u2029more\x1c"
    results = [replace(_result("u", "heuristic", (_recall("u", 0, "heuristic", 1.0, 1.0, query=odd),)),
                       trace_id="a" * 32)]  # the span's trace (read back against results.jsonl since round 15)
    summary = evaluate_run(results, ["heuristic"])
    span = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "a" * 32, "spanId": "b" * 16, "name": odd}]}]}]}
    write_run(tmp_path, summary=summary, results=results, spans=[span], html="<html></html>")
    _, back, spans = read_run(tmp_path)
    assert back == results
    assert spans == [span]


def test_a_cassette_whose_reply_holds_a_unicode_line_break_reads_back(tmp_path: Path) -> None:
    from harness.replay import Cassette
    from harness.reporting._view import load_cassette_calls

    key = "1" * 64
    entry = {"key": key, "scenario": "s", "step": 0, "purpose": "recall", "prompt_version": "v",
             "request": {"messages": [{"role": "user", "content": "q\u2028x"}]},
             "response": {"text": '{"selected_memories": ["a\u2028b\u0085c"]}', "model": "m", "input_tokens": 1,
                          "output_tokens": 1, "latency_ms": 1.0}}
    Cassette(tmp_path).append(entry)
    assert Cassette.open(tmp_path).entries == {key: entry}
    [call] = load_cassette_calls(tmp_path)[("s", 0)]
    assert "a\u2028b\u0085c" in call.reply


def test_the_verdict_in_words_never_says_a_point_ci_away_from_zero_includes_it() -> None:
    """One probe that moved by +1: the CI is the point +1 (it excludes 0) and the exact sign test's p is 1, so the
    delta is not significant. The words said "95% CI +1 to +1 includes 0"; they now give the real reason."""
    from harness.evaluation import compare
    from harness.reporting._view import effect_words

    one = compare("a", "b", "recall.f1", [0.0], [1.0], [False], [True])
    assert not one.significant
    assert one.ci95 == (1.0, 1.0)
    words = effect_words(one)
    assert "includes 0" not in words
    assert words.startswith("no detectable change: recall.f1 +1 (95% CI +1 to +1 but every delta is the same: "
                            "exact sign test p = 1, not significant, n = 1")
    spread = compare("a", "b", "recall.f1", [0.5, 0.5, 0.5, 0.5], [0.0, 1.0, 0.25, 0.75], [True] * 4, [True] * 4)
    assert not spread.significant
    assert spread.ci95[0] <= 0 <= spread.ci95[1]
    assert "includes 0, not significant" in effect_words(spread)


def test_summary_markdown_lists_unfinished_runs_apart_from_failed_ones() -> None:
    """The verdict counts "1 failed, 1 did not finish (error)"; the list under it said "Failed scenarios" for both."""
    failed = _result("bad", "heuristic", (_recall("bad", 0, "heuristic", 0.5, 1.0),), failures=("step 0: wrong",))
    errored = ScenarioResult(scenario="miss", strategy="model", passed=False, failures=(), probes=(),
                             trace_id="0" * 32, error="miss [model] step 0 (recall, line 9): unrecorded model call")
    results = [failed, errored]
    md = summary_markdown(evaluate_run(results, ["heuristic", "model"]), results)
    assert "1 failed, 1 did not finish (error)" in md
    assert "### Failed and unfinished scenarios" in md
    # README: summary.md, like the terminal and the report, marks the metrics of an incomplete run as a partial suite
    assert "INCOMPLETE: 1 scenario run(s) could not finish (e.g. miss [model]); every metric below covers a partial " \
           "suite." in md
    assert "- `bad` [heuristic] (no file): step 0: wrong" in md
    assert "- `miss` [model] did not finish (error) (no file): step 0 (recall, line 9): unrecorded model call" in md
    only_failed = summary_markdown(evaluate_run([failed], ["heuristic"]), [failed])
    assert "### Failed scenarios" in only_failed
    assert "unfinished" not in only_failed


def test_the_report_colours_a_comparison_by_the_metric_s_direction() -> None:
    """More fallbacks is worse: the comparisons table coloured every significant rise green ("up") whatever the
    metric, while its words (and docs/metrics.md) said "worse"."""
    from dataclasses import replace

    from harness.evaluation import compare
    from harness.reporting._view import delta_css, effect_words

    results = _results()
    rising = compare("heuristic", "model", "recall.fallbacks", [0.0] * 20, [1.0] * 10 + [2.0] * 10,
                     [True] * 20, [True] * 20)
    assert effect_words(rising).startswith("worse")
    assert delta_css(rising) == "down"
    summary = replace(evaluate_run(results, ["heuristic", "model"]), comparisons=[rising])
    html = render_report(summary, results, [])
    assert '<span class="delta down">+1.5</span>' in html
    assert '<span class="delta up">+1.5</span>' not in html


def test_a_verdict_says_no_data_for_a_metric_no_longer_measured() -> None:
    """`memharness compare` printed "recall.f1 1.0 → None"; every other output says "no data" for an unmeasured
    metric (docs/metrics.md)."""
    from harness.evaluation import compare_runs

    base = [_result("s0", "heuristic", (_recall("s0", 0, "heuristic", 1.0, 1.0),))]
    cand = [_result("s0", "heuristic", (_recall("s0", 0, "heuristic", 0.0, 0.0, skipped="needs capability x"),))]
    verdicts = compare_runs(base, cand).verdicts
    text = next(v.text for v in verdicts if v.strategy == "heuristic")
    assert "None" not in text
    assert "recall.f1 1 → no data" in text


def test_summary_markdown_writes_a_metric_as_the_terminal_and_the_report_do() -> None:
    """summary.md wrote 3 decimals (latency p95 "1.443") where the terminal and the report write 3 significant
    digits ("1.44"): one run, two numbers."""
    from harness.reporting import closing_table

    results = [_result(f"s{i}", "heuristic", (_recall(f"s{i}", 0, "heuristic", 0.5, 1.0, ms=1.4427),))
               for i in range(3)]
    summary = evaluate_run(results, ["heuristic"])
    assert summary.strategies["heuristic"].metric("latency.recall_ms.p95") == 1.443
    md_row = next(line for line in summary_markdown(summary, results).splitlines()
                  if line.startswith("| latency.recall_ms.p95 |"))
    terminal_row = next(line for line in closing_table(summary, results) if line.startswith("latency.recall_ms.p95"))
    assert md_row == "| latency.recall_ms.p95 | 1.44 |"
    assert terminal_row.split()[-1] == "1.44"
    assert "1.44</td>" in render_report(summary, results, [])


def test_progress_lines_count_as_the_verdict_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Off a TTY the progress said "3 error, 1 passed" (statuses in alphabetical order) where the verdict says
    "1/4 scenario runs passed, 3 did not finish (error)"."""
    from harness.cli._progress import progress_bar

    advance, stop = progress_bar(4)
    for i in range(3):
        advance(ScenarioResult(f"e{i}", "model", False, (), (), "t", error="boom"))
    advance(ScenarioResult("p", "model", True, (), (), "t"))
    stop()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "replayed model: 4 scenario run(s), 1 passed, 3 did not finish (error)"
    assert lines[1].startswith("replayed 4 scenario run(s) in ")


def test_a_card_says_skipped_runs_in_words_and_never_calls_an_all_skipped_column_failed() -> None:
    import re
    from dataclasses import replace

    results = [_result(f"s{i}", "heuristic", (_recall(f"s{i}", 0, "heuristic", 1.0, 1.0),)) for i in range(3)]
    results.append(replace(_result("s3", "heuristic", ()), skipped="needs capability x"))
    results += [replace(_result(f"s{i}", "model", ()), skipped="implements heuristic only") for i in range(4)]
    html = render_report(evaluate_run(results, ["heuristic", "model"]), results, [])
    cards = dict(re.findall(r'data-strategy="([^"]+)">\s*<h3>[^<]*<span class="([^"]*)">', html))
    heads = dict(re.findall(r'data-strategy="([^"]+)">\s*<h3>[^<]*<span[^>]*>([^<]*)</span>', html))
    assert heads == {"heuristic": "3/4 passed, 1 skipped", "model": "all 4 skipped"}
    assert cards == {"heuristic": "small hit", "model": "small muted"}


def test_a_skipped_gate_says_skipped_once_in_the_markdown() -> None:
    summary = evaluate_run(_results(), ["heuristic", "model"], gates=[Gate("recall.recall", "bm25", min=0.8)])
    md = summary_markdown(summary)
    assert "| skipped: strategy bm25 is not in this run |" in md
    assert "skipped: skipped" not in md
