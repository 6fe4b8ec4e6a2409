"""Round 19: leftovers of the hostile-input issue (33). Each section is one class of input; each test draws its cases.

1. ``memharness compare A B --gates BAD`` printed the whole comparison (verdicts, metric lines, changed probes) and
   only then the gates file's error: the one-line error came after a screen of output, on stdout's heels. Now the
   gates file (``--gates``, or the one the candidate run recorded) is loaded before anything is printed: one line on
   stderr, exit 2, nothing on stdout.
2. An outcome's ``expect_strategy`` naming a strategy the step never runs with (``strategies: [heuristic]``,
   ``expect_strategy: model``), or an ``expect_fallback`` reason on a step no model strategy runs, loaded and then
   failed every run. Now each is a located error at its key; the strategies that can answer (the step's own, the
   heuristic fallback, ``none``) load.
3. A run directory read back (``report``, ``compare``) took what it shows as written: an edited ``meta.trace_url``
   (``javascript:…``) became every scenario's link, a row's name or a meta field could carry an escape sequence or
   a line break into the report and the terminal. Now the trace URL keeps ``MEMHARNESS_TRACE_URL``'s rule, meta text
   and a row's names, path, description and trace id their own, else one located line naming the file and field.
4. Rows relabelled in a run directory read back: a results row holding another scenario's fields under its own name
   (the two rows' contents swapped, the order kept), or two scenarios' probes swapped with their names, read as
   written: the report showed one scenario's verdict, trace, path and probes under the other's name. Now each row's
   trace (its ``scenario`` span, its recall spans' step and query length) must be its own, else one located line at
   the results or probes row. (Rows moved, or a row without its probes, were refused already: the order check and
   the counts.)
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.evaluation import load_gates
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, cli, load_error_at, set_at
from tests.hostile_cli.test_gates_file import DOCUMENT

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one shipped recall scenario (two columns: the reference and SQLite)."""
    out = tmp_path_factory.mktemp("run") / "run"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--out", str(out), "--no-gates"],
                    environ={})
    assert code == 0
    return out


# 1. compare --gates BAD ---------------------------------------------------------------------------------------------

@SETTINGS
@given(text=DOCUMENT, recorded=st.booleans())
def test_compare_checks_the_gates_file_before_printing(text: str, recorded: bool, one_run: Path,
                                                       tmp_path_factory: pytest.TempPathFactory,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid gates file, given (``--gates``) or recorded by the candidate run (``meta.gates_file``, edited
    since), is one located line and nothing else."""
    scratch = tmp_path_factory.mktemp("gates")
    gates = scratch / "g.toml"
    gates.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_gates(gates)
    except HarnessError:
        pass
    else:
        assume(False)  # a valid file: the other side, below
    args = ["compare", str(one_run), str(one_run)]
    if recorded:
        cand = scratch / "cand"
        shutil.copytree(one_run, cand)
        summary = json.loads((cand / "summary.json").read_text(encoding="utf-8"))
        summary["meta"]["gates_file"] = str(gates)
        (cand / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        args[-1] = str(cand)
    else:
        args += ["--gates", str(gates)]
    o = cli(args, capsys)
    assert o.code == 2, (o.out, o.err)
    assert o.out == "", o.out
    assert len(o.err.splitlines()) == 1, o.err
    match = LOCATED.match(o.err.rstrip("\n"))
    assert match, o.err
    assert match["file"] == str(gates), o.err


def test_compare_with_a_valid_gates_file_still_prints(one_run: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The other side: a valid gates file is used, after the comparison is printed."""
    gates = tmp_path / "g.toml"
    gates.write_text('[[gate]]\nmetric = "recall.f1"\nvs = "baseline"\nmax_drop = 0.05\n', encoding="utf-8")
    o = cli(["compare", str(one_run), str(one_run), "--gates", str(gates)], capsys)
    assert o.code == 0, o.err
    assert "changed probe(s)" in o.out
    assert "recall.f1 drop vs baseline <= 0.05: pass" in o.out


# 2. expect_strategy / expect_fallback the step never runs with --------------------------------------------------------

BUILTIN = ("heuristic", "model", "bm25", "embedding", "hybrid")


@st.composite
def _outcome_scenarios(draw: st.DrawFn) -> tuple[str, int, str, str, bool]:
    """(scenario text, line of the outcome key, its field, what it names, whether some run could meet it)."""
    kind = draw(st.sampled_from(["recall", "forget", "dream", "extract"]))
    strategies = draw(st.lists(st.sampled_from(BUILTIN), min_size=1, max_size=3, unique=True))
    how = draw(st.sampled_from(["scenario", "override", "pinned"] if kind in ("recall", "forget") else
                               ["scenario", "override"]))
    own = draw(st.sampled_from(BUILTIN)) if how != "scenario" else None
    runs = (own,) if own else tuple(strategies)
    which = draw(st.sampled_from(["strategy", "fallback"]))
    value = draw(st.sampled_from(("none", *BUILTIN)) if which == "strategy" else
                 st.sampled_from(["none", "timeout", "provider", "invalid_json"]))
    meets = all((value in (run, "heuristic", "none")) if which == "strategy" else (value == "none" or run == "model")
                for run in runs)  # round 20: in every column the step runs, not in one of them
    lines = ['description: "an outcome expectation"', f"strategies: [{', '.join(strategies)}]"]
    if how == "override":
        lines.append(f"strategy_overrides: {{1: {own}}}")
    lines += ["facts:", '  f1: {type: project, match: ["billing"]}', "steps:",
              "  - session: s1", '    turns: [{user: "billing runs on docker"}]']
    key = f"expect_{which}" if kind != "extract" else which
    if kind == "extract":
        lines += ["  - session: s2", '    turns: [{user: "I prefer tabs over spaces"}]', "    expect_extract:"]
        field = f"steps[1].expect_extract.{key}"
    else:
        lines += [f"  - {kind}:", *(['      query: "billing"'] if kind != "dream" else ["      force: true"])]
        lines += [f"      strategy: {own}"] if how == "pinned" else []
        field = f"steps[1].{kind}.{key}"
    lines.append(f"      {key}: {value}")
    return "\n".join(lines) + "\n", len(lines), field, value, meets


@SETTINGS
@given(case=_outcome_scenarios())
def test_an_outcome_no_run_can_report_is_refused_at_its_key(case: tuple[str, int, str, str, bool],
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    from harness.scenario import load_scenario

    text, line, field, value, meets = case
    path = tmp_path_factory.mktemp("outcome") / "s.yaml"
    path.write_text(text, encoding="utf-8")
    if meets:
        load_scenario(path)  # a strategy that runs (or the heuristic fallback, or none): accepted
        return
    match = load_error_at(path, line, f"{field}: {value} on a step that never reports it")
    assert match["field"] == field, match[0]
    assert "could never pass" in match["what"], match[0]


def test_validate_names_the_key_of_an_unmet_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The heuristic never answers as the model: before, validate passed this and each run failed the step."""
    path = tmp_path / "s.yaml"
    path.write_text('description: "x"\nstrategies: [heuristic]\nfacts:\n  f1: {type: project, match: [billing]}\n'
                    'memories:\n  - {path: project/b.md, name: b, type: project, body: "billing runs on docker"}\n'
                    'steps:\n  - recall:\n      query: "billing"\n      expect: [f1]\n      expect_strategy: model\n',
                    encoding="utf-8")
    o = cli(["validate", str(path)], capsys)
    assert o.code == 2, o
    assert o.err.startswith(f"memharness: {path}:11: steps[0].recall.expect_strategy: expects strategy 'model'"), o.err


# 3. display fields of a run directory read back ---------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.sampled_from(["javascript:alert(1)//{trace_id}", "JavaScript:x/{trace_id}", "data:text/html,{trace_id}",
                     "http://ok.example/{trace_id}", "https://h.example/t/{trace_id}?a=1", "<script>x</script>",
                     "\x1b[2J\x1b[31mred", "a\nb", "tab\there", "\u202egnp.exe", "x\x00y", "\x85", "", " ",
                     "e5922683580d27a47c4c9a90cea62a50", "E5922683580D27A47C4C9A90CEA62A50", "../../x"]),
    st.text(max_size=12))
FIELDS = [("summary.json", ("meta", k)) for k in ("trace_url", "system", "git_commit", "gates_file", "cassettes",
                                                  "platform")] + \
    [("summary.json", ("meta", "systems", 0))] + \
    [("results.jsonl", (k,)) for k in ("scenario", "strategy", "path", "trace_id", "description")] + \
    [("results.jsonl", ("tags", 0))]
_RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")
"""Raw in a report or on the terminal: what no field may carry there (a scenario's own text may hold bidi marks)."""


def _edit(run: Path, name: str, path: tuple[str | int, ...], value: str, rng: random.Random) -> None:
    target = run / name
    if name == "summary.json":
        doc = json.loads(target.read_text(encoding="utf-8"))
        set_at(doc, path, value)
        target.write_text(json.dumps(doc, indent=2, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
        return
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    set_at(rows[rng.randrange(len(rows))], path, value)
    target.write_text("".join(json.dumps(r, ensure_ascii=rng.random() < 0.5) + "\n" for r in rows), encoding="utf-8")


@settings(max_examples=examples(60), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=HOSTILE_TEXT, seed=st.integers(0, 2**16))
def test_an_edited_display_field_is_refused_or_rendered_safely(
        field: tuple[str, tuple[str | int, ...]], value: str, seed: int, one_run: Path,
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    scratch = tmp_path_factory.mktemp("edited")
    run = scratch / "run"
    shutil.copytree(one_run, run)
    _edit(run, *field, value, random.Random(seed))
    html = scratch / "r.html"
    for args in (["report", str(run), "-o", str(html)], ["compare", str(one_run), str(run)]):
        o = cli(args, capsys)
        assert "Traceback" not in o.err, o.err
        assert "internal error" not in o.err, o.err
        if o.code == 2:
            (line,) = o.err.splitlines()
            assert line.isprintable(), repr(line)
            if "compare runs of the same --system" in line:  # an edited system name: another system's run
                continue
            match = LOCATED.match(line)
            assert match, line
            assert match["file"].startswith(str(run)), line  # the edited file, or one the edit contradicts
            continue
        assert o.code in (0, 1), o
        assert not _RAW_CONTROL.search(o.out + o.err), repr(o.out + o.err)
        if args[0] == "report":
            page = html.read_text(encoding="utf-8")
            assert not re.search(r"""href=["']?\s*(?!https?://|#|\.|/)[a-z]+:""", page, re.IGNORECASE), value
            assert not _RAW_CONTROL.search(page), value
            assert "<script>x</script>" not in page


# 4. rows swapped between scenarios ----------------------------------------------------------------------------------

FOUR = ("multi-fact.yaml", "type-user.yaml", "abstain-cjk.yaml", "abstain-unrelated.yaml")


@pytest.fixture(scope="module")
def four_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of four recall scenarios on the reference system (one column, a recall probe and a check each)."""
    out = tmp_path_factory.mktemp("run") / "four"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", *(str(SCENARIOS / "recall" / name) for name in FOUR), "--system", "reference",
                     "--out", str(out), "--no-gates"], environ={})
    assert code == 0
    return out


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


@SETTINGS
@given(pair=st.lists(st.integers(0, len(FOUR) - 1), min_size=2, max_size=2, unique=True),
       how=st.sampled_from(["fields", "probes"]), keep=st.sets(st.sampled_from(["description", "path", "duration_ms",
                                                                                "tags", "failures", "passed"])))
def test_rows_swapped_between_scenarios_are_a_located_line(pair: list[int], how: str, keep: set[str], four_run: Path,
                                                           tmp_path_factory: pytest.TempPathFactory,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``fields``: two results rows trade every field but their names (``keep``: and these), in place; ``probes``:
    two scenarios' probes trade names and places. Either is refused at the row, unless the swap is one the files
    cannot tell from the run (two probe lists of the same steps and query lengths: nothing read changes)."""
    run = tmp_path_factory.mktemp("swapped") / "run"
    shutil.copytree(four_run, run)
    results, probes = _rows(run / "results.jsonl"), _rows(run / "probes.jsonl")
    a, b = (results[i] for i in pair)
    names = (a["scenario"], b["scenario"])
    if how == "fields":
        moved = [k for k in a if k not in ("scenario", "strategy", *keep)]
        for k in moved:
            a[k], b[k] = b[k], a[k]
        _write(run / "results.jsonl", results)
        file, telling = "results.jsonl", "trace_id" in moved
    else:
        mine = {n: [p for p in probes if p["scenario"] == n] for n in names}
        shape = {n: [(p["step"], p["kind"], len(str(p["query"]))) for p in mine[n]] for n in names}
        for p in probes:
            if p["scenario"] in names:
                p["scenario"] = names[1 - names.index(p["scenario"])]
        order = {r["scenario"]: i for i, r in enumerate(results)}
        probes.sort(key=lambda p: (order[p["scenario"]], p["step"]))  # the order check passes: only names changed
        _write(run / "probes.jsonl", probes)
        file, telling = "probes.jsonl", shape[names[0]] != shape[names[1]]
    for args in (["report", str(run), "-o", str(run / "r.html")], ["compare", str(four_run), str(run)]):
        o = cli(args, capsys)
        if not telling:
            assert o.code == 0, o.err
            continue
        assert o.code == 2, (o.code, o.out[-300:])
        (line,) = o.err.splitlines()
        match = LOCATED.match(line)
        assert match, line
        assert match["file"] == str(run / file), line
        assert "since the run" in match["what"], line


def test_a_plug_in_systems_run_reads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trace check judges a plug-in's run only on what the harness records: the query length on a recall span
    is the system's event's to give (tests.example_system sends no events), and ``report`` refused its own run as
    "a query of None character(s)" (round 19 review)."""
    from tests.helpers import fresh_process_run

    out = tmp_path / "run"
    assert fresh_process_run(["run", str(SCENARIOS / "recall"), "--tag", "portable", "--no-gates", "--out", str(out),
                              "--system", "tests.example_system:factory"]) in (0, 1)
    assert json.loads((out / "summary.json").read_text())["meta"]["system"] == "tests.example_system:factory"
    assert any(json.loads(line)["kind"] == "recall" for line in (out / "probes.jsonl").read_text().splitlines())
    done = cli(["report", str(out), "-o", str(tmp_path / "again.html")], capsys)
    assert (done.code, done.err) == (0, ""), done.err
