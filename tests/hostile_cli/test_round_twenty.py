"""Round 20: known leftovers of the hostile-input rounds. Each section is one class of input; each test draws its cases.

1. A cassette entry holding a member the recorder never writes (at its top, in ``request``, ``response``, ``error``
   or a message), or a ``request`` whose contents were of the wrong type (``messages`` not a list of ``{role,
   content}`` strings, ``schema`` / ``grammar`` no object, ``temperature`` / ``max_tokens`` no number), loaded in
   silence. Now each is one located line when the cassette is read: the file, the entry's line and the member.
2. A member written twice in one object of a LoCoMo file (``memharness import locomo``, ``bench locomo``) or of the
   GitHub event file (``memharness github comment``: the last of two ``number`` members was the pull request
   commented on) kept the last in silence. Now it is one located line (``file: invalid JSON (member 'x' twice …)``)
   naming the line of the second member in its own object (the locator of round 19 named the second line anywhere
   holding ``"x":``, which in a file whose objects all hold the member, a turn's ``"speaker"``, is another object's).
3. A run directory read back (``report``, ``compare``, ``merge``) took a results row's ``failures`` and ``error``
   as written: an ESC sequence, a NUL, U+2028 or U+202E reached the terminal and the report. Now such a character in
   either is one located line naming ``results.jsonl``, the row and ``failures[i]`` / ``error``. The run itself
   wrote a plug-in's text (an exception's message) raw, so a run could not have been read back under that rule: it
   now writes each such character as its escape (``\\x1b``), and its directory reads back.
4. ``strategies: [heuristic, model]`` with a step's ``expect_strategy: model`` (or an ``expect_fallback`` reason,
   or ``hybrid`` beside ``heuristic``) loaded: round 19 judged the columns together, and one of them could meet it.
   But an expectation holds in every column the step runs (the format scopes none to a column: only ``require_by``
   is per strategy), so the other column failed every run. Now the first column that can never report it is named
   at the key; a step pinned to its strategy (its own ``strategy``, a ``strategy_overrides`` entry) loads.
5. docs/limits.md did not say which forms of ``clock:`` the loader takes (YAML 1.1 timestamps, dates, quoted ISO
   8601 text, with or without a zone). It now does, with a table of examples; each is loaded here and must be read
   as the table says (the instant, or refused at ``clock``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SHOWN_REFUSED as REFUSED
from harness.errors import HarnessError, one_line
from harness.replay import Cassette
from harness.replay._entry_members import ENTRY, ERROR, MESSAGE, REQUEST, RESPONSE
from harness.system import RecallResult, reference_factory
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, assert_one_line_error, cli, load_error_at

REPO = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=examples(30), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# 1. cassette entries ------------------------------------------------------------------------------------------------

SHIPPED = sorted((REPO / "scenarios" / "cassettes").glob("*/cassette.jsonl"))
ENTRIES: list[str] = [line for path in SHIPPED for line in path.read_text(encoding="utf-8").split("\n")[:6] if line]
ERROR_ENTRY = {"reason": "timeout", "message": "the model timed out"}
NAMES = st.text(min_size=1, max_size=12).filter(lambda name: name not in ENTRY | REQUEST | RESPONSE | ERROR | MESSAGE)
JSON: st.SearchStrategy[Any] = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.lists(
    st.integers(), max_size=2) | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)
WRONG: dict[str, st.SearchStrategy[Any]] = {  # a request member and values of a type it never holds
    "messages": JSON.filter(lambda v: not isinstance(v, list) or any(not isinstance(m, dict) for m in v)),
    "schema": JSON.filter(lambda v: not isinstance(v, dict)),
    "grammar": JSON.filter(lambda v: v is not None and not isinstance(v, dict)),
    "temperature": JSON.filter(lambda v: type(v) is not int or v < 0) | st.floats(max_value=-0.001),
    "max_tokens": JSON.filter(lambda v: type(v) is not int or v < 1) | st.floats(),
    "messages[0].role": JSON.filter(lambda v: not isinstance(v, str)),
    "messages[0].content": JSON.filter(lambda v: not isinstance(v, str)),
}


def _write(directory: Path, lines: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cassette.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return directory / "cassette.jsonl"


def _refused(directory: Path, path: Path, line: int, capsys: pytest.CaptureFixture[str]) -> str:
    """The located error reading the cassette gives (``Cassette.open`` and ``memharness cassettes``): its field."""
    with pytest.raises(HarnessError) as caught:
        Cassette.open(directory)
    match = LOCATED.match(f"memharness: {caught.value}")
    assert match, str(caught.value)
    assert match["file"] == str(path), str(caught.value)
    assert int(match["line"]) == line, str(caught.value)
    o = cli(["cassettes", "status", str(directory)], capsys)
    assert_one_line_error(o, mentions=(f"{path}:{line}: {match['field']}",))
    return match["field"]


@SETTINGS
@given(data=st.data(), where=st.sampled_from(["", "request", "response", "error", "request.messages[0]"]),
       name=NAMES, value=JSON)
def test_a_cassette_entry_with_an_unknown_member_is_refused(data: st.DataObject, where: str, name: str, value: Any,
                                                           tmp_path_factory: pytest.TempPathFactory,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    lines = data.draw(st.lists(st.sampled_from(ENTRIES), min_size=1, max_size=4, unique=True))
    index = data.draw(st.integers(0, len(lines) - 1))
    entry = json.loads(lines[index])
    if where == "error":
        entry.pop("response")
        entry["error"] = dict(ERROR_ENTRY)
    block = entry
    for part in filter(None, re.split(r"\.|\[(\d+)\]", where)):
        block = block[int(part) if part.isdigit() else part]
    block[name] = value
    lines[index] = json.dumps(entry, ensure_ascii=False)
    directory = tmp_path_factory.mktemp("cassette")
    field = _refused(directory, _write(directory, lines), index + 1, capsys)
    assert field in (f"{where}.{name}" if where else name, where or "line"), field
    assert where.split(".")[0] in field


@SETTINGS
@given(data=st.data(), member=st.sampled_from(sorted(WRONG)))
def test_a_cassette_request_of_the_wrong_type_is_refused(data: st.DataObject, member: str,
                                                         tmp_path_factory: pytest.TempPathFactory,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lines = data.draw(st.lists(st.sampled_from(ENTRIES), min_size=1, max_size=4, unique=True))
    index = data.draw(st.integers(0, len(lines) - 1))
    entry = json.loads(lines[index])
    value = data.draw(WRONG[member])
    if member.startswith("messages[0]."):
        entry["request"]["messages"][0][member.split(".")[1]] = value
    else:
        entry["request"][member] = value
    lines[index] = json.dumps(entry, ensure_ascii=False)
    directory = tmp_path_factory.mktemp("cassette")
    assert _refused(directory, _write(directory, lines), index + 1, capsys) == f"request.{member}"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name)
def test_every_shipped_cassette_set_still_loads(path: Path) -> None:
    assert len(Cassette.open(path.parent)) == len(path.read_text(encoding="utf-8").splitlines())


# 2. a member twice in a LoCoMo file or the GitHub event file --------------------------------------------------------

WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
TURN = st.fixed_dictionaries({"speaker": st.sampled_from(["Ann", "Bob"]), "text": WORD})
LOCOMO = st.lists(st.fixed_dictionaries({
    "conversation": st.fixed_dictionaries({"speaker_a": st.just("Ann"), "speaker_b": st.just("Bob"),
                                           "session_1_date_time": st.just("1:56 pm on 8 May, 2023"),
                                           "session_1": st.lists(TURN, min_size=1, max_size=4)}),
    "qa": st.lists(st.fixed_dictionaries({"question": WORD, "answer": WORD, "evidence": st.just(["D1:1"]),
                                          "category": st.integers(1, 5)}), max_size=3)}), min_size=1, max_size=3)
EVENT = st.fixed_dictionaries({"action": st.sampled_from(["opened", "synchronize"]),
                               "number": st.integers(1, 999),
                               "pull_request": st.fixed_dictionaries({"number": st.integers(1, 999),
                                                                      "head": st.fixed_dictionaries({"ref": WORD}),
                                                                      "base": st.fixed_dictionaries({"ref": WORD})}),
                               "repository": st.fixed_dictionaries({"full_name": WORD})})
MARK = "\u0001twice"


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every non-empty object in ``value``, outermost first."""
    if isinstance(value, list):
        return [o for item in value for o in _objects(item)]
    if isinstance(value, dict):
        return ([value] if value else []) + [o for item in value.values() for o in _objects(item)]
    return []


def _with_a_member_twice(data: st.DataObject, value: Any) -> tuple[str, int, str]:
    """``value`` as indented JSON text with one member of one of its objects written again (its value changed,
    at the object's end): the text, the line of the second member, its name."""
    target = data.draw(st.sampled_from(_objects(value)))
    name = data.draw(st.sampled_from(sorted(target)))
    target[MARK] = 0
    text = json.dumps(value, indent=1)
    rows = text.split("\n")
    line = next(n for n, row in enumerate(rows, 1) if json.dumps(MARK) in row)
    again = data.draw(st.sampled_from([target[name], None, 7, "other"]))
    rows[line - 1] = rows[line - 1].replace(f"{json.dumps(MARK)}: 0", f"{json.dumps(name)}: {json.dumps(again)}")
    return "\n".join(rows), line, name


@SETTINGS
@given(data=st.data(), samples=LOCOMO)
def test_a_locomo_member_written_twice_is_refused_at_its_line(data: st.DataObject, samples: list[dict[str, Any]],
                                                             tmp_path_factory: pytest.TempPathFactory,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for i, sample in enumerate(samples):  # a valid file but for the member twice
        sample["sample_id"] = f"conv-{i}"
        for j, turn in enumerate(sample["conversation"]["session_1"], 1):
            turn["dia_id"] = f"D1:{j}"
    text, line, name = _with_a_member_twice(data, samples)
    path = tmp_path_factory.mktemp("locomo") / "locomo10.json"
    path.write_text(text, encoding="utf-8")
    o = cli(["import", "locomo", str(path), "--out", str(path.parent / "out")], capsys)
    assert_one_line_error(o, mentions=(f"{path}:{line}: file: invalid JSON (member {name!r} twice",), budget=10.0)
    assert not (path.parent / "out").exists()


@SETTINGS
@given(data=st.data(), event=EVENT)
def test_a_github_event_member_written_twice_is_refused_at_its_line(data: st.DataObject, event: dict[str, Any],
                                                                   failing_run: Path,
                                                                   tmp_path_factory: pytest.TempPathFactory,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """(A real run directory: ``github comment`` checks it before the event since round 20's argv probe.)"""
    text, line, name = _with_a_member_twice(data, event)
    path = tmp_path_factory.mktemp("event") / "event.json"
    path.write_text(text, encoding="utf-8")
    o = cli(["github", "comment", str(failing_run), "--event", str(path), "--repo", "o/r"], capsys,
            environ={"GITHUB_TOKEN": "t"})
    assert_one_line_error(o, mentions=(f"{path}:{line}: file: cannot read the GitHub event (member {name!r} twice",),
                          budget=10.0)


# 3. a results row's failures and error, read back -------------------------------------------------------------------

CONTROLS = st.sampled_from(["\x1b", "\x00", "\x07", "\r", "\x0b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029",
                            "\u202e", "\u202a", "\u2066", "\u2069"])
SAID = st.lists(st.text(alphabet="abc xyz\t\n", max_size=6) | CONTROLS, min_size=1, max_size=6).map("".join)
PLAN: dict[str, str] = {}


class _Saying:
    """The reference system, except that ``recall`` fails with ``PLAN["said"]`` as its ``error`` (the system's text,
    as it wrote it)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def recall(self, *args: Any, **kwargs: Any) -> Any:
        return RecallResult(selected=(), strategy="heuristic", error=PLAN["said"])


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Saying:
    return _Saying(reference_factory(workdir, clock, model, events))


def _run_saying(said: str, out: Path) -> list[dict[str, Any]]:
    PLAN["said"] = said
    code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--system", f"{__name__}:factory",
                 "--no-gates", "--out", str(out)], environ={})
    assert code == 1
    return [json.loads(row) for row in (out / "results.jsonl").read_text(encoding="utf-8").split("\n")[:-1]]


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of a plug-in system failing one shipped recall scenario (its recall fails)."""
    out = tmp_path_factory.mktemp("failing") / "run"
    _run_saying("the index is gone", out)
    return out


@settings(max_examples=examples(10), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(said=SAID)
def test_a_system_s_controls_are_written_as_escapes_and_read_back(said: str, tmp_path_factory: pytest.TempPathFactory,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path_factory.mktemp("run") / os.urandom(4).hex()
    rows = _run_saying(said, out)
    texts = [t for row in rows for t in [*row["failures"], row["error"] or ""]]
    escaped = said if said.isprintable() else one_line(said)  # the protocol's rule for a result's error (round 20b)
    assert any(t.endswith(f"recall failed: {escaped}") for t in texts), (said, texts)
    for text in texts:
        assert REFUSED.search(text) is None, text
    o = cli(["report", str(out)], capsys)
    assert o.code == 0, o.err


@SETTINGS
@given(data=st.data(), field=st.sampled_from(["failures", "error"]), control=CONTROLS)
def test_a_control_in_a_row_s_failures_or_error_is_refused_on_read_back(
        data: st.DataObject, field: str, control: str, failing_run: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path_factory.mktemp("edited") / "run"
    shutil.copytree(failing_run, run)
    path = run / "results.jsonl"
    rows = [json.loads(row) for row in path.read_text(encoding="utf-8").split("\n")[:-1]]
    n = data.draw(st.sampled_from([i for i, row in enumerate(rows) if not row["passed"]]))
    failures = rows[n]["failures"]
    i = data.draw(st.integers(0, len(failures) - 1))
    text = failures[i] if field == "failures" else data.draw(st.sampled_from([*failures, "boom"]))
    at = data.draw(st.integers(0, len(text)))
    edited = text[:at] + control + text[at:]
    if field == "failures":
        failures[i] = edited
    else:  # the row as a run writes one that could not finish, and the summary's counts to match
        rows[n].update(error=edited, status="error")
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
        counts = summary["strategies"][rows[n]["strategy"]]["scenarios"]
        counts.update(failed=counts["failed"] - 1, errors=counts["errors"] + 1)
        summary.update(passed=False, complete=False, incomplete=[f"{rows[n]['scenario']} [{rows[n]['strategy']}]"])
        (run / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    where = f"{path}:{n + 1}: {field}[{i}]" if field == "failures" else f"{path}:{n + 1}: error"
    for args in (["report", str(run)], ["compare", str(failing_run), str(run)],
                 ["merge", str(run.parent / "merged"), str(run)]):
        assert_one_line_error(cli(args, capsys), mentions=(where,), budget=10.0)


@SETTINGS
@given(field=st.sampled_from(["failures", "error", "skipped"]), said=SAID)
def test_a_results_row_s_system_text_is_written_escaped_and_checked_as_written(field: str, said: str) -> None:
    """Each of the three texts a system's words reach (a failure, the error, a skip's reason): a result holds them
    escaped, its row reads back, and the raw text in a row is refused naming the field (the skip reason too, since
    the review of round 20: it was neither escaped nor checked)."""
    from harness.replay import ScenarioResult
    from harness.reporting._stored import row_problem_shown

    kept = ScenarioResult("s", "heuristic", False, (said,) if field == "failures" else (), (), "",
                          **({} if field == "failures" else {field: said}))  # type: ignore[arg-type]
    stored = kept.failures[0] if field == "failures" else getattr(kept, field)
    assert row_problem_shown({field: [stored] if field == "failures" else stored}) is None
    raw = row_problem_shown({field: [said] if field == "failures" else said})
    named = f"{field}[0]" if field == "failures" else field
    from harness.errors import text_problem

    if text_problem(said) is None:
        assert (stored, raw) == (said, None)
    else:
        assert stored != said, repr(stored)
        assert raw is not None, repr(said)
        assert raw.startswith(f"{named}: "), raw


# 4. an outcome one of the step's columns can never report ------------------------------------------------------------

BUILTIN = ("heuristic", "model", "bm25", "embedding", "hybrid")


@st.composite
def _columns_scenarios(draw: st.DrawFn) -> tuple[str, int, str, str | None]:
    """(scenario text, line of the outcome key, its field, the first column that can never report it, or None)."""
    kind = draw(st.sampled_from(["recall", "forget", "dream", "extract"]))
    strategies = draw(st.lists(st.sampled_from(BUILTIN), min_size=2, max_size=4, unique=True))
    pinned = draw(st.sampled_from(strategies)) if kind in ("recall", "forget") and draw(st.booleans()) else None
    which = draw(st.sampled_from(["strategy", "fallback"]))
    value = draw(st.sampled_from(("none", *strategies)) if which == "strategy" else
                 st.sampled_from(["none", "timeout", "invalid_json"]))
    columns = (pinned,) if pinned else strategies
    bad = next((c for c in columns if (value not in (c, "heuristic", "none") if which == "strategy" else
                                       value != "none" and c != "model")), None)
    lines = ['description: "an outcome expectation"', f"strategies: [{', '.join(strategies)}]", "facts:",
             '  f1: {type: project, match: ["billing"]}', "steps:", "  - session: s1",
             '    turns: [{user: "billing runs on docker"}]']
    key = f"expect_{which}" if kind != "extract" else which
    if kind == "extract":
        lines += ["  - session: s2", '    turns: [{user: "I prefer tabs over spaces"}]', "    expect_extract:"]
        field = f"steps[1].expect_extract.{key}"
    else:
        lines += [f"  - {kind}:", *(['      query: "billing"'] if kind != "dream" else ["      force: true"])]
        lines += [f"      strategy: {pinned}"] if pinned else []
        field = f"steps[1].{kind}.{key}"
    lines.append(f"      {key}: {value}")
    return "\n".join(lines) + "\n", len(lines), field, bad


@SETTINGS
@given(case=_columns_scenarios())
def test_an_outcome_one_column_can_never_report_is_refused_at_its_key(
        case: tuple[str, int, str, str | None], tmp_path_factory: pytest.TempPathFactory) -> None:
    from harness.scenario import load_scenario

    text, line, field, bad = case
    path = tmp_path_factory.mktemp("columns") / "s.yaml"
    path.write_text(text, encoding="utf-8")
    if bad is None:
        load_scenario(path)  # every column the step runs can report it: accepted
        return
    match = load_error_at(path, line, f"{field} that the {bad} column never reports")
    assert match["field"] == field, match[0]
    assert "could never pass" in match["what"], match[0]
    assert f"the {bad} column" in match["what"] or "runs only with" in match["what"], match[0]


# 5. the clock forms docs/limits.md lists -------------------------------------------------------------------------------

CLOCK_DOC = REPO / "docs" / "limits.md"


def _clock_examples() -> list[tuple[str, str]]:
    text = CLOCK_DOC.read_text(encoding="utf-8")
    assert "<!-- clock-examples -->" in text, "docs/limits.md has no table of clock examples"
    table = text.split("<!-- clock-examples -->", 1)[1].split("<!-- /clock-examples -->", 1)[0]
    rows = [re.fullmatch(r"\| `(.+)` \| (.+) \|", row.strip()) for row in table.strip().split("\n")[2:]]
    assert all(rows), table
    return [(m[1], m[2]) for m in rows if m]


def test_every_clock_example_of_the_limits_doc_reads_as_it_says(tmp_path: Path) -> None:
    from harness.scenario import load_scenario

    examples_ = _clock_examples()
    assert len(examples_) >= 20
    assert {said == "refused" for _, said in examples_} == {True, False}
    for n, (written, said) in enumerate(examples_):
        path = tmp_path / f"c{n}.yaml"
        path.write_text(f'description: "clock"\nclock: {written}\nsteps: [{{advance: 1h}}]\n', encoding="utf-8")
        if said == "refused":
            match = load_error_at(path, 2, f"clock: {written}")
            assert match["field"] == "clock", match[0]
        else:
            assert load_scenario(path).clock.isoformat() == said, written
