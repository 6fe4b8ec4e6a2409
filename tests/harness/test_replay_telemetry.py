from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.trace import SpanKind, StatusCode

from harness.replay import replay, scripted_model
from harness.scenario import load_scenario
from memory_core.model import ScriptedModel
from tests.harness.conftest import SCENARIOS, OTel

LIFECYCLE = """\
clock: 2026-03-02T09:00:00Z
facts:
  terse: {type: feedback, match: ["terse"]}
  dash: {type: reference, match: ["grafana"]}
memories:
  - {path: reference/g.md, name: Dash, description: grafana dash, type: reference, body: "grafana.internal/d/x",
     facts: [dash], age: 3d}
steps:
  - session: s1
    turns: [{user: "always keep review replies terse"}]
  - dream: {force: true}
  - recall: {query: "review please, terse", expect: [terse]}
  - forget: {query: "keep review replies terse", expect_removed: [terse]}
  - check: {facts_present: [dash], facts_absent: [terse]}
"""


def _spans(otel: OTel) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for s in otel.spans.get_finished_spans():
        out.setdefault(s.name, []).append(s)
    return out


def test_heuristic_lifecycle_spans_metrics_and_logs(otel: OTel, write_scenario: Callable[[str, str], Path]) -> None:
    scenario = load_scenario(write_scenario("life.yaml", LIFECYCLE))
    result = replay(scenario, strategy="heuristic", telemetry=otel.telemetry)
    assert result.status == "passed", result.failures
    spans = _spans(otel)
    [root] = spans["scenario life"]
    assert root.attributes["test.case.name"] == "life"
    assert root.attributes["test.case.result.status"] == "pass"
    assert f"{root.context.trace_id:032x}" == result.trace_id
    [recall] = spans["search_memory"]
    assert recall.kind == SpanKind.INTERNAL
    assert recall.parent.span_id == root.context.span_id
    assert recall.attributes["gen_ai.operation.name"] == "search_memory"
    assert recall.attributes["memory.recall.strategy"] == "heuristic"
    assert recall.attributes["memory.recall.candidates"] == 2
    assert "gen_ai.memory.query.text" not in recall.attributes  # no content unless opted in
    upserts = spans["upsert_memory"]
    assert [s.attributes["memory.operation"] for s in upserts] == ["extract", "dream"]
    assert upserts[0].attributes["memory.status"] == "completed"
    assert upserts[1].attributes["memory.status"] in ("updated", "noop")
    [delete] = spans["delete_memory"]
    assert delete.attributes["memory.records.deleted"] == 1
    assert all(s.context.trace_id == root.context.trace_id for group in spans.values() for s in group)
    durations = otel.metric_points("gen_ai.client.operation.duration")
    ops = {p.attributes["memory.operation"] for p in durations}  # type: ignore[attr-defined]
    assert ops == {"extract", "dream", "recall", "forget"}
    assert list(durations[0].explicit_bounds[:3]) == [0.01, 0.02, 0.04]  # type: ignore[attr-defined]
    assert otel.metric_points("memory.recall.records")
    index_size = otel.metric_points("memory.store.index.size")
    assert index_size
    assert index_size[0].value > 0
    by_type = {p.attributes["memory.type"]: p.value for p in otel.metric_points("memory.store.record.count")}  # type: ignore[attr-defined]
    assert by_type == {"user": 0, "feedback": 0, "project": 0, "reference": 1}  # after the forget
    logs = otel.logs.get_finished_logs()
    names = [lg.log_record.event_name for lg in logs]
    assert names == ["memory.extract", "memory.dream", "memory.recall", "memory.forget"]
    recall_log = logs[2].log_record
    assert recall_log.trace_id == root.context.trace_id
    assert recall_log.span_id == recall.context.span_id
    assert recall_log.body == "Memory recall: strategy=heuristic. Selected 2/2 docs."


def test_model_fallback_visible_in_spans(otel: OTel, write_scenario: Callable[[str, str], Path]) -> None:
    scenario = load_scenario(write_scenario("fb.yaml", LIFECYCLE))
    model = scripted_model([{"error": "timeout", "message": "5 s elapsed"}, {"operations": []},
                            {"selected_memories": ["nope.md"]}, {"selectedCandidateIds": []}])
    result = replay(scenario, strategy="model", telemetry=otel.telemetry, model=model)
    spans = _spans(otel)
    chats = spans["chat scripted"]
    assert [c.kind for c in chats] == [SpanKind.CLIENT] * 4
    assert chats[0].status.status_code == StatusCode.ERROR
    assert chats[0].attributes["error.type"] == "timeout"
    assert chats[0].attributes["memory.llm.purpose"] == "auto-memory-extract"
    [recall] = spans["search_memory"]
    assert recall.attributes["memory.recall.strategy"] == "heuristic"
    assert recall.attributes["memory.fallback_reason"] == "unknown_path"
    assert chats[2].parent.span_id == recall.context.span_id
    recall_probe = next(p for p in result.probes if p.kind == "recall")
    assert recall_probe.strategy_used == "heuristic"
    assert recall_probe.fallback_reason == "unknown_path"
    assert recall_probe.tokens.calls == 1
    forget_probe = next(p for p in result.probes if p.kind == "forget")
    assert forget_probe.strategy_used == "none"  # empty model answer: no fallback (spec §8.2)
    assert result.status == "failed"  # ... so the terse fact was not forgotten, and the scenario says so
    assert any("facts still covered" in f for f in result.failures)


def test_failing_operation_marks_span_error(otel: OTel, write_scenario: Callable[[str, str], Path]) -> None:
    # every write of the dream fails (a full disk), injected as a scenario step through the store
    text = LIFECYCLE.replace("  - dream: {force: true}\n", "  - fault: {io: write_error, match: '*meta.json', times: 100}\n"
                                                            "  - dream: {force: true, expect_status: skipped}\n")
    scenario = load_scenario(write_scenario("broken.yaml", text))
    result = replay(scenario, strategy="heuristic", telemetry=otel.telemetry)
    dream = next(s for s in _spans(otel)["upsert_memory"] if s.attributes["memory.operation"] == "dream")
    assert dream.status.status_code == StatusCode.ERROR
    assert dream.attributes["memory.status"] == "failed"
    assert dream.attributes["error.type"]
    assert "injected fault: write failed" in (dream.status.description or "")
    assert any("expected status skipped, got failed" in f for f in result.failures)
    assert "step 2 (dream, line 12)" in result.failures[0]


def test_content_capture_is_opt_in(otel: OTel, write_scenario: Callable[[str, str], Path]) -> None:
    otel.telemetry.capture_content = True
    scenario = load_scenario(write_scenario("c.yaml", LIFECYCLE))
    replay(scenario, strategy="model", telemetry=otel.telemetry,
           model=ScriptedModel.of([{"patches": []}, {"operations": []}, {"selected_memories": []},
                                   {"selectedCandidateIds": []}]))
    chat = _spans(otel)["chat scripted"][0]
    assert "gen_ai.input.messages" in chat.attributes


def _strip(rows: Any) -> list[str]:
    return [json.dumps({k: v for k, v in r.to_row().items() if k != "duration_ms"}, sort_keys=True) for r in rows]


def _tree(otel: OTel) -> list[tuple[Any, ...]]:
    # wall-clock times differ between replays by nature; ids, structure and attributes must not
    return [(s.name, s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None,
             tuple(sorted((k, str(v)) for k, v in s.attributes.items() if k != "memory.duration_ms")))
            for s in otel.spans.get_finished_spans()]


def test_replay_is_deterministic(write_scenario: Callable[[str, str], Path]) -> None:
    scenario = load_scenario(SCENARIOS / "dream" / "cross-file-dedupe.yaml")
    runs = []
    for _ in range(2):
        o = OTel()
        r = replay(scenario, strategy="heuristic", telemetry=o.telemetry)
        runs.append((_strip(r.probes), _tree(o), r.trace_id))
        o.shutdown()
    assert runs[0] == runs[1]


def test_trailing_runs_are_checked_and_traced(otel: OTel) -> None:
    shipped = SCENARIOS / "language" / "queued-supersede.yaml"
    good = replay(load_scenario(shipped), strategy="heuristic", telemetry=otel.telemetry)
    assert good.status == "passed", good.failures
    extracts = [s for s in _spans(otel)["upsert_memory"] if s.attributes["memory.operation"] == "extract"]
    assert len(extracts) == 5  # three queued requests, the trailing run, the later extraction of session a


def test_a_wrong_trailing_expectation_fails_with_what_ran(tmp_path: Path, otel: OTel) -> None:
    text = (SCENARIOS / "language" / "queued-supersede.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("{runs: 1, sessions: [c]", "{runs: 3, sessions: [a, b, c]"), encoding="utf-8")
    result = replay(load_scenario(bad), strategy="heuristic", telemetry=otel.telemetry)
    assert result.status == "failed"
    assert any("trailing run: expected 3 trailing run(s), got 1 (sessions ['c'])" in f for f in result.failures)
    assert any("expected trailing runs for sessions ['a', 'b', 'c'], got ['c']" in f for f in result.failures)


def test_a_vanished_file_is_listed_but_gone(tmp_path: Path) -> None:
    from harness.systems.faulty_store import FaultyStore
    from memory_core.files.store import FileStore

    store = FaultyStore(FileStore(tmp_path))
    store.write("user/a.md", "x")
    store.write("user/b.md", "y")
    store.inject("vanish", "user/a.md", 2)
    assert store.list() == ["user/a.md", "user/b.md"]
    assert store.stat("user/a.md") is None
    assert "user/a.md" in store.list()  # the second listing still names it
    assert store.list() == ["user/b.md"]  # then the listing is true again


def _reference_without(*missing: str) -> Any:
    from harness.replay import Capability
    from harness.systems.files import factory_for

    base = factory_for()

    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
        system = base(workdir, clock, model, events)
        system.capabilities = system.capabilities - {Capability(m) for m in missing}
        return system
    return factory


def test_a_queue_is_skipped_whole_when_one_of_its_steps_needs_a_missing_capability(tmp_path: Path, otel: OTel) -> None:
    for tool_step in (0, 1):  # the opening or the closing step writes memory itself
        turns = ['{user: "always rebase before merging"}', '{user: "never skip ci on release branches"}']
        turns[tool_step] += ", {tool_write: feedback/x.md}"
        path = tmp_path / f"q{tool_step}.yaml"
        path.write_text("steps:\n"
                        f"  - {{session: a, turns: [{turns[0]}], queued_behind: busy}}\n"
                        f"  - {{session: b, turns: [{turns[1]}], queued_behind: busy, expect_trailing: {{runs: 1}}}}\n"
                        "  - {session: c, turns: [{user: 'I prefer tabs over spaces in every file I edit'}],"
                        " expect_extract: {status: completed}}\n", encoding="utf-8")
        result = replay(load_scenario(path), strategy="heuristic", telemetry=otel.telemetry,
                        system_factory=_reference_without("memory_tool"))
        assert result.error is None, result.error
        assert result.failures == ()  # nothing runs behind a hold never released
        skipped = [p for p in result.probes if p.skipped]
        # the queue is skipped whole for the capability; what follows it is skipped too (it was written against a
        # store the queue would have changed), saying after which step
        assert [p.step for p in skipped] == [0, 1, 2]
        assert all("tool_write needs capability memory_tool" in (p.skipped or "") for p in skipped)
        assert (skipped[2].skipped or "").startswith("after step 0 was skipped")


def test_records_are_listed_again_after_a_clock_advance(tmp_path: Path, otel: OTel) -> None:
    from datetime import timedelta

    from harness.systems.files import factory_for

    base = factory_for()

    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
        system = base(workdir, clock, model, events)
        original, born = system.documents, clock.now()

        def fresh_only() -> Any:  # a system whose records expire after a day by its clock (a TTL)
            return [] if clock.now() - born > timedelta(days=1) else original()
        system.documents = fresh_only
        return system

    path = tmp_path / "ttl.yaml"
    path.write_text("clock: 2026-03-02T09:00:00Z\nfacts:\n  tabs: {type: user, match: [tabs]}\n"
                    "memories:\n  - {path: user/tabs.md, type: user, name: Tabs, body: 'Indents with tabs',"
                    " facts: [tabs]}\n"
                    "steps:\n  - check: {facts_present: [tabs]}\n  - advance: 2d\n"
                    "  - check: {facts_absent: [tabs]}\n", encoding="utf-8")
    result = replay(load_scenario(path), strategy="heuristic", telemetry=otel.telemetry, system_factory=factory)
    assert result.failures == (), result.failures
