"""Round 18: the gaps round 17's blind hostile-input probe left open ("hostile input: located errors, never
silence"). Each section is one class; each test draws its cases.

1. ``MEMHARNESS_DEBUG=0`` (``false``, ``no``) turned the traceback ON: the variable was tested for truthiness of
   its string. Now one parser (``harness.scenario._envflag``) reads every on/off variable (``MEMHARNESS_DEBUG``, the
   OpenTelemetry capture-content switch, which read any unknown value as off in silence): ``1/true/yes/on`` on,
   ``0/false/no/off``/empty off, anything else one line naming the variable.
2. ``MEMHARNESS_TRACE_URL`` was written into every report link unchecked: ``javascript:…``, a URL with no
   ``{trace_id}`` (every scenario linked to one page), ``{traceid}`` left verbatim. Now it is an http(s) URL
   template with a host holding ``{trace_id}`` and no other placeholder, or one line naming the variable.
3. A seed field, recall/forget option or system check a shipped system refuses was located at its memory's
   ``system:`` line or its step's line, however far below the offending key was. Now ``validate`` names the line
   of the key the system's message names (each system check tried alone, as a run tries it).
4. Recall expectations no system can meet passed the loader and failed every run: ``expect_selected`` longer than
   ``k`` (or than the qwen-file design's limit of 5 when ``k`` is unstated) or naming a memory twice,
   ``expect_covered`` naming a fact the probe does not ``expect`` or also ``forbid``s; a check step with one fact
   (or file) in both ``facts_present`` and ``facts_absent`` (``files_*``). Now each is a located error
   at the item that makes it impossible; one item fewer (or a portable scenario, whose limit is the system's) loads.
5. ``expect_removed`` naming a fact no memory covered before the forget passed at once ("not covered after" held
   whatever the forget did). Round 17's fix was backed out because the property suite's generated forgets name facts
   a system's extraction may never keep. Now the forget fails, "never stored … proves nothing", and the property
   builders claim removal only of facts a run of the steps before the forget shows stored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, assert_one_line_error, cli, load_error_at

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# 1. on/off environment variables ------------------------------------------------------------------------------------

def _spelled(words: tuple[str, ...]) -> st.SearchStrategy[str]:
    """One of ``words`` in any case, with spaces or tabs around it."""
    pad = st.text(" \t", max_size=2)
    word = st.sampled_from(words).flatmap(
        lambda w: st.tuples(*(st.sampled_from(sorted({c.lower(), c.upper()})) for c in w)).map("".join))
    return st.tuples(pad, word, pad).map("".join)


OFF_VALUES = _spelled(("0", "false", "no", "off")) | st.text(" \t", max_size=3)
ON_VALUES = _spelled(("1", "true", "yes", "on"))
NEITHER = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda v: v.strip().lower() not in ("0", "false", "no", "off", "", "1", "true", "yes", "on", "span_only",
                                        "span_and_event", "no_content", "event_only"))


def _broken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``memharness schema`` fail as a bug of ours would."""
    import harness.cli._commands as commands

    def boom(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(commands, "cmd_schema", boom)


@SETTINGS
@given(value=OFF_VALUES)
def test_debug_off_values_keep_the_one_line_error(value: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _broken(monkeypatch)
    o = cli(["schema"], capsys, environ={"MEMHARNESS_DEBUG": value})
    assert o.code == 2, o.err
    assert o.err.startswith("memharness: internal error: RuntimeError: a bug"), o.err
    assert len(o.err.splitlines()) == 1


@SETTINGS
@given(value=ON_VALUES)
def test_debug_on_values_show_the_traceback(value: str, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _broken(monkeypatch)
    with pytest.raises(RuntimeError, match="a bug"):
        cli(["schema"], capsys, environ={"MEMHARNESS_DEBUG": value})


@SETTINGS
@given(value=NEITHER, name=st.sampled_from(["MEMHARNESS_DEBUG", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]))
def test_an_on_off_variable_that_is_neither_is_one_line(value: str, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["schema"], capsys, environ={name: value})
    assert_one_line_error(o, mentions=(f"environment variable {name}: expected 1, true",))


@pytest.mark.parametrize(("value", "on"), [("1", True), ("On", True), (" yes", True), ("true", True),
                                           ("0", False), ("off", False), ("", False), ("FALSE", False),
                                           ("SPAN_ONLY", True), ("span_and_event", True), ("NO_CONTENT", False),
                                           ("EVENT_ONLY", False)])
def test_capture_content_reads_the_same_words(value: str, on: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """The on/off words, and OpenTelemetry GenAI's capture modes (the variable is shared with its instrumentation;
    a mode with spans is on: the harness puts content on spans), taken by every command (the review of round 18:
    SPAN_ONLY stopped every command)."""
    from harness.scenario._envflag import env_flag
    from harness.telemetry import semconv as sc

    assert env_flag({sc.CAPTURE_ENV: value}, sc.CAPTURE_ENV) is on
    assert cli(["schema"], capsys, environ={sc.CAPTURE_ENV: value}).code == 0


def test_the_capture_modes_are_not_debug_words(capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["schema"], capsys, environ={"MEMHARNESS_DEBUG": "SPAN_ONLY"})
    assert_one_line_error(o, mentions=("environment variable MEMHARNESS_DEBUG: expected 1, true",))


# 2. MEMHARNESS_TRACE_URL --------------------------------------------------------------------------------------------

HOSTS = st.sampled_from(["phoenix.example", "127.0.0.1:6006", "[::1]:6006", "Trace.Example.org"])
PATHS = st.lists(st.text("abcxyz019-_.~%", min_size=1, max_size=6), max_size=3).map("/".join)


@st.composite
def _good_templates(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTPS"]))
    where = draw(st.sampled_from(["path", "query", "fragment", "json"]))
    base = f"{scheme}://{draw(HOSTS)}/{draw(PATHS)}"
    return {"path": f"{base}/{{trace_id}}", "query": f"{base}?trace={{trace_id}}", "fragment": f"{base}#{{trace_id}}",
            "json": base + '?left={"queries":[{"query":"{trace_id}"}]}'}[where]  # a Grafana Explore link: JSON's braces


@st.composite
def _bad_templates(draw: st.DrawFn) -> str:
    good = draw(_good_templates())
    how = draw(st.sampled_from(["scheme", "no host", "space", "control", "no placeholder", "other placeholder"]))
    if how == "scheme":
        return draw(st.sampled_from(["javascript:", "ftp:", "file:", "data:", "", "//", "mailto:"])) + \
            good.split(":", 1)[1].lstrip("/")
    if how == "no host":
        return draw(st.sampled_from(["http:///{trace_id}", "https://:80/{trace_id}", "http:{trace_id}"]))
    if how == "space":
        at = draw(st.integers(0, len(good)))
        return good[:at] + draw(st.sampled_from([" ", "\u00a0", "\u2003"])) + good[at:] + "x"
    if how == "control":
        at = draw(st.integers(1, len(good) - 1))
        return good[:at] + draw(st.sampled_from(["\n", "\x00", "\x7f", "\u202e"])) + good[at:]
    if how == "no placeholder":
        return good.replace("{trace_id}", draw(st.sampled_from(["", "trace_id", "{traceid}", "{ trace_id }", "$trace_id"])))
    return good + draw(st.sampled_from(["&run={run_id}", "/{}", "/{0}", "&s={span.id}"]))  # other placeholder


@SETTINGS
@given(template=_bad_templates())
def test_a_trace_url_that_is_not_an_http_template_is_one_line(template: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": template})
    assert_one_line_error(o, mentions=("environment variable MEMHARNESS_TRACE_URL: expected an http:// or https://",))


@SETTINGS
@given(template=_good_templates(), pad=st.text(" \t", max_size=2))
def test_an_http_trace_url_template_is_taken(template: str, pad: str, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli._report_cmds import trace_url

    o = cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": pad + template + pad})
    assert o.code == 0, o.err
    assert trace_url({"MEMHARNESS_TRACE_URL": pad + template + pad}) == template


@pytest.mark.parametrize("blank", ["", " ", "\t "])
def test_a_blank_trace_url_is_unset(blank: str, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli._report_cmds import trace_url

    assert cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": blank}).code == 0
    assert trace_url({"MEMHARNESS_TRACE_URL": blank}) is None


# 3. system inputs located at their key ------------------------------------------------------------------------------

GOOD_CHECKS = {"memories": "1", "fts_integrity": "true", "queue_open": "0", "index_contains": "billing"}
BAD_CHECKS = {"fts_integrity": '"yes"', "memories": "-1", "no_such_check": "1", "traces": '"no arrow"',
              "queue_open": "1.5"}
GOOD_SEED = {"importance": "0.5", "access_count": "3", "priority": "long_term"}
BAD_SEED = {"priority": "bogus", "importance": "7", "access_count": "-2", "no_such_field": "1"}
GOOD_OPTIONS = {"memory_type": "project"}
BAD_OPTIONS = {"path": "nowhere"}
FILLER = st.lists(st.sampled_from(["", "# a comment"]), max_size=2)


@st.composite
def _mapping(draw: st.DrawFn, good: dict[str, str], bad: dict[str, str], indent: int) -> tuple[list[str], int]:
    """The lines of a mapping of some good keys and one bad key (blank and comment lines between), and the index of
    the bad key's line among them."""
    bad_key = draw(st.sampled_from(sorted(bad)), label="bad")
    others = draw(st.lists(st.sampled_from(sorted(set(good) - {bad_key})), unique=True, max_size=3), label="good")
    at = draw(st.integers(0, len(others)), label="at")
    keys = [*others[:at], bad_key, *others[at:]]
    lines: list[str] = []
    bad_at = -1
    for key in keys:
        lines += [f"{' ' * indent}{f}" if f else "" for f in draw(FILLER)]
        if key == bad_key:
            bad_at = len(lines)
        lines.append(f"{' ' * indent}{key}: {bad[key] if key == bad_key else good[key]}")
    return lines, bad_at


@SETTINGS
@given(data=st.data(), where=st.sampled_from(["check", "seed", "options"]))
def test_a_refused_system_input_names_the_line_of_its_key(data: st.DataObject, where: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["design: s1-sqlite", "clock: 2026-03-02T09:00:00Z", "memories:", "  - path: project/m.md",
             "    type: project", '    body: "billing runs on docker"']
    if where == "seed":
        body, bad_at = data.draw(_mapping(GOOD_SEED, BAD_SEED, 6))
        lines += ["    system:"]
        bad_line = len(lines) + bad_at + 1
        lines += body
    lines += ["steps:", "  - recall:", "      query: billing"]
    if where == "options":
        body, bad_at = data.draw(_mapping(GOOD_OPTIONS, BAD_OPTIONS, 8))
        lines += ["      options:"]
        bad_line = len(lines) + bad_at + 1
        lines += body
    if where == "check":
        body, bad_at = data.draw(_mapping(GOOD_CHECKS, BAD_CHECKS, 8))
        lines += ["  - check:", "      system:"]
        bad_line = len(lines) + bad_at + 1
        lines += body
    path = tmp_path / "inputs.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    o = cli(["validate", str(path)], capsys)
    assert_one_line_error(o, mentions=(), budget=20)
    match = LOCATED.match(o.err.strip())
    assert match, o.err
    assert int(match["line"]) == bad_line, (o.err, "\n".join(lines))


def test_a_refused_input_the_message_does_not_name_stays_at_its_mapping(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A message naming no key keeps the mapping's own line (never a guess)."""
    from harness.replay._inputs import key_line
    from harness.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("design: s1-sqlite\nsteps:\n  - recall:\n      query: q\n      options:\n        path: typed\n"
                    "        memory_type: fact\n", encoding="utf-8")
    scenario = load_scenario(path)
    options = {"path": "typed", "memory_type": "fact"}
    assert key_line(scenario, "steps[0].recall.options", options, "something else went wrong", 3) == 3
    assert key_line(scenario, "steps[0].recall.options", options, "recall option memory_type: no", 3) == 7
    assert key_line(scenario, "steps[0].recall.options", options, "unknown options memory_type, path", 3) == 7


def test_a_run_locates_a_refused_seed_field_at_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "seed.yaml"
    path.write_text("design: s1-sqlite\nclock: 2026-03-02T09:00:00Z\nmemories:\n  - path: project/m.md\n"
                    "    type: project\n    body: billing\n    system:\n      importance: 0.5\n\n      priority: bogus\n"
                    "steps:\n  - recall: {query: billing}\n", encoding="utf-8")
    o = cli(["run", str(path), "--system", "sqlite", "--strategy", "heuristic", "--out", str(tmp_path / "out")], capsys)
    assert "memories[0] (line 10): memory project/m.md: priority must be" in o.out + o.err, o.out + o.err


# 4. impossible recall expectations ----------------------------------------------------------------------------------

FACTS = ["f0", "f1", "f2", "f3"]
RECALL_HEAD = ["clock: 2026-03-02T09:00:00Z", "facts:", *(f"  {f}: {{type: user, match: [{f}]}}" for f in FACTS),
               "steps:", "  - recall:", "      query: anything"]


def _write(tmp_path: Path, design: str | None, lines: list[str]) -> Path:
    path = tmp_path / "impossible.yaml"
    path.write_text("\n".join(([f"design: {design}"] if design else []) + RECALL_HEAD + lines) + "\n", encoding="utf-8")
    return path


def _block(key: str, items: list[str]) -> list[str]:
    return [f"      {key}:", *(f"        - {item}" for item in items)] if items else [f"      {key}: []"]


@SETTINGS
@given(n=st.integers(0, 12), k=st.one_of(st.none(), st.integers(1, 10)),
       design=st.sampled_from([None, "qwen-file", "s1-sqlite"]))
def test_expect_selected_longer_than_the_recall_limit_is_refused(n: int, k: int | None, design: str | None,
                                                                 tmp_path: Path) -> None:
    from harness.scenario import load_scenario

    lines = ([f"      k: {k}"] if k is not None else []) + _block("expect_selected", [f"user/m{j}.md" for j in range(n)])
    path = _write(tmp_path, design, lines)
    limit = k if k is not None else 5 if design == "qwen-file" else None
    if limit is None or n <= limit:  # just inside (n == limit) loads, as does any n where the limit is the system's
        assert load_scenario(path).steps[0].expect_selected is not None
        return
    first_past = len(RECALL_HEAD) + (design is not None) + (k is not None) + 2 + limit  # the item past the limit
    match = load_error_at(path, first_past, f"{n} selected with a limit of {limit}")
    assert match["field"] == f"steps[0].recall.expect_selected[{limit}]"
    assert f"at most {limit}" in match["what"]


@SETTINGS
@given(paths=st.lists(st.sampled_from([f"user/m{j}.md" for j in range(4)]), min_size=1, max_size=5))
def test_expect_selected_naming_a_memory_twice_is_refused(paths: list[str], tmp_path: Path) -> None:
    from harness.scenario import load_scenario

    path = _write(tmp_path, None, _block("expect_selected", paths))
    twice = next((i for i, p in enumerate(paths) if p in paths[:i]), None)
    if twice is None:
        assert load_scenario(path).steps[0].expect_selected == tuple(paths)
        return
    match = load_error_at(path, len(RECALL_HEAD) + 2 + twice, f"{paths[twice]} twice")
    assert match["field"] == f"steps[0].recall.expect_selected[{twice}]"


@SETTINGS
@given(expect=st.lists(st.sampled_from(FACTS), unique=True, max_size=4),
       covered=st.lists(st.sampled_from(FACTS), unique=True, max_size=4),
       forbid=st.lists(st.sampled_from(FACTS), unique=True, max_size=4))
def test_expect_covered_that_can_never_hold_is_refused(expect: list[str], covered: list[str], forbid: list[str],
                                                       tmp_path: Path) -> None:
    from harness.scenario import load_scenario

    lines = _block("expect", expect) + _block("forbid", forbid) + _block("expect_covered", covered)
    path = _write(tmp_path, None, lines)
    bad = next((i for i, f in enumerate(covered) if f not in expect or f in forbid), None)
    if bad is None:  # covered within expect, none forbidden: loads
        assert load_scenario(path).steps[0].expect_covered == tuple(covered)
        return
    at = len(RECALL_HEAD) + len(_block("expect", expect)) + len(_block("forbid", forbid)) + 2 + bad
    match = load_error_at(path, at, f"expect_covered {covered} with expect {expect}, forbid {forbid}")
    assert match["field"] == f"steps[0].recall.expect_covered[{bad}]"
    assert ("not in this probe's expect" if covered[bad] not in expect else "also forbidden") in match["what"]



@SETTINGS
@given(kind=st.sampled_from(["facts", "files"]), present=st.lists(st.sampled_from(FACTS), unique=True, max_size=4),
       absent=st.lists(st.sampled_from(FACTS), unique=True, max_size=4))
def test_a_check_finding_one_thing_present_and_absent_is_refused(kind: str, present: list[str], absent: list[str],
                                                                 tmp_path: Path) -> None:
    from harness.scenario import load_scenario

    name = (lambda f: f) if kind == "facts" else (lambda f: f"user/{f}.md")
    head = [line for line in RECALL_HEAD if not line.startswith("  - recall") and "query" not in line]
    block = [*_block(f"{kind}_present", [name(f) for f in present]), *_block(f"{kind}_absent", [name(f) for f in absent])]
    path = tmp_path / "check.yaml"
    path.write_text("\n".join([*head, "  - check:", *block]) + "\n", encoding="utf-8")
    both = next((i for i, f in enumerate(absent) if f in present), None)
    if both is None:
        assert load_scenario(path).steps[0] is not None
        return
    at = len(head) + 1 + len(_block(f"{kind}_present", present)) + 1 + both + 1
    match = load_error_at(path, at, f"{absent[both]} present and absent")
    assert match["field"] == f"steps[0].check.{kind}_absent[{both}]"


# 5. expect_removed of a fact never stored ---------------------------------------------------------------------------

ANIMALS = ["zebra", "lynx", "okapi"]
FORGET_HEAD = """strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
facts:
  terse: {type: feedback, match: ["terse"]}
  zebra: {type: user, match: ["zebra"]}
  lynx: {type: user, match: ["lynx"]}
  okapi: {type: user, match: ["okapi"]}
memories:
  - {path: feedback/terse.md, name: Terse, description: terse replies, type: feedback, body: "be terse"}
steps:
"""


@settings(max_examples=examples(20), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(never=st.lists(st.sampled_from(ANIMALS), max_size=3, unique=True), covered=st.booleans(),
       system=st.sampled_from(["reference", "sqlite"]))
def test_removing_a_fact_never_stored_fails_the_forget(never: list[str], covered: bool, system: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    removed = (["terse"] if covered else []) + never
    path = tmp_path / "forget.yaml"
    path.write_text(FORGET_HEAD + f"  - forget: {{query: forget terse replies, expect_removed: [{', '.join(removed)}]}}\n",
                    encoding="utf-8")
    cli(["run", str(path), "--no-gates", "--system", system, "--out", str(tmp_path / "out")], capsys)
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    failures = [str(f) for row in rows for f in row["failures"]]
    said = [f for f in failures if "never stored" in f]
    if never:
        assert len(said) == 1, failures
        assert all(name in said[0] for name in never), said
        assert "proves nothing" in said[0], said
        assert "terse" not in said[0].split("never stored")[0], said
    else:  # just inside: every named fact was stored before the forget
        assert not said, failures


def test_the_forget_property_claims_only_a_stored_fact() -> None:
    """The property builder forgets a fact the system stored, and claims nothing when it stored none."""
    from harness.replay import ScenarioResult
    from harness.replay._records import Probe
    from harness.scenario import Fact, ForgetStep, Scenario, SessionStep, Turn
    from harness.tools._properties import default_properties

    [prop] = [p for p in default_properties() if p.name == "forgotten-never-recalled"]
    facts = {f: Fact(f, "user", (f,)) for f in ANIMALS}
    base = Scenario(id="g", path=Path("g.yaml"), description="", tags=(), clock=datetime(2026, 3, 2, tzinfo=UTC),
                    facts=facts, memories=(), steps=(SessionStep("s1", (Turn("user", "zebra lynx okapi"),)),))

    def stored(*facts: str) -> object:
        end = Probe(scenario="g", step=1, kind="check", strategy="heuristic", query="end of scenario", covered=facts)
        return lambda s: ScenarioResult(scenario="g", strategy="heuristic", passed=True, failures=(), probes=(end,),
                                        trace_id="t")

    for held, claim in [(("lynx",), ("lynx",)), (("okapi", "zebra"), ("zebra",)), ((), ())]:
        built = prop.build(base, stored(*held))
        forget = next(s for s in built.steps if isinstance(s, ForgetStep))
        assert forget.expect_removed == claim, (held, forget)
