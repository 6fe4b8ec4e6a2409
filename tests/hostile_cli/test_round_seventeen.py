"""Round 17 (blind, generated): scenario inputs that parse but can never fail, or are never read.

Found by a differential fuzzer (the loader against the published JSON Schema over 2,500 mutations of the shipped
scenarios), by a walk of every expectation key with an absurd value through a real run (a run that still PASSED
names a dead expectation: 178 key × system cases), and by the case-insensitive file names the loader's portability
rules had missed. Each section below is one class; each test draws its cases.

1. A blank phrase in a substring check: ``prompt_contains: [""]`` is in every prompt, ``index_contains: [" "]`` in
   every index with a space, ``files_absent: [""]`` is never a file. ``memharness validate --strict`` counted
   ``prompt_contains: [""]`` as the recall step's assertion, so a probe asserting nothing passed strict mode; a check
   step made of blank phrases passed always. A differential fuzzer (loader against the published JSON Schema, 2,500
   mutations of the shipped scenarios) and a walk of every phrase-list field found them. Now each phrase is
   non-blank, as ``facts.*.match`` already required: one located line naming the item.
2. ``model_params`` values of the wrong type: ``temperature: hot``, ``max_tokens: 1.5``, ``purpose: 5`` were valid
   (the schema says number, integer, string) and failed only at run time, as a mismatch with the request.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.scenario import load_scenario
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, load_error_at

SETTINGS = settings(max_examples=examples(80), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

HEAD = """clock: 2026-03-02T09:00:00Z
facts:
  terse: {type: feedback, match: ["terse"]}
memories:
  - path: feedback/terse.md
    name: Terse
    description: terse replies
    type: feedback
    body: "be terse"
steps:
"""
# (step kind, the lines that open the step up to the mapping that holds the field, that mapping's indent)
CONTAINERS = {
    "recall": (["  - recall:", "      query: review this", "      expect: [terse]"], 6),
    "check": (["  - check:", "      facts_present: [terse]"], 6),
    "dream": (["  - dream:", "      force: true"], 6),
    "forget": (["  - forget:", "      query: forget terse", "      expect_removed: [terse]"], 6),
    "session": (["  - session: s1", "    turns: [{user: hi}]", "    expect_extract:", "      status: completed"], 6),
}
PHRASE_FIELDS = {
    "recall": ["prompt_contains", "prompt_excludes", "expect_model_shown", "expect_model_hidden"],
    "check": ["files_present", "files_absent", "index_contains", "loaded_index_contains", "only_files", "index_order"],
    "dream": ["expect_model_shown", "expect_model_hidden", "expect_warnings"],
    "forget": ["expect_model_shown", "expect_model_hidden", "expect_warnings"],
    "session": ["model_shown", "model_hidden", "warnings"],
}
PARAMS_KEY = {"recall": "expect_model_params", "dream": "expect_model_params", "forget": "expect_model_params",
              "session": "model_params"}
BLANKS = st.lists(st.sampled_from([" ", "\t", "\u3000", "\u00a0", "\u2003", "\u205f"]), max_size=4).map("".join)
GOOD = st.sampled_from(["terse", "feedback/terse.md", "be terse", "Terse"])


def _yaml_string(text: str) -> str:
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _located(path: Path, line: int, field: str) -> None:
    match = load_error_at(path, line, field)
    assert match["field"].endswith(field), match.string


@SETTINGS
@given(data=st.data(), blank=BLANKS, before=st.lists(GOOD, max_size=3), after=st.lists(GOOD, max_size=3))
def test_a_blank_phrase_is_a_located_error(data: st.DataObject, blank: str, before: list[str], after: list[str],
                                           tmp_path: Path) -> None:
    kind = data.draw(st.sampled_from(sorted(PHRASE_FIELDS)), label="step")
    name = data.draw(st.sampled_from(PHRASE_FIELDS[kind]), label="field")
    opening, indent = CONTAINERS[kind]
    pad = " " * indent
    lines = HEAD.splitlines() + opening + [f"{pad}{name}:"]
    lines += [f"{pad}  - {_yaml_string(p)}" for p in before]
    bad_line = len(lines) + 1
    lines += [f"{pad}  - {_yaml_string(blank)}"] + [f"{pad}  - {_yaml_string(p)}" for p in after]
    path = tmp_path / "blank.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _located(path, bad_line, f"{name}[{len(before)}]")


WRONG = {
    "purpose": st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.booleans()),
    "timeout_s": st.one_of(st.sampled_from(["hot", "30s", "'5'", "true", "false"]), st.text("abc ", min_size=1)),
    "temperature": st.one_of(st.sampled_from(["hot", "'0'", "true", "false", "warm"]), st.text("xyz", min_size=1)),
    "max_tokens": st.one_of(st.sampled_from(["1.5", "'10'", "true", "0.0", "many"]),
                            st.floats(min_value=0.1, max_value=1e6).filter(lambda f: not f.is_integer()).map(repr)),
}


@SETTINGS
@given(data=st.data(), per_purpose=st.booleans())
def test_a_model_parameter_of_the_wrong_type_is_a_located_error(data: st.DataObject, per_purpose: bool,
                                                                tmp_path: Path) -> None:
    kind = data.draw(st.sampled_from(sorted(PARAMS_KEY)), label="step")
    names = ["timeout_s", "temperature", "max_tokens"] + ([] if per_purpose else ["purpose"])
    name = data.draw(st.sampled_from(names), label="parameter")
    value = data.draw(WRONG[name], label="value")
    raw = str(value).lower() if isinstance(value, bool) else repr(value) if isinstance(value, float) else str(value)
    opening, indent = CONTAINERS[kind]
    pad = " " * indent + ("  " if per_purpose else "")
    lines = HEAD.splitlines() + opening + [f"{' ' * indent}{PARAMS_KEY[kind]}:"]
    if per_purpose:
        lines.append(f"{' ' * indent}  some-purpose:")
    lines.append(f"{pad}  {name}: {raw}")
    path = tmp_path / "params.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _located(path, len(lines), name)


@pytest.mark.parametrize("params", ["{purpose: p, timeout_s: 5, temperature: 0, max_tokens: 10}",
                                    "{p: {timeout_s: 2.5, temperature: 0.7, max_tokens: 1}}"])
def test_well_typed_model_parameters_still_load(params: str, tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(HEAD + "  - recall:\n      query: q\n      expect: [terse]\n      expect_model_params: "
                    + params + "\n      prompt_contains: [terse, ' be ']\n", encoding="utf-8")
    assert load_scenario(path).steps


# 3. Seeded paths that differ only in case: ``user/Tabs.md`` and ``user/tabs.md`` (or directories ``User/`` and
# ``user/``) were two memories on Linux and one on macOS or Windows, where the second write replaces the first — the
# very "seeded twice" the loader refuses for equal paths, and the same portability it already enforces (reserved
# device names, a trailing dot, NFC). Now the later path is one located line naming both.

_COMPONENT = st.text(st.sampled_from("abcdefgxyzéñ0123-_"), min_size=1, max_size=6).filter(
    lambda c: c[0].isalnum())


def _flip(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if flip else c for c, flip in zip(text, flips + [False] * len(text), strict=False))


def _seed_file(paths: list[str]) -> str:
    lines = [*HEAD.split("memories:")[0].splitlines(), "memories:"]
    lines += [f'  - {{path: "{p}", name: N{i}, description: d{i}, type: user, body: b{i}}}' for i, p in enumerate(paths)]
    return "\n".join([*lines, "steps:", "  - recall: {query: terse, expect: [terse], measure: true}"]) + "\n"


@SETTINGS
@given(data=st.data(), dirs=st.lists(_COMPONENT, max_size=2), name=_COMPONENT, others=st.lists(
    st.tuples(st.lists(_COMPONENT, max_size=2), _COMPONENT), max_size=3))
def test_seeded_paths_that_differ_only_in_case_are_a_located_error(
        data: st.DataObject, dirs: list[str], name: str, others: list[tuple[list[str], str]], tmp_path: Path) -> None:
    first = "/".join([*dirs, f"{name}.md"])
    if not any(c.isalpha() for c in first.removesuffix(".md")):
        first = "a" + first
    cut = data.draw(st.integers(1, first.count("/") + 1), label="components kept")  # the file, or a directory of it
    kept = first.split("/")[:cut]
    prefix = "/".join(kept)
    flips = data.draw(st.lists(st.booleans(), min_size=len(prefix), max_size=len(prefix)).filter(
        lambda f: _flip(prefix, f) != prefix), label="case flips")
    second = _flip(prefix, flips) + ("" if cut == first.count("/") + 1 else "/other.md")
    paths = [first]
    for odirs, oname in others:  # unrelated seeds in between (none may collide by case by themselves)
        other = "/".join(["zz", *odirs, f"{oname}.md"])
        if all(p.casefold().split("/")[:k] != other.casefold().split("/")[:k] or p == other
               for p in paths for k in range(1, 4)) and other not in paths:
            paths.append(other)
    paths.append(second)
    path = tmp_path / "case.yaml"
    text = _seed_file(paths)
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index(next(x for x in text.splitlines() if f'"{second}"' in x)) + 1
    _located(path, line, f"memories[{len(paths) - 1}].path")


@pytest.mark.parametrize("paths", [["user/a.md", "user/b.md"], ["user/a.md", "users/a.md"], ["Tabs.md", "user/Tabs.md"]])
def test_paths_that_differ_by_more_than_case_still_load(paths: list[str], tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(_seed_file(paths), encoding="utf-8")
    assert len(load_scenario(path).memories) == len(paths)


# 4. The same blank phrase in a shipped system's own checks (``check: {system: {…}}``): the SQLite system's
# ``index_contains: ""`` (and ``injected_index_*``, ``profile_contains``, ``no_episode_hits``, the TEXT of
# ``traces_newest: "KW => "``) and the file system's ``meta_contains: ""`` passed every run. ``validate`` asks each
# shipped system; now each refuses a blank phrase.

SYSTEM_PHRASES = {
    "s1-sqlite": ["index_contains", "index_lacks", "injected_index_contains", "injected_index_lacks",
                  "profile_contains", "no_episode_hits", "traces_newest", "traces_newest_lacks"],
    "qwen-file": ["meta_contains", "meta_lacks", "cursor_contains", "cursor_lacks"],
}


@SETTINGS
@given(data=st.data(), blank=BLANKS)
def test_a_blank_phrase_in_a_system_check_is_refused_by_validate(data: st.DataObject, blank: str,
                                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    design = data.draw(st.sampled_from(sorted(SYSTEM_PHRASES)), label="design")
    name = data.draw(st.sampled_from(SYSTEM_PHRASES[design]), label="check")
    value = f"{data.draw(st.sampled_from(['tabs', 'x y']), label='keyword')} => {blank}" if name.startswith("traces") \
        else blank
    path = tmp_path / "system.yaml"
    path.write_text(f"design: {design}\nclock: 2026-03-02T09:00:00Z\nsteps:\n  - check:\n      system:\n"
                    f"        {name}: {_yaml_string(value)}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    match = LOCATED.match(err)
    assert match, err
    assert match["field"] == "steps[0].check.system", err
    assert name in match["what"], err


# 5. A threshold for a strategy the probe never runs with: ``strategies: [heuristic]`` and ``require: {model: {recall:
# 1}}`` (or a probe pinned by ``strategy:`` or ``strategy_overrides`` to another) was never checked, yet counted as
# the probe's assertion by ``--strict``; ``strategies: []`` ran every strategy. Now both are located errors.

POOL = ["heuristic", "model", "bm25", "embedding", "hybrid"]


@SETTINGS
@given(data=st.data(), listed=st.one_of(st.none(), st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True)),
       pin=st.sampled_from(["none", "strategy", "override"]), keys=st.lists(st.sampled_from(POOL), min_size=1,
                                                                             max_size=4, unique=True))
def test_a_requirement_for_a_strategy_the_probe_never_runs_is_refused(
        data: st.DataObject, listed: list[str] | None, pin: str, keys: list[str], tmp_path: Path) -> None:
    pinned = data.draw(st.sampled_from(POOL), label="pinned") if pin != "none" else None
    lines = ([f"strategies: [{', '.join(listed)}]"] if listed else []) + \
        ([f'strategy_overrides: {{"0": {pinned}}}'] if pin == "override" else []) + HEAD.splitlines()
    lines += ["  - recall:", "      query: review this", "      expect: [terse]"]
    lines += [f"      strategy: {pinned}"] if pin == "strategy" else []
    lines += ["      require:"]
    first = len(lines) + 1
    for key in keys:
        lines += [f"        {key}:", "          recall: 1"]
    path = tmp_path / "require.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = [pinned] if pinned else listed
    dead = [k for k in keys if runs and k not in runs]
    if not dead:
        assert load_scenario(path).steps
        return
    _located(path, first + 2 * keys.index(dead[0]), f"require.{dead[0]}")


def test_an_empty_strategies_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "none.yaml"
    path.write_text("strategies: []\n" + HEAD + "  - recall: {query: q, expect: [terse], measure: true}\n",
                    encoding="utf-8")
    _located(path, 1, "strategies")


# 6. A check step that states nothing: ``check: {}``, ``check: {facts_present: [], no_stray_files: false}`` passed
# every run and ``validate --strict``, which refuses the same of a recall probe. Now strict names the step.

EMPTY_CHECK = {"facts_present": "[]", "facts_absent": "[]", "files_present": "[]", "files_absent": "[]",
               "index_contains": "[]", "loaded_index_contains": "[]", "index_order": "[]", "entries": "[]",
               "system": "{}", "no_stray_files": "false"}
REAL_CHECK = {"facts_present": "[terse]", "facts_absent": "[terse]", "files_present": "[feedback/terse.md]",
              "index_contains": "[terse]", "index_within_limits": "true", "max_entries_per_fact": "1",
              "index_lines": "1", "no_stray_files": "true", "only_files": "[]", "lock_held": "false"}


@SETTINGS
@given(data=st.data(), empty=st.lists(st.sampled_from(sorted(EMPTY_CHECK)), max_size=5, unique=True),
       real=st.one_of(st.none(), st.sampled_from(sorted(REAL_CHECK))), before=st.integers(0, 2))
def test_a_check_step_that_states_nothing_fails_strict(data: st.DataObject, empty: list[str], real: str | None,
                                                       before: int, tmp_path: Path) -> None:
    from harness.scenario import strict_problems

    fields = {k: EMPTY_CHECK[k] for k in empty}
    if real:
        fields[real] = REAL_CHECK[real]
    lines = HEAD.splitlines() + ["  - advance: 1h"] * before
    body = ", ".join(f"{k}: {v}" for k, v in fields.items())
    lines.append(f"  - check: {{{body}}}")
    path = tmp_path / "check.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    problems = strict_problems(load_scenario(path))
    if real:
        assert problems == []
        return
    assert len(problems) == 1, problems
    match = LOCATED.match(f"memharness: {problems[0]}")
    assert match, problems
    assert int(match["line"]) == len(lines), problems
    assert match["field"] == f"steps[{before}].check", problems


# 7. ``extract: false`` with ``expect_extract``: the session runs no extraction, so nothing of ``expect_extract`` was
# checked — ``{status: failed, written: 7, touched: [project]}`` passed. Now a located error at expect_extract.

EXTRACT_EXPECTS = {"status": "failed", "reason": "queued", "strategy": "model", "written": "7", "touched": "[project]",
                   "warnings": "[zzz]", "fallback": "timeout", "event": "{name: x}", "model_shown": "[terse]",
                   "details": "{message: x}"}


@SETTINGS
@given(keys=st.lists(st.sampled_from(sorted(EXTRACT_EXPECTS)), min_size=1, max_size=4, unique=True),
       extract=st.sampled_from(["false", "False", "FALSE", "true", None]), after=st.booleans(),
       flow=st.booleans())
def test_an_extraction_expectation_on_a_session_that_does_not_extract_is_refused(
        keys: list[str], extract: str | None, after: bool, flow: bool, tmp_path: Path) -> None:
    expect = "{" + ", ".join(f"{k}: {EXTRACT_EXPECTS[k]}" for k in keys) + "}"
    lines = [*HEAD.splitlines(), "  - session: s1", "    turns: [{user: be terse please}]"]
    extract_line = [f"    extract: {extract}"] if extract else []
    if flow:
        expect_lines = [f"    expect_extract: {expect}"]
    else:
        expect_lines = ["    expect_extract:"] + [f"      {k}: {EXTRACT_EXPECTS[k]}" for k in keys]
    lines += (expect_lines + extract_line) if after else (extract_line + expect_lines)
    at = lines.index(expect_lines[0]) + 1
    path = tmp_path / "extract.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if extract is None or extract == "true":
        assert load_scenario(path).steps
        return
    _located(path, at + (0 if flow else 1), "steps[0].expect_extract")


# 8. A ``strategy_overrides`` entry no step reads: on a check, advance, state, fault or lock step (which run no
# strategy), or on a recall/forget step whose own ``strategy`` pins it, the override was accepted and ignored.

STEP_LINES = {
    "session": ("  - session: s{n}\n    turns: [{{user: hi}}]", True),
    "dream": ("  - dream: {{force: true}}", True),
    "recall": ("  - recall: {{query: q{n}, expect: [terse], measure: true}}", True),
    "recall_pinned": ("  - recall: {{query: q{n}, expect: [terse], measure: true, strategy: bm25}}", False),
    "forget": ("  - forget: {{query: forget q{n}}}", True),
    "forget_pinned": ("  - forget: {{query: forget q{n}, strategy: heuristic}}", False),
    "check": ("  - check: {{facts_present: [terse]}}", False),
    "advance": ("  - advance: 1h", False),
    "state": ("  - state: {{file: meta, text: '{{}}'}}", False),
}


@SETTINGS
@given(kinds=st.lists(st.sampled_from(sorted(STEP_LINES)), min_size=1, max_size=6), data=st.data(),
       strategy=st.sampled_from(POOL))
def test_a_strategy_override_no_step_reads_is_refused(kinds: list[str], data: st.DataObject, strategy: str,
                                                      tmp_path: Path) -> None:
    target = data.draw(st.integers(0, len(kinds) - 1), label="overridden step")
    text = f'strategy_overrides:\n  "{target}": {strategy}\n' + HEAD
    text += "\n".join(STEP_LINES[k][0].format(n=n) for n, k in enumerate(kinds)) + "\n"
    path = tmp_path / "override.yaml"
    path.write_text(text, encoding="utf-8")
    if STEP_LINES[kinds[target]][1]:
        assert load_scenario(path).strategy_overrides == {target: strategy}
        return
    _located(path, 2, f"strategy_overrides.{target}")


# 9. ``memharness import locomo`` with ids that differ only in case: samples ``conv-1`` and ``Conv-1`` were written
# as ``conv-1-turns.yaml`` and ``Conv-1-turns.yaml`` (one file on macOS and Windows: a scenario lost there), and
# turns ``D1:3`` and ``d1:3`` as ``turns/D1-3.md`` and ``turns/d1-3.md`` (a scenario that, with 3. above, no longer
# validates). Now both are the import's one-line error, as an exact repeat already was.

_ID = st.text(st.sampled_from("abcxyzD0123-"), min_size=1, max_size=8).filter(lambda s: s[0].isalnum())


def _locomo_sample(sample_id: str, dia_ids: list[str]) -> dict[str, object]:
    turns = [{"speaker": "Ann", "dia_id": d, "text": f"line {i} about hiking"} for i, d in enumerate(dia_ids)]
    return {"sample_id": sample_id, "conversation": {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": turns,
                                                     "session_1_date_time": "1:56 pm on 8 May, 2023"},
            "qa": [{"question": "hiking?", "evidence": [dia_ids[0]], "category": 1, "answer": "yes"}]}


@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_ID, min_size=1, max_size=3, unique_by=str.casefold), dias=st.lists(
    st.integers(1, 9), min_size=1, max_size=4, unique=True), where=st.sampled_from(["sample", "dia", "none"]),
    data=st.data())
def test_import_refuses_ids_that_differ_only_in_case(ids: list[str], dias: list[int], where: str, data: st.DataObject,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import os
    import tempfile

    from tests.hostile_cli._support import cli

    dia_ids = [f"D1:{n}" for n in dias]
    samples = [_locomo_sample(i, dia_ids) for i in ids]
    if where == "sample":
        base = data.draw(st.sampled_from(ids), label="sample copied")
        variant = base.swapcase() if base.swapcase() != base else None
        if variant is None:
            return
        samples.append(_locomo_sample(variant, dia_ids))
    elif where == "dia":
        samples[-1] = _locomo_sample(ids[-1], [*dia_ids, data.draw(st.sampled_from(dia_ids), label="dia").lower()])
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory an example (tmp_path is the whole test's)
    source = work / "in.json"
    source.write_text(json.dumps(samples), encoding="utf-8")
    out = work / "out"
    o = cli(["import", "locomo", str(source), "--out", str(out)], capsys)
    if where == "none":
        assert o.code == 0, o.err
        assert len(os.listdir(out)) == len(samples)
        assert cli(["validate", str(out)], capsys).code == 0
        return
    assert o.code == 2, (o.code, o.err, sorted(os.listdir(out)) if out.exists() else None)
    assert len(o.err.splitlines()) == 1, o.err
    assert str(source) in o.err
    assert "differ only in case" in o.err
    assert not out.exists()


# 10. ``scripted_model`` in a scenario whose ``strategies`` hold no model strategy: only a model strategy asks the
# model, so the replies were accepted and never used. Now a located error at ``scripted_model``.

@SETTINGS
@given(listed=st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True),
       replies=st.lists(st.sampled_from(['{selected_memories: ["feedback/terse.md"]}', '"raw text"',
                                         "{error: timeout}"]), min_size=1, max_size=3))
def test_scripted_replies_no_strategy_asks_for_are_refused(listed: list[str], replies: list[str],
                                                           tmp_path: Path) -> None:
    from harness.scenario import MODEL_STRATEGIES

    text = f"strategies: [{', '.join(listed)}]\nscripted_model:\n" + "".join(f"  - {r}\n" for r in replies) + HEAD + \
        "  - recall: {query: review, expect: [terse], measure: true}\n"
    path = tmp_path / "scripted.yaml"
    path.write_text(text, encoding="utf-8")
    if set(listed) & set(MODEL_STRATEGIES):
        assert load_scenario(path).scripted_model is not None
        return
    _located(path, 3, "scripted_model")


# 11. A model ``fault`` step in a scenario whose ``strategies`` call no model: ``validate`` passed it and every run
# failed it ("a model fault needs a model"). Now validate says so, at the step.

@SETTINGS
@given(listed=st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True), data=st.data(),
       kind=st.sampled_from(["timeout", "connection", "rate_limit", "server_error", "malformed"]))
def test_a_model_fault_no_strategy_can_meet_is_refused(listed: list[str], data: st.DataObject, kind: str,
                                                       tmp_path: Path) -> None:
    from harness.scenario import MODEL_STRATEGIES

    before = data.draw(st.integers(0, 2), label="steps before")
    text = f"strategies: [{', '.join(listed)}]\n" + HEAD + "  - advance: 1h\n" * before + \
        f"  - fault: {{model: {kind}, times: 1}}\n  - recall: {{query: review, expect: [terse], measure: true}}\n"
    path = tmp_path / "fault.yaml"
    path.write_text(text, encoding="utf-8")
    if set(listed) & set(MODEL_STRATEGIES):
        assert load_scenario(path).steps
        return
    _located(path, len(text.splitlines()) - 1, f"steps[{before}].fault.model")


# 12. ``require: {recall: X}`` on a probe that expects nothing: recall is 1 whenever nothing is expected (the metric's
# definition), so the floor held whatever was selected — and ``--strict`` counted it. Refused now like mrr and ndcg
# there, by the loader and the schema alike.

@SETTINGS
@given(floor=st.floats(0.01, 1), per_strategy=st.sampled_from([None, *POOL]), expect=st.sampled_from(
    ["", "expect: [], "]), others=st.lists(st.sampled_from(["precision", "f1", "abstention"]), max_size=2, unique=True))
def test_a_recall_floor_on_a_probe_that_expects_nothing_is_refused(floor: float, per_strategy: str | None,
                                                                     expect: str, others: list[str],
                                                                     tmp_path: Path) -> None:
    import json

    import jsonschema
    import yaml

    metrics = ", ".join([*(f"{m}: 0.5" for m in others), f"recall: {floor!r}"])
    require = f"{{{per_strategy}: {{{metrics}}}}}" if per_strategy else f"{{{metrics}}}"
    text = HEAD + f"  - recall: {{query: review, {expect}require: {require}}}\n"
    path = tmp_path / "abstain.yaml"
    path.write_text(text, encoding="utf-8")
    field = f"require.{per_strategy}.recall" if per_strategy else "require.recall"
    _located(path, len(text.splitlines()), field)
    schema = json.loads((Path(__file__).resolve().parents[2] / "harness" / "scenario" / "scenario.schema.json")
                        .read_text(encoding="utf-8"))
    document = yaml.safe_load(text.replace("2026-03-02T09:00:00Z", "'2026-03-02T09:00:00Z'"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(document)), "the schema accepts it"
