"""Bad input through the harness: malformed model JSON, NONE, wrong types, SQL/FTS metacharacters, a locked or
corrupt database — a clear result or one-line error, never a traceback and never a lost row."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cli import main
from harness.replay import load_factory
from harness.scenario import SeedMemory
from harness.systems.sqlite import SqliteSystem
from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemoryError

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
REPLIES = {
    "prose": '"Sure, the user likes Helix."',
    "none": '"NONE"',
    "wrong-types": '{items: "not a list"}',
    "wrong-item-types": '{items: [42, "text", {content: 7, importance: [1]},'
                        ' {type: 9, content: "The user edits in Helix", importance: 0.8}]}',
    "empty-object": "{}",
    "huge": '{items: [{type: FACT, content: "' + "Helix " * 3000 + '", importance: 0.8}]}',
}


def _scenario(tmp_path: Path, reply: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(f"""description: bad model reply
systems: [sqlite]
strategies: [model]
scripted_model:
  - {reply}
  - {{summary: "s"}}
clock: 2026-03-02T09:00:00Z
facts:
  tabs: {{type: user, match: ["tabs"]}}
memories:
  - {{path: user/tabs.md, name: tabs, type: user, body: "Indent with tabs", system: {{importance: 0.9}}}}
steps:
  - session: s1
    turns:
      - user: "I edit everything in Helix these days, it is my main editor now"
  - check:
      facts_present: [tabs]
""", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", sorted(REPLIES))
@pytest.mark.parametrize("variant", ["sqlite", "sqlite:seed"])
def test_bad_model_replies_give_a_result_not_a_traceback(kind: str, variant: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(_scenario(tmp_path, REPLIES[kind])), "--system", variant, "--no-gates",
                 "--out", str(tmp_path / "o")], environ={})
    out = capsys.readouterr()
    assert code == 0, out.out  # the seeded row survives; extraction completes (possibly with nothing)
    assert "Traceback" not in out.out + out.err


QUERIES = ['"; DROP TABLE memories; --', "NEAR(tabs qqq)", "tabs*", "content:tabs", "%_%", '"unbalanced',
           "tabs AND OR NOT", "(((", "^tabs", "-tabs", "tabs\x00qqq", "' OR 1=1 --", "\\", "{tabs}", "tabs:*"]


@pytest.mark.parametrize("variant", ["fixed", "seed"])
def test_sql_and_fts_metacharacters_never_break_or_lose_rows(variant: str, tmp_path: Path) -> None:
    system = load_factory(f"sqlite:{variant}")(tmp_path, FixedClock(NOW), None, None)
    assert isinstance(system, SqliteSystem)
    system.seed(SeedMemory("user/tabs.md", body="Indent with tabs", system={"importance": 0.5}), mtime=NOW)
    for query in QUERIES:
        for strategy in ("heuristic", "bm25"):
            out = system.recall(query, now=NOW, limit=5, excluded=[], strategy=strategy)
            assert len(out.selected) <= 5
        system.forget(query.replace("tabs", "zzz"), now=NOW, strategy="heuristic")  # metacharacters, no match
    assert [d.text for d in system.documents()] == ["Indent with tabs"]
    assert system.system_check("fts_integrity", True) is None
    system.close()


def test_a_locked_database_is_one_line_naming_the_file(tmp_path: Path) -> None:
    system = load_factory("sqlite")(tmp_path, FixedClock(NOW), None, None)
    assert isinstance(system, SqliteSystem)
    system.seed(SeedMemory("user/tabs.md", body="Indent with tabs"), mtime=NOW)
    with system.mem.db.guard("shorten the busy timeout for the test") as conn:
        conn.execute("PRAGMA busy_timeout=50")
    other = sqlite3.connect(tmp_path / "openakita.db", timeout=0.05)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SqliteMemoryError) as err:
            system.seed(SeedMemory("user/b.md", body="Another memory"), mtime=NOW)
        message = str(err.value)
        assert "\n" not in message
        assert "openakita.db" in message
        assert "locked" in message
    finally:
        other.rollback()
        other.close()
    assert [d.text for d in system.documents()] == ["Indent with tabs"]
    system.close()


def test_a_corrupt_database_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "openakita.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(SqliteMemoryError) as err:
        load_factory("sqlite")(tmp_path, FixedClock(NOW), None, None)
    assert "\n" not in str(err.value)
    assert "openakita.db" in str(err.value)


def test_a_bad_seed_field_errors_naming_the_seeding_not_step_minus_one(tmp_path: Path) -> None:
    path = tmp_path / "badseed.yaml"
    path.write_text(
        "design: s1-sqlite\nstrategies: [heuristic]\nfacts:\n  a: {type: user, match: [Helix]}\nmemories:\n"
        "  - {path: user/editor.md, type: user, name: editor, body: The user edits code in Helix, facts: [a],"
        " system: {importance: high}}\nsteps:\n  - recall: {query: Helix editor, expect: [a]}\n", encoding="utf-8")
    code = main(["run", str(path), "--system", "sqlite", "--no-gates", "--out", str(tmp_path / "o")], environ={})
    assert code == 2  # a scenario that could not finish: the run is incomplete
    summary = (tmp_path / "o" / "summary.md").read_text(encoding="utf-8")
    assert ("- `badseed` [heuristic] did not finish (error) ("  # named once (round 17)
            in summary and "): seeding (before step 0: the memories): memories[0] (line 6): memory user/editor.md: "
            "importance must be a number from 0 to 1, got 'high'") in summary  # the entry and its line (issue 33)
    assert "step -1" not in summary


@pytest.mark.parametrize(("options", "message"), [
    ("{max_deletes: 5}", "unknown forget option(s) max_deletes (known: max_delete, memory_type)"),
    ("{max_delete: -1}", "forget option max_delete: expected a whole number >= 0, got -1"),
    ("{max_delete: many}", "forget option max_delete: expected a whole number >= 0, got 'many'"),
    ("{max_delete: true}", "forget option max_delete: expected a whole number >= 0, got True"),
    ("{memory_type: 3}", "forget option memory_type: expected a type name, got 3"),
])
def test_a_bad_forget_option_is_a_one_line_error_naming_it(tmp_path: Path, options: str, message: str) -> None:
    path = tmp_path / "opt.yaml"
    path.write_text("design: s1-sqlite\nstrategies: [heuristic]\nsteps:\n"
                    f"  - forget: {{query: forget the gizmo, options: {options}}}\n", encoding="utf-8")
    assert main(["run", str(path), "--system", "sqlite", "--no-gates", "--out", str(tmp_path / "o")], environ={}) == 2
    error = json.loads((tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8"))["error"]
    assert error == f"opt [heuristic] step 0 (forget, line 4): {message}"  # the scenario's input: an error, exit 2


def test_forget_options_need_the_capability(tmp_path: Path) -> None:
    # the reference has no forget switches: the step is skipped with the reason, never run without them
    path = tmp_path / "opt.yaml"
    path.write_text("strategies: [heuristic]\nsteps:\n  - forget: {query: forget the gizmo, options: {max_delete: 5}}\n",
                    encoding="utf-8")
    assert main(["run", str(path), "--system", "reference", "--no-gates", "--out", str(tmp_path / "o")],
                environ={}) == 0
    probe = json.loads((tmp_path / "o" / "probes.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert probe["skipped"] == "options needs capability forget_options"
