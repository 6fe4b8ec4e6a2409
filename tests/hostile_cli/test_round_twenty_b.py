"""Round 20b (blind, generated): what round 20's probe of the SQLite system found — hostile query text and hostile
model answers reaching ``memory_core.sqlite`` through scenarios run with ``--system sqlite``, and hostile plug-ins.

The probe (kept out of the repository) drew FTS5 syntax (quotes, ``NEAR``, ``*``, ``-``, ``^``, column filters,
unbalanced parentheses, glued punctuation) into recall, forget and trace-search text, compared each outcome with the
text's words alone, drew scripted-model answers (malformed and truncated JSON, wrong types, JSON escapes of control
characters) for extraction, decomposition and episodes, and ran generated scenarios and plug-ins through
``memharness run`` / ``report`` / ``compare``, classified by exit code and message.

1. A forget in the fixed mode (the trigram index) dropped every word of under three characters from the words it
   requires: ``forget "db password"`` selected (and deleted) every memory holding "password", the e-mail password
   included, and ``forget "x·the"`` (a word glued to a stop word by a mark the keyword split keeps) every memory
   holding "the". Such words are now required as whole words, as the other words are (a short CJK word still goes
   through ``LIKE``): a forget never selects a memory lacking one of its words.
2. A scripted decomposition answer whose keyword held a NUL (the JSON escape ``\\u0000`` in the model's text) failed
   the shipped SQLite system's scenario: "the system under test failed: recall() returned a RecallResult with
   details=…", as the protocol refuses a NUL in a ``details`` text and the adapter reported the keywords and the
   enhanced query as the model gave them. The adapter now writes a NUL there as ``\\x00``; the recall passes.
3. A SQLite recall's or forget's ``options: {memory_type: …}`` was taken as given: a typo (``factz``) or any text
   matched no row, so ``forbid:`` held and a forget removed nothing, in silence (``validate --strict`` passed it),
   and a file-core type (``project``, which a seeded memory of that type is stored as ``fact``) matched nothing too.
   Now the type is one of the port's (any case) or a file-core type mapped as the seeding maps it; anything else is
   one located line at the step's ``options``.
4. An id holding a control character passed the protocol's shape check: a plug-in's recall selecting ``"a\\x1bb"``
   or ``"a\\x00b"`` (or a forget removing it, a record named by it) failed only its expectation, and the failure
   message carried the raw ESC or NUL into ``report.html``. Now such an id is the system's failure at that call
   ("selected holding …, expected an id without control characters"). The SQLite system's seed field ``id``, which
   a scenario gives as text (a tab, a line break, NEL, a line separator, a bidirectional control; or empty, which
   was dropped for a fresh id in silence), is refused at its memory's ``system:`` line before any run, so the
   shipped system is never blamed for the scenario's id.
5. A plug-in's lone surrogate in an id (``selected=("\\ud800",)``) passed the shape check and made the scenario
   INCOMPLETE (exit 2, "UnicodeEncodeError", blamed on the harness) instead of the system's failure; a recall's
   ``error`` (or a warning) holding ESC or NUL was quoted raw into the step's failure, ``summary.md`` and
   ``report.html``. The id is now the system's failure (as 4), and the error and each warning are kept on one
   printable line (``one_line``'s escapes) as they cross into the harness.
6. An extraction item whose ``importance`` was the text ``"nan"`` (any case, signed) was stored with importance 0.1:
   the port's NaN check ran after the clamp to [0.1, 1], which turns NaN into 0.1, so the check never fired. The
   item is now the bad item the parser's rule makes it (memory_core/sqlite/extraction.py): skipped alone in the
   fixed mode, the whole batch lost with the seed's ``q9_importance_drops_batch``.
7. The SQLite system's own check ``system: {index_within_limits: …}`` raised ``ValueError: max() arg is an empty
   sequence`` on an index with no section (its message was built before it was known to be needed): the scenario
   failed as "the system under test failed: system_check() raised …". The check now judges such an index (within
   the caps) as any other.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import SystemFailure
from harness.replay._shapes import checked_result, shape_problem
from harness.system import ForgetResult, MemoryRecord, RecallResult
from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks, SqliteMemory
from memory_core.sqlite.fts import fts_words
from memory_core.sqlite.retrieval import STOP_WORDS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, cli

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CLI_SETTINGS = settings(SETTINGS, max_examples=examples(15))
"""A whole ``memharness run`` an example."""
T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
SHORT = st.text("abdfgxyz0123456789", min_size=2, max_size=2).filter(lambda w: w not in STOP_WORDS)
"""A word of two characters (a single character is no keyword of the rule decomposition, nor is a stop word)."""
LONG = st.sampled_from(["password", "billing", "docker", "editor", "database", "cat"])
GLUE = st.sampled_from([" ", "·", "’", "⬞", "⸓"])


def _memory(tmp: Path) -> SqliteMemory:
    return SqliteMemory(tmp / "m.db", FixedClock(T0), None, Quirks.fixed(), None, identity_dir=tmp / "identity")


@SETTINGS
@given(short=SHORT, other=SHORT, long=LONG, glue=GLUE)
def test_forget_never_drops_a_short_word(short: str, other: str, long: str, glue: str) -> None:
    """1. Each memory a forget selects holds every word of its query (a short one too), as a whole word."""
    tmp = Path(tempfile.mkdtemp())
    try:
        mem = _memory(tmp)
        mem.seed([{"content": f"the {short} {long} is kept here", "type": "fact", "id": "with"},
                  {"content": f"the {other} {long} is kept here", "type": "fact", "id": "other"},
                  {"content": f"nothing {long} only", "type": "fact", "id": "without"},
                  {"content": "the cat sat on the mat", "type": "fact", "id": "the"}])
        query = f"{short}{glue}{long}"
        selected = mem.forget(query, dry_run=True).candidates
        for memory_id in selected:
            text = next(d.text for d in mem.documents() if d.id == memory_id)
            words = set(fts_words(text))
            assert set(fts_words(query)) <= words, (query, memory_id, text, selected)
        assert "with" in selected, (query, selected)  # the memory holding every word is still found
        glued = mem.forget(f"{short[0]}·the", dry_run=True).candidates
        assert "the" not in glued, glued
        assert "without" not in glued, glued
        mem.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


DECOMPOSE = """description: "a decomposition keyword holding a control character"
tags: [sqlite, probe]
design: s1-sqlite
strategies: [model]
scripted_model:
  - '{{"keywords": [{keywords}], "intent": "search_memory"}}'
clock: 2026-03-02T09:00:00Z
facts:
  lynx: {{type: project, match: ["lynx enclosure"]}}
memories:
  - {{path: project/lynx.md, name: one, type: project, body: "lynx enclosure", system: {{importance: 0.5}}}}
steps:
  - recall:
      query: "which wild cats live here"
      expect: [lynx]
"""
ESCAPED = st.sampled_from(["\\u0000", "\\u001b", "\\u0007", "\\u007f", "\\u0085", "\\u2028"])


@CLI_SETTINGS
@given(escape=ESCAPED, before=st.sampled_from(["", "lynx", "wild"]), after=st.sampled_from(["", "cat", " x"]))
def test_decomposition_control_character_is_no_system_failure(capsys: pytest.CaptureFixture[str], escape: str,
                                                               before: str, after: str) -> None:
    """2. The recall runs and passes whatever control character a decomposition keyword holds."""
    tmp = Path(tempfile.mkdtemp())
    try:
        keywords = f'"{before}{escape}{after}", "lynx"'
        path = tmp / "decompose.yaml"
        path.write_text(DECOMPOSE.format(keywords=keywords), encoding="utf-8")
        o = cli(["run", str(path), "--system", "sqlite", "--out", str(tmp / "run")], capsys)
        assert "system under test failed" not in o.out + o.err, o.out
        assert o.code == 0, (o.code, o.out, o.err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


TYPED = """description: "a memory_type option"
tags: [sqlite, probe]
design: s1-sqlite
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
facts:
  lynx: {{type: project, match: ["lynx enclosure"]}}
memories:
  - {{path: project/lynx.md, name: one, type: project, body: "lynx enclosure", system: {{importance: 0.5}}}}
steps:
  - {step}:
      query: "lynx enclosure"
      options: {{{path}memory_type: {kind}}}
"""
GOOD_TYPES = ["fact", "FACT", "Fact", "project", "Project", "preference", "rule", "user", "feedback", "reference"]
BAD_TYPES = st.one_of(st.sampled_from(["factz", "facts", "no such type", "projects", "memory", "''", "' fact'", "f act"]),
                      st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
                          lambda t: t not in {"fact", "preference", "skill", "context", "rule", "error", "persona_trait",
                                              "user", "feedback", "project", "reference"}))


@CLI_SETTINGS
@given(kind=BAD_TYPES, step=st.sampled_from(["recall", "forget"]))
def test_unknown_memory_type_is_refused(capsys: pytest.CaptureFixture[str], kind: str, step: str) -> None:
    """3. A memory_type no row can hold is one located line at the step's options (validate and run)."""
    tmp = Path(tempfile.mkdtemp())
    try:
        path = tmp / "typed.yaml"
        path.write_text(TYPED.format(step=step, kind=kind, path="path: typed, " if step == "recall" else ""),
                        encoding="utf-8")
        o = cli(["validate", str(path)], capsys)
        assert o.code == 2, (o.code, o.out, o.err)
        m = LOCATED.match(o.err.strip())
        assert m is not None, o.err
        assert (m["line"], m["field"]) == ("13", f"steps[0].{step}.options"), o.err
        assert "memory_type" in m["what"], o.err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("kind", GOOD_TYPES)
def test_known_memory_type_matches_its_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str) -> None:
    """3. A port type in any case, or a file-core type, filters as the seeded rows are stored."""
    path = tmp_path / "typed.yaml"
    matches = kind.lower() in ("fact", "project", "reference")
    path.write_text(TYPED.format(step="recall", kind=kind, path="path: typed, ").replace(
        "options:", f"{'expect_selected: [project/lynx.md]' if matches else 'forbid: [lynx]'}\n      options:"),
        encoding="utf-8")
    o = cli(["run", str(path), "--system", "sqlite", "--out", str(tmp_path / "run")], capsys)
    assert o.code == 0, (o.code, o.out, o.err)


CONTROL = st.characters(whitelist_categories=("Cc",))


@SETTINGS
@given(control=CONTROL, before=st.text("ab/.", max_size=4), after=st.text("cd.md", max_size=4),
       where=st.sampled_from(["selected", "removed", "record"]))
def test_an_id_with_a_control_character_is_the_systems_failure(control: str, before: str, after: str,
                                                                where: str) -> None:
    """4. Whatever control character an id holds, the shape check names the field; the id without it passes."""
    def result(memory_id: str) -> object:
        if where == "selected":
            return RecallResult(("project/a.md", memory_id))
        if where == "removed":
            return ForgetResult((memory_id,))
        return MemoryRecord(memory_id, "project", "title", "text")
    problem = shape_problem(result(f"{before}{control}{after}"))
    assert problem is not None, (where, before, control, after)
    assert "control characters" in problem, problem
    assert shape_problem(result(f"{before}x{after}")) is None


@pytest.mark.parametrize("escape", ["\\t", "\\n", "\\r", "\\x85", "a\\u0085b", "\\u2028", "\\u2029", "\\u202e", "BLANK"])
def test_a_seeded_sqlite_id_with_a_control_character_is_located(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                 escape: str) -> None:
    """4. The scenario's own id is refused at its memory, never run as the system's failure."""
    path = tmp_path / "seed-id.yaml"
    path.write_text(TYPED.format(step="recall", kind="fact", path="").replace(
        "system: {importance: 0.5}", f'system: {{id: "{"" if escape == "BLANK" else f"x{escape}y"}"}}'), encoding="utf-8")
    o = cli(["validate", str(path)], capsys)
    assert o.code == 2, (o.code, o.out, o.err)
    m = LOCATED.match(o.err.strip())
    assert m is not None, o.err
    assert (m["line"], m["field"]) == ("9", "memories[0].system"), o.err
    assert "id must be one line" in m["what"], o.err


@SETTINGS
@given(bad=st.one_of(st.characters(whitelist_categories=("Cs",)), CONTROL), before=st.text("ab", max_size=3),
       where=st.sampled_from(["error", "warning", "selected"]))
def test_error_and_ids_cross_on_a_printable_line(bad: str, before: str, where: str) -> None:
    """5. A lone surrogate in an id is the system's failure; an error or warning arrives escaped, one printable line."""
    text = f"{before}{bad}z"
    if where == "selected":
        with pytest.raises(SystemFailure, match="expected an id without control characters"):
            checked_result("recall", RecallResult((text,)))
        return
    result = RecallResult((), error=text) if where == "error" else ForgetResult((), warnings=(text,))
    copy = checked_result("recall" if where == "error" else "forget", result)
    shown = copy.error if where == "error" else copy.warnings[0]
    assert shown.isprintable(), repr(shown)
    assert shown.startswith(before), shown


@SETTINGS
@given(nan=st.sampled_from(["nan", "NaN", "-nan", "+NAN", " nan "]), seed_mode=st.booleans(), first=st.booleans())
def test_a_nan_importance_is_a_bad_item(nan: str, seed_mode: bool, first: bool) -> None:
    """6. A NaN importance is never stored: that item is skipped (fixed), or the batch lost (the seed's Q9)."""
    good = {"type": "FACT", "subject": "project", "predicate": "db", "content": "The project database is Postgres 16",
            "importance": 0.9, "duration": "permanent"}
    bad = {**good, "predicate": "cache", "content": "The project caches sessions in Redis 7", "importance": nan}
    items = [bad, good] if first else [good, bad]
    episode = {"summary": "The user described the setup.", "goal": "setup", "outcome": "success", "entities": [],
               "tools_used": []}
    tmp = Path(tempfile.mkdtemp())
    try:
        quirks = Quirks.parse("fixed+q9_importance_drops_batch" if seed_mode else "fixed")
        mem = SqliteMemory(tmp / "m.db", FixedClock(T0), ScriptedModel.of([{"items": items}, episode]), quirks, None,
                           identity_dir=tmp / "identity")
        mem.add_turns("s1", [{"role": "user", "content": "The database is Postgres 16 and sessions live in Redis 7"}])
        mem.extract("s1", strategy="model")
        texts = [d.text for d in mem.documents()]
        assert not any("Redis" in t for t in texts), texts
        assert any("Postgres" in t for t in texts) != seed_mode, texts
        mem.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize(("kind", "within"), [("feedback", True), ("feedback", False), ("user", True), ("project", True)])
def test_index_within_limits_judges_an_index_without_sections(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             kind: str, within: bool) -> None:
    """7. The check holds (true) or fails as a check (false), never as the system's failure."""
    path = tmp_path / "caps.yaml"
    path.write_text(TYPED.format(step="recall", kind="fact", path="").replace("type: project, body", f"type: {kind}, body")
                    .replace("path: project/lynx.md", f"path: {kind}/lynx.md").replace(
        "  - recall:\n      query: \"lynx enclosure\"\n      options: {memory_type: fact}\n",
        f"  - check:\n      system: {{index_within_limits: {str(within).lower()}}}\n"), encoding="utf-8")
    o = cli(["run", str(path), "--system", "sqlite", "--out", str(tmp_path / "run")], capsys)
    assert "system under test failed" not in o.out + o.err, o.out
    assert o.code == (0 if within else 1), (o.code, o.out, o.err)
