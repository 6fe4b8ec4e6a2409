"""``memharness sensitivity``: the spec-mutant catalogue stays valid, the oracle kills a rule-breaking mutant by the
scenario that checks the rule, a no-op mutant survives with its line, and the kill-rate floor decides the exit code."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.tools._equivalent import Outside
from harness.tools._mutants import Mutant, Target, default_catalogue, describe_change, load_catalogue, resolve_target, select
from harness.tools._sensitivity import MutantResult, Oracle, SensitivityReport, exit_code
from tests.harness.conftest import REPO, SCENARIOS

WORKED = SCENARIOS / "recall" / "parity-worked-example.yaml"
CORE = resolve_target("memory_core")


def _catalogue(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mutants.toml"
    path.write_text(body, encoding="utf-8")
    return path


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- the catalogue ------------------------------------------------------------------------------------------------


def test_every_shipped_mutant_applies_exactly_once_to_the_current_core() -> None:
    mutants = load_catalogue(default_catalogue(), CORE)
    assert len(mutants) >= 40
    assert len({m.name for m in mutants}) == len(mutants)
    assert len({m.rule for m in mutants}) >= 20
    assert 10 <= len(select(mutants, only=None, subset="ci")) <= 15
    for m in mutants:
        original = (CORE.path / m.file).read_text(encoding="utf-8").splitlines()
        assert m.before.split(" ⏎ ")[0] == original[m.line - 1].strip(), m.name
        assert m.mutated != "\n".join(original)


def test_the_rules_the_issue_names_are_covered_on_both_sides_of_each_boundary() -> None:
    names = {m.name for m in load_catalogue(default_catalogue(), CORE)}
    for pair in [("recall-limit-4", "recall-limit-6"), ("scan-cap-199", "scan-cap-201"),
                 ("index-lines-199", "index-lines-201"), ("index-chars-24999", "index-chars-25001"),
                 ("index-line-chars-149", "index-line-chars-151"), ("extract-min-length-11", "extract-min-length-13"),
                 ("dream-min-hours-23", "dream-min-hours-25"), ("dream-min-sessions-4", "dream-min-sessions-6"),
                 ("lock-stale-59min", "lock-stale-61min"), ("recall-body-cap-1199", "recall-body-cap-1201")]:
        assert set(pair) <= names


@pytest.mark.parametrize(("entry", "message"), [
    ('find = "processed_offset=next_offset, now=now)"',
     "find: occurs 3 times in memory_core/files/extract.py (expected exactly 1)"),
    ('find = "no such code"', "find: occurs 0 times"),
    ('pattern = "MAX_INDEX_\\\\w+: Final"', "pattern: matches 3 times in memory_core/files/index.py"),
])
def test_a_snippet_that_is_not_unique_is_an_error_naming_the_catalogue_line(tmp_path: Path, entry: str,
                                                                              message: str) -> None:
    file = "files/extract.py" if "offset" in entry else "files/index.py"
    cat = _catalogue(tmp_path, f'# header\n\n[[mutant]]\nname = "bad"\nfile = "{file}"\n{entry}\n'
                               'replace = "x"\nrule = "§0"\n')
    with pytest.raises(HarnessError) as err:
        load_catalogue(cat, CORE)
    assert f"{cat}:4: mutant 'bad': {message}" in str(err.value)


@pytest.mark.parametrize(("body", "message"), [
    ('name = "a"\nfile = "files/recall.py"\nfind = "DEFAULT_RECALL_LIMIT: Final = 5"\n'
     'replace = "DEFAULT_RECALL_LIMIT: Final = 5"\n'
     'rule = "r"', "replace: the mutant is identical"),
    ('name = "a"\nfile = "files/recall.py"\nfind = "DEFAULT_RECALL_LIMIT: Final = 5"\n'
     'replace = "DEFAULT_RECALL_LIMIT: = 5"\n'
     'rule = "r"', "does not compile"),
    ('name = "a"\nfile = "nope.py"\nfind = "x"\nreplace = "y"\nrule = "r"', "file: nope.py is not a module of memory_core"),
    ('name = "a"\nfile = "files/recall.py"\nfind = "x"\nreplace = "y"\nrule = "r"\ncolour = "red"', "colour: unknown key"),
    ('name = "a"\nfile = "files/recall.py"\nreplace = "y"\nrule = "r"', "find/pattern: expected exactly one"),
])
def test_malformed_entries_are_errors(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(HarnessError, match=r"mutants\.toml:4: mutant 'a': ") as err:
        load_catalogue(_catalogue(tmp_path, f"\n\n[[mutant]]\n{body}\n"), CORE)
    assert message in str(err.value)


def test_duplicate_names_are_an_error(tmp_path: Path) -> None:
    entry = ('[[mutant]]\nname = "{}"\nfile = "files/recall.py"\nfind = "RECALL_BODY_CHARS: Final = 1200"\n'
             'replace = "RECALL_BODY_CHARS: Final = 1"\nrule = "r"\n')
    cat = _catalogue(tmp_path, entry.format("one") + entry.format("two") + entry.format("one"))
    with pytest.raises(HarnessError, match=r"mutant 'one': name: duplicate of the mutant on line 2"):
        load_catalogue(cat, CORE)


def test_describe_change_names_the_first_changed_line() -> None:
    assert describe_change("a\nb\nc\n", "a\nB\nc\n") == (2, "b", "B")
    # lines only inserted: the line they follow, as it was and with the insertion (never an empty "before")
    assert describe_change("a\nb\nc\n", "a\nb\nx\ny\nc\n") == (2, "b", "b ⏎ x ⏎ y")
    assert describe_change("a\nb\n", "x\na\nb\n") == (1, "", "x")  # before the first line there is none


# --- the oracle, end to end ---------------------------------------------------------------------------------------

KILL_AND_NOOP = """
[[mutant]]
name = "no-body-bonus"
file = "files/recall.py"
find = "return score + (1 if body else 0)"
replace = "return score"
rule = "§7.3 +1 once for a non-empty body"

[[mutant]]
name = "comment-only"
file = "files/recall.py"
find = "DEFAULT_RECALL_LIMIT: Final = 5"
replace = "DEFAULT_RECALL_LIMIT: Final = 5  # a comment changes nothing"
rule = "none (an equivalent mutant)"
"""


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real sensitivity run: baseline + a rule-breaking mutant + a no-op mutant, two at a time."""
    tmp = tmp_path_factory.mktemp("sensitivity")
    cat = tmp / "mutants.toml"
    cat.write_text(KILL_AND_NOOP, encoding="utf-8")
    code, out, err = _cli("sensitivity", str(WORKED), "--strategy", "heuristic", "--catalogue", str(cat),
                          "--out", str(tmp / "out"), "--jobs", "2", "--min-kill-rate", "0.9")
    report = json.loads((tmp / "out" / "sensitivity.json").read_text(encoding="utf-8"))
    return {"code": code, "out": out, "err": err, "report": report,
            "md": (tmp / "out" / "sensitivity.md").read_text(encoding="utf-8")}


@pytest.mark.slow
def test_a_mutant_breaking_a_checked_rule_is_killed_by_the_scenario_that_checks_it(e2e: dict[str, Any]) -> None:
    kill = e2e["report"]["results"][0]
    assert kill["name"] == "no-body-bonus"
    assert kill["status"] == "killed"
    assert kill["exit_code"] == 1
    assert kill["killed_by"] == ["parity-worked-example [heuristic]"]
    assert "expected exactly ['reference.md', 'user.md', 'project.md']" in kill["details"][0]
    assert "KILLED" in e2e["out"]
    assert "by parity-worked-example [heuristic]" in e2e["out"]


@pytest.mark.slow
def test_a_no_op_mutant_survives_and_is_listed_with_its_source_line(e2e: dict[str, Any]) -> None:
    noop = e2e["report"]["results"][1]
    assert noop["status"] == "survived"
    assert noop["killed_by"] == []
    source = (Path(__file__).resolve().parents[2] / "memory_core" / "files" / "recall.py").read_text().splitlines()
    line = source.index("DEFAULT_RECALL_LIMIT: Final = 5") + 1  # where the constant is today
    assert (noop["file"], noop["line"]) == ("files/recall.py", line)
    assert noop["before"] == "DEFAULT_RECALL_LIMIT: Final = 5"
    assert f"memory_core/files/recall.py:{line} comment-only" in e2e["out"]
    assert "      - DEFAULT_RECALL_LIMIT: Final = 5" in e2e["out"]
    assert f"| comment-only | `memory_core/files/recall.py:{line}` |" in e2e["md"]


@pytest.mark.slow
def test_the_run_reports_the_kill_rate_and_exits_1_below_the_floor(e2e: dict[str, Any]) -> None:
    report = e2e["report"]
    assert (report["mutants"], report["killed"], report["survived"], report["kill_rate"]) == (2, 1, 1, 0.5)
    assert report["passed"] is False
    assert e2e["code"] == 1
    assert "kill rate 0.500 (95% CI 0.095-0.905, Wilson; 1/2 killed, 1 survived, 0 equivalent left out; floor 0.9: " \
           "BELOW the floor)" in e2e["out"]
    assert "baseline passed" in e2e["err"]


def _report(killed: int, survived: int, floor: float) -> SensitivityReport:
    mutant = Mutant("m", "spec", "files/recall.py", 1, "a", "b", "r", "")
    results = [MutantResult(mutant, "killed", ("s [heuristic]",))] * killed + [MutantResult(mutant, "survived")] * survived
    return SensitivityReport("memory_core", ("scenarios",), "heuristic", tuple(results), 1.0, 60.0, floor, 2.0)


@pytest.mark.parametrize(("killed", "survived", "floor", "code"), [
    (9, 1, 0.9, 0), (8, 2, 0.9, 1), (17, 3, 0.85, 0), (16, 4, 0.85, 1), (0, 3, 0.0, 0), (10, 0, 1.0, 0), (9, 1, 1.0, 1),
])
def test_the_kill_rate_floor_decides_the_exit_code(killed: int, survived: int, floor: float, code: int) -> None:
    assert exit_code(_report(killed, survived, floor)) == code


def test_a_timeout_counts_as_killed() -> None:
    mutant = Mutant("m", "spec", "files/recall.py", 1, "a", "b", "r", "")
    report = SensitivityReport("memory_core", (), "heuristic", (MutantResult(mutant, "timeout", ("timeout",)),),
                               1.0, 1.0, 1.0, 1.0)
    assert report.kill_rate == 1.0


@pytest.mark.slow
def test_a_hanging_mutant_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    cat = _catalogue(tmp_path, '[[mutant]]\nname = "hang"\nfile = "files/recall.py"\nfind = "DEFAULT_RECALL_LIMIT: Final = 5"\n'
                               'replace = "DEFAULT_RECALL_LIMIT: Final = __import__(\'time\').sleep(600) or 5"\nrule = "r"\n')
    oracle = Oracle((WORKED,), CORE, "heuristic")
    t0 = time.monotonic()
    status, by, _, _, code = oracle.run(load_catalogue(cat, CORE)[0], timeout_s=1.5)
    assert (status, by, code) == ("timeout", ["timeout"], None)
    assert time.monotonic() - t0 < 30


def test_the_oracle_refuses_when_the_target_is_not_imported_from_the_mutated_copy(tmp_path: Path) -> None:
    decoy = tmp_path / "decoy"  # copied as src/decoy, so `import memory_core` finds the installed core instead
    decoy.mkdir()
    (decoy / "__init__.py").write_text("", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"memory_core was imported from .*, not from the mutated copy"):
        Oracle((WORKED,), Target("memory_core", decoy), "heuristic").run(None, timeout_s=120)


def test_the_oracle_command_runs_the_suite_with_its_strategies_tags_gates_and_system(tmp_path: Path) -> None:
    oracle = Oracle((WORKED,), CORE, "heuristic,model", "pkg.mod:make", ("portable", "recall"), tmp_path / "g.toml")
    cmd = oracle.command(tmp_path / "out")
    assert cmd[1:3] == ["-P", "-c"]
    assert cmd[4:] == ["run", str(WORKED), "--strategy", "heuristic,model", "--out", str(tmp_path / "out"),
                       "--tag=portable", "--tag=recall", "--gates", str(tmp_path / "g.toml"), "--system", "pkg.mod:make"]
    # the default: each scenario's own strategies, exactly the plain `memharness run` a user's CI makes
    assert Oracle((WORKED,), CORE).command(tmp_path / "out")[4:] == ["run", str(WORKED), "--out", str(tmp_path / "out")]


# --- usage errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["--only", "no-such-mutant"], "--only: unknown mutant 'no-such-mutant'"),
    (["--subset", "nightly"], "--subset: no mutant is in subset 'nightly' (known: ci, language)"),
    (["--min-kill-rate", "1.5"], "expected a number between 0 and 1"),
    (["--jobs", "0"], "expected a positive integer"),
    (["--target", "harness"], "cannot mutate the harness itself"),
    (["--target", "no_such_pkg_xyz"], "no importable package or module named 'no_such_pkg_xyz'"),
])
def test_usage_errors_exit_2_with_one_line(argv: list[str], message: str, tmp_path: Path) -> None:
    # a path of this test's own (a shared /nonexistent may exist on a machine: another program's file)
    code, out, err = _cli("sensitivity", str(WORKED), "--out", str(tmp_path / "missing" / "never-written"), *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "missing").exists()


# --- library-generated mutants (cosmic-ray) -----------------------------------------------------------------------

TINY = '''"""A tiny module to mutate."""

LIMIT = 5


def pick(xs: list[int] | None, *, k: int = LIMIT) -> list[int] | None:
    out = [x for x in xs or [] if x > 2 and x != 7]
    return out[:k]
'''


def test_generated_mutants_are_sampled_deterministically_and_name_their_line(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cosmic_ray")
    from harness.tools._generated import generated_mutants

    (tmp_path / "tinycore").mkdir()
    (tmp_path / "tinycore" / "__init__.py").write_text(TINY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = resolve_target("tinycore")
    first = generated_mutants(target, 6, seed=3)
    again = generated_mutants(target, 6, seed=3)
    assert [m.name for m in first] == [m.name for m in again]
    assert len(first) == 6
    assert len({m.name for m in first}) == 6
    assert [m.name for m in generated_mutants(target, 6, seed=4)] != [m.name for m in first]
    lines = TINY.splitlines()
    for m in first:
        assert m.kind == "generated"
        assert m.rule.startswith("cosmic-ray ")
        assert m.mutated != TINY
        compile(m.mutated, m.file, "exec")
        assert m.before == lines[m.line - 1].strip()
        assert m.after != m.before
    every = generated_mutants(target, 1000, seed=0)
    assert 10 < len(every) < 1000
    assert "gen-__init__-3-NumberReplacer-0" in {m.name for m in every}
    # annotations and the bare `*` of the signature are never mutated (equivalent mutants)
    assert not [m.name for m in every if m.line == 6]


def test_the_shipped_catalogue_is_package_data() -> None:
    assert default_catalogue().is_file()
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"harness.tools" = ["spec_mutants.toml", "equivalent_mutants.toml"]' in pyproject


def test_generated_mutants_can_be_limited_to_modules_and_survive_operator_crashes(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cosmic_ray")
    from harness.tools._generated import generated_mutants

    pkg = tmp_path / "twomods"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(TINY, encoding="utf-8")
    # cosmic-ray 8's ExceptionReplacer raises on a dotted name inside an except tuple: that site is skipped
    (pkg / "other.py").write_text("import os\n\ntry:\n    x = 1 + 2\nexcept (os.error, ValueError):\n    x = 0\n",
                                  encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = resolve_target("twomods")
    only = generated_mutants(target, 1000, seed=0, modules=("other.py",))
    assert only
    assert {m.file for m in only} == {"other.py"}
    assert {m.file for m in generated_mutants(target, 1000, seed=0)} == {"__init__.py", "other.py"}
    with pytest.raises(HarnessError, match="--module nope"):
        generated_mutants(target, 5, seed=0, modules=("nope/*",))
    assert {m.file for m in generated_mutants(target, 1000, seed=0, outside=[Outside("other.py", "r")])} == {"__init__.py"}


def test_outside_can_name_functions_and_classes_whose_sites_are_never_drawn(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cosmic_ray")
    from harness.tools._generated import generated_mutants

    pkg = tmp_path / "within_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def used(x):\n    return x + 1\n\n\nclass Optional:\n    def f(self, x):\n"
                                     "        return x * 2\n\n\ndef spare(x):\n    return x - 3\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = resolve_target("within_pkg")
    every = {m.line for m in generated_mutants(target, 1000, seed=0)}
    assert {2, 7, 11} <= every
    left = {m.line for m in generated_mutants(target, 1000, seed=0, outside=[Outside("*.py", "r", ("Optional", "spare"))])}
    assert 2 in left
    assert not left & {7, 11}
    assert {m.line for m in generated_mutants(target, 1000, seed=0, outside=[Outside("other.py", "r", ("used",))])} == every


def test_outside_when_leaves_out_only_the_branches_the_shipped_configuration_never_takes() -> None:
    from harness.tools._equivalent import dead_branch_spans

    source = (
        "def f(db, x):\n"
        "    if db.quirks.q1_a:\n"          # 2
        "        x += 1\n"                   # 3: dead
        "    if not db.quirks.q2_b:\n"      # 4
        "        x += 2\n"                   # 5: live
        "    else:\n"
        "        x += 3\n"                   # 7: dead
        "    if x and db.quirks.q3_c:\n"    # 8: a composite test is not matched
        "        x += 4\n"
        "    if not self.db.quirks.q4_d:\n"  # 10
        "        return x\n"                 # 11: live
        "    x += 5\n"                       # 12: dead (after the guard's return)
        "    return x\n"                     # 13: dead
    )
    assert dead_branch_spans(source, r"(self\.)?(db\.)?quirks\.q\w+") == [(3, 3), (7, 7), (12, 13)]
    assert dead_branch_spans(source, r"nothing") == []
    one_line = "def g(db):\n    if db.quirks.q1_a: return 1\n    return 2\n"  # the test's own line stays in
    assert dead_branch_spans(one_line, r"db\.quirks\.q\w+") == []


def test_an_any_change_entry_covers_every_mutant_of_its_line(tmp_path: Path) -> None:
    from harness.tools._equivalent import load_equivalents, split_equivalent

    path = tmp_path / "eq.toml"
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x = 1"\nafter = "*"\nreason = "never runs"\n',
                    encoding="utf-8")
    one = Mutant("gen-a-1", "generated", "a.py", 1, "x = 1", "x = 2", "cosmic-ray NumberReplacer", "")
    two = Mutant("gen-a-2", "generated", "a.py", 1, "x = 1", "x = -1", "cosmic-ray NumberReplacer", "")
    other = Mutant("gen-a-3", "generated", "a.py", 2, "y = 1", "y = 2", "cosmic-ray NumberReplacer", "")
    run, left_out = split_equivalent([one, two, other], load_equivalents(path))
    assert (run, [m for m, _ in left_out]) == ([other], [one, two])


def test_equivalent_mutants_are_left_out_by_their_changed_line(tmp_path: Path) -> None:
    from harness.tools._equivalent import (
        default_equivalents,
        enclosing_name,
        load_equivalents,
        load_triage,
        split_equivalent,
    )

    shipped = load_triage(default_equivalents())  # the shipped triage file parses; its outside modules exist
    assert {o.module for o in shipped.outside} >= {"files/paths.py", "files/embedding.py"}
    assert all(any(CORE.path.glob(o.module)) for o in shipped.outside)
    for e in shipped.equivalents:  # a triaged line the core no longer has is stale: fix the entry or drop it
        source = (CORE.path / e.file).read_text(encoding="utf-8")
        parts, lines = e.before.split(" \u23ce "), [line.strip() for line in source.splitlines()]
        # the line (or, for a change of several lines such as a removed decorator, the run of lines), by its last
        at = [i + len(parts) for i in range(len(lines)) if lines[i:i + len(parts)] == parts]
        assert at, (e.file, e.before)
        # a line that occurs twice names its function (which then covers every occurrence inside it)
        assert len(at) == 1 or (e.within and e.within in [enclosing_name(source, i) for i in at]), e
    path = tmp_path / "eq.toml"
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x = 1"\nafter = "x = 1.0"\nreason = "same value"\n',
                    encoding="utf-8")
    same = Mutant("gen-a-1-NumberReplacer-0", "generated", "a.py", 1, "x = 1", "x = 1.0", "cosmic-ray NumberReplacer", "")
    moved = Mutant("gen-a-9-NumberReplacer-3", "generated", "a.py", 9, "x = 1", "x = 1.0", "cosmic-ray NumberReplacer", "")
    other = Mutant("gen-a-1-NumberReplacer-1", "generated", "a.py", 1, "x = 1", "x = 2", "cosmic-ray NumberReplacer", "")
    spec = Mutant("spec-x", "spec", "a.py", 1, "x = 1", "x = 1.0", "§1", "")
    run, left_out = split_equivalent([same, moved, other, spec], load_equivalents(path))
    assert run == [other, spec]  # a hand-written spec mutant is never excluded
    assert [(m.name, why) for m, why in left_out] == [(same.name, "same value"), (moved.name, "same value")]
    # `within`: the same line in two functions; only the named one is equivalent
    source = "def a():\n    x = 1\n\ndef b():\n    x = 1\n"
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x = 1"\nafter = "x = 1.0"\nreason = "r"\nwithin = "b"\n',
                    encoding="utf-8")
    in_a = Mutant("gen-a-2", "generated", "a.py", 2, "x = 1", "x = 1.0", "cosmic-ray NumberReplacer", "")
    in_b = Mutant("gen-a-5", "generated", "a.py", 5, "x = 1", "x = 1.0", "cosmic-ray NumberReplacer", "")
    run, left_out = split_equivalent([in_a, in_b], load_equivalents(path), lambda _f: source)
    assert (run, [m for m, _ in left_out]) == ([in_a], [in_b])
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x"\nreason = "r"\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"eq.toml:1: equivalent 1: 'after' must be non-empty text"):
        load_equivalents(path)
    path.write_text('[[outside]]\nmodule = "a.py"\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"eq.toml:1: outside 1: expected non-empty text 'module' and 'reason'"):
        load_triage(path)
    path.write_text('[[outside]]\nmodule = "a.py"\nreason = "r"\nwithin = "f"\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"eq.toml:1: outside 1: .*'within' \(a list"):
        load_triage(path)
    path.write_text('[[outside]]\nmodule = "a.py"\nreason = "r"\nwithin = ["f", "C"]\n', encoding="utf-8")
    assert load_triage(path).outside[0].within == ("f", "C")
    for o in shipped.outside:  # every function or class the shipped file names exists at the top of its module
        for name in o.within:
            assert any(f"\ndef {name}(" in f"\n{p.read_text()}" or f"\nclass {name}" in f"\n{p.read_text()}"
                       for p in CORE.path.glob(o.module)), (o.module, name)


def test_coverage_table_names_the_killing_scenarios_and_the_gaps() -> None:
    from harness.tools._sensitivity import coverage_markdown

    def mutant(name: str, file: str, rule: str, kind: str = "spec") -> Mutant:
        return Mutant(name, kind, file, 1, "a", "b", rule, "")  # type: ignore[arg-type]

    results = (
        MutantResult(mutant("lim", "files/recall.py", "§7.3 recall limit 5"), "killed",
                     ("recall/pin-score-order [heuristic]", "recall/pin-score-order [model]", "gate scenarios.failed")),
        MutantResult(mutant("ttl", "sqlite/lifecycle.py", "§5.4 TTL by priority"), "survived"),
        MutantResult(mutant("q5", "sqlite/db.py", "§7 Q5 upsert"), "killed", ("gate recall.f1 >= 0.4",)),
        MutantResult(mutant("gen", "files/scan.py", "cosmic-ray NumberReplacer", "generated"), "killed", ("x [heuristic]",)),
    )
    report = SensitivityReport("memory_core", ("scenarios",), "heuristic", results, 1.0, 60.0, 0.9, 3.0)
    text = coverage_markdown(report)
    assert text.startswith("3 rules broken one at a time (3/4 mutants killed; 1 gap(s)).")
    lines = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    assert lines == [
        "| qwen | 7.3 | §7.3 recall limit 5 | `lim` | `recall/pin-score-order` |",
        "| sqlite | 5.4 | §5.4 TTL by priority | `ttl` | **gap** |",
        "| sqlite | 7 Q5 | §7 Q5 upsert | `q5` | a gate: gate recall.f1 >= 0.4 |",
    ]


def test_unreachable_mutants_are_left_out_apart_and_the_rate_without_them_is_printed(tmp_path: Path) -> None:
    from harness.tools._equivalent import UNREACHABLE, load_equivalents, split_equivalent
    from harness.tools._sensitivity import MutantResult, SensitivityReport, format_lines

    path = tmp_path / "eq.toml"
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x = 1"\nafter = "*"\nunreachable = true\n'
                    'reason = "needs a 1 MiB file"\n', encoding="utf-8")
    gap = Mutant("gen-a-1", "generated", "a.py", 1, "x = 1", "x = 2", "cosmic-ray NumberReplacer", "")
    run, left_out = split_equivalent([gap], load_equivalents(path))
    assert (run, left_out) == ([], [(gap, UNREACHABLE + "needs a 1 MiB file")])
    killed = MutantResult(Mutant("gen-b-1", "generated", "b.py", 1, "y", "z", "r", ""), "killed", ("s",))
    report = SensitivityReport("memory_core", ("s",), "own", (killed,), 1.0, 60.0, 0.9, 1.0, equivalent=tuple(left_out))
    lines = format_lines(report)
    assert lines[-1] == ("of those left out, 1 are unreachable by any scenario, not equivalent; counted as survivors "
                         "the kill rate is 0.500")
    path.write_text('[[equivalent]]\nfile = "a.py"\nbefore = "x"\nafter = "y"\nunreachable = "yes"\nreason = "r"\n',
                    encoding="utf-8")
    with pytest.raises(HarnessError, match=r"equivalent 1: 'unreachable' must be true or false"):
        load_equivalents(path)
