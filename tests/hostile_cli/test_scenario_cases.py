"""Hostile scenario files: each case must give exit 2 and one line naming file, line and field, within 2 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile_cli._support import LOCATED, STEP, assert_one_line_error, cli


def _bomb(levels: int = 12, where: str = "description") -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
              for i in range(1, levels)]
    body = "\n".join("  " + line for line in lines)
    if where == "scripted_model":
        return f"scripted_model:\n  - summary: x\n    lots:\n  {body.replace(chr(10), chr(10) + '  ')}\n" + STEP
    return f"{where}:\n{body}\n" + STEP


def _mem(path: str, extra: str = "") -> str:
    return f'memories:\n  - {{path: "{path}", type: user, body: b{extra}}}\n' + STEP


def _recall(field: str) -> str:
    return f"steps:\n  - recall: {{query: q, {field}}}\n"


def _turn(text: str) -> str:
    return f'steps:\n  - session: s\n    turns:\n      - user: {text}\n'


# (case id, file text, field the one-line error must name, expected error line or None to skip the line check)
CASES: list[tuple[str, str, str, int | None]] = [
    # sizes and counts
    ("repeat-100000000", 'memories:\n  - {path: "p/n{i}.md", repeat: 100000000, type: user}\n' + STEP,
     "memories[0].repeat", 2),
    ("repeat-1001", 'memories:\n  - {path: "p/n{i}.md", repeat: 1001, type: user}\n' + STEP, "memories[0].repeat", 2),
    ("memories-total", "memories:\n" + "".join(f'  - {{path: "p{k}/n{{i}}.md", repeat: 1000, type: user}}\n'
                                               for k in range(6)) + STEP, "memories[5]", 7),
    ("steps-10001", "steps:\n" + "  - advance: 1s\n" * 10_001, "steps", 2),
    ("long-line", "description: " + "x" * 150_000 + "\n" + STEP, "file", 1),
    ("alias-bomb", _bomb(), "yaml", None),
    ("alias-bomb-scripted-model", _bomb(where="scripted_model"), "yaml", None),
    ("deep-flow-1000", "steps: " + "[" * 1000 + "]" * 1000 + "\n", "yaml", 1),
    ("deep-block-1000", "scripted_model:\n" + "".join("  " * (k + 1) + f"k{k}:\n" for k in range(1000)) + STEP,
     "yaml", None),
    ("recursive-alias", "description: &a [*a]\n" + STEP, "yaml", 1),
    ("huge-text", "description: '" + "y" * 99_000 + "'\n" + "body_more: x\n", "body_more", 2),
    # durations
    ("advance-9999999999999d", "steps: [{advance: 9999999999999d}]\n", "steps[0].advance", 1),
    ("advance-999999999d", "steps: [{advance: 999999999d}]\n", "steps[0].advance", 1),
    ("age-5000-digits", 'memories:\n  - {path: a.md, type: user, age: ' + "9" * 5000 + "d}\n" + STEP,
     "memories[0].age", 2),
    ("age-before-2000", 'clock: 2026-03-02T09:00:00Z\nmemories:\n  - {path: a.md, type: user, age: 36000d}\n' + STEP,
     "memories[0].age", 3),
    ("lock-age-before-2000", "steps:\n  - lock: {pid: dead, age: 36000d}\n", "steps[0].lock.age", 2),
    ("timeline-past-2100", "clock: 2090-01-01\nsteps:\n  - advance: 3650d\n  - advance: 3650d\n", "steps[1].advance", 4),
    # clock dates
    ("clock-9999-12-31", "clock: 9999-12-31T23:59:59Z\n" + STEP, "clock", 1),
    ("clock-0001-01-01", "clock: 0001-01-01T00:00:00Z\n" + STEP, "clock", 1),
    ("clock-0001-offset", "clock: 0001-01-01T00:00:00+01:00\n" + STEP, "clock", 1),
    ("clock-1970-01-01", "clock: 1970-01-01T00:00:00Z\n" + STEP, "clock", 1),
    ("clock-2026-02-30", "clock: 2026-02-30T09:00:00Z\n" + STEP, "clock", 1),
    ("clock-quoted-2026-02-30", "clock: '2026-02-30T09:00:00Z'\n" + STEP, "clock", 1),
    ("date-in-description", "description: 2026-02-30\n" + STEP, "description", 1),
    ("date-in-turn", _turn("2026-02-30"), "steps[0].turns[0].user", 4),
    ("date-in-tag", "tags: [2026-13-01]\n" + STEP, "tags[0]", 1),
    ("date-in-scripted-model", "scripted_model:\n  - {summary: 2026-02-30}\n" + STEP, "scripted_model[0].summary", 2),
    ("valid-date-in-scripted-model", "scripted_model:\n  - {summary: 2026-02-03}\n" + STEP,
     "scripted_model[0].summary", 2),
    # characters
    ("nul-in-body", 'memories:\n  - {path: a.md, type: user, body: "a\\0b"}\n' + STEP, "memories[0].body", 2),
    ("bel-in-query", _recall('query: "ring\\a"').replace("query: q, ", ""), "steps[0].recall.query", 2),
    ("esc-in-turn", _turn('"\\e[31mred"'), "steps[0].turns[0].user", 4),
    ("lone-surrogate", 'description: "\\ud800"\n' + STEP, ":1: ", 1),  # libyaml: yaml, pure PyYAML: description
    ("newline-in-session", 'steps:\n  - session: "a\\nb"\n', "steps[0].session", 2),
    ("session-10k", "steps:\n  - session: " + "s" * 10_000 + "\n", "steps[0].session", 2),
    ("raw-bel-byte", "description: a\x07b\n" + STEP, "yaml", 1),
    # YAML tags and values
    ("int-tag-abc", _recall("k: !!int abc"), "steps[0].recall.k", 2),
    ("python-tag", "description: !!python/object/apply:os.system [echo hi]\n" + STEP, "yaml", 1),
    ("python-name-tag", "description: !!python/name:os.system ''\n" + STEP, "description", 1),
    ("float-tag", "description: !!float xyz\n" + STEP, "description", 1),
    ("binary-tag", "description: !!binary '%%%'\n" + STEP, "description", 1),
    ("unknown-local-tag", "description: !custom x\n" + STEP, "description", 1),
    ("int-5000-digits", _recall("k: " + "7" * 5000), "steps[0].recall.k", 2),
    ("k-huge", _recall("k: 99999999999999999999"), "steps[0].recall.k", 2),
    ("set-as-text", "description: !!set {a: null}\n" + STEP, "yaml", 1),
    # keys
    ("list-as-key", "? [a, b]\n: 1\n" + STEP, "key", 1),
    ("mapping-as-key", "facts:\n  ? {a: 1}\n  : {type: user, match: [x]}\n" + STEP, "facts", 2),
    ("list-key-in-scripted-model", "scripted_model:\n  - {[a]: 1}\n" + STEP, "scripted_model[0]", 2),
    ("duplicate-top-key", "description: a\ndescription: b\n" + STEP, "description", 2),
    ("duplicate-fact", "facts:\n  x: {type: user, match: [a]}\n  x: {type: user, match: [b]}\n" + STEP, "facts.x", 3),
    ("duplicate-in-scripted-model", "scripted_model:\n  - {a: 1, a: 2}\n" + STEP, "scripted_model[0].a", 2),
    ("newline-fact-id", 'facts:\n  "a\\nb": {type: user, match: [x]}\n' + STEP, "facts.a\\nb", 2),
    ("override-5000-digits", "strategy_overrides:\n  ? " + "1" * 5000 + "\n  : heuristic\n" + STEP, "strategy_overrides",
     3),
    ("id-300", "id: " + "i" * 300 + "\n" + STEP, "id", 1),
    ("tag-control", 'tags: ["a\\tb"]\n' + STEP, "tags[0]", 1),
    # scripted model values
    ("scripted-inf", "scripted_model:\n  - {score: .inf}\n" + STEP, "scripted_model[0].score", 2),
    ("scripted-error-message-int", "scripted_model:\n  - {error: timeout, message: 3}\n" + STEP, "scripted_model[0]", 2),
    ("scripted-nul", 'scripted_model:\n  - "a\\0"\n' + STEP, "scripted_model[0]", 2),
    # memory paths
    ("path-backslash", _mem("a\\\\b.md"), "memories[0].path", 2),
    ("path-nul", _mem("a\\0.md"), "memories[0].path", 2),
    ("path-control", _mem("a\\x01.md"), "memories[0].path", 2),
    ("path-newline", _mem("a\\nb.md"), "memories[0].path", 2),
    ("path-u2028", _mem("a\\u2028b.md"), "memories[0].path", 2),
    ("path-dotdot", _mem("../x.md"), "memories[0].path", 2),
    ("path-inner-dotdot", _mem("a/../../x.md"), "memories[0].path", 2),
    ("path-dotdot-harmless", _mem("a/../x.md"), "memories[0].path", 2),
    ("path-absolute", _mem("/etc/x.md"), "memories[0].path", 2),
    ("path-drive", _mem("C:/x.md"), "memories[0].path", 2),
    ("path-300-chars", _mem("u/" + "n" * 300 + ".md"), "memories[0].path", 2),
    ("path-256-bytes-utf8", _mem("u/" + "é" * 127 + ".md"), "memories[0].path", 2),
    ("path-total-bytes", _mem("/".join(["d" * 200] * 6) + ".md"), "memories[0].path", 2),
    ("path-17-deep", _mem("/".join(["d"] * 17) + ".md"), "memories[0].path", 2),
    ("path-reserved-con", _mem("user/CON.md"), "memories[0].path", 2),
    ("path-reserved-nul-lower", _mem("nul.md"), "memories[0].path", 2),
    ("path-index", _mem("MEMORY.md"), "memories[0].path", 2),
    ("path-not-md", _mem("notes.txt"), "memories[0].path", 2),
    ("path-bare-md", _mem(".md"), "memories[0].path", 2),
    ("path-empty-component", _mem("a//b.md"), "memories[0].path", 2),
    ("path-dot-component", _mem("./a.md"), "memories[0].path", 2),
    ("path-temp-prefix", _mem(".tmp-a.md"), "memories[0].path", 2),
    ("path-trailing-space", _mem("a /b.md"), "memories[0].path", 2),
    ("path-colon", _mem("a:b.md"), "memories[0].path", 2),
    ("path-file-and-dir", 'memories:\n  - {path: a.md, type: user}\n  - {path: a.md/b.md, type: user}\n' + STEP,
     "memories[1].path", 3),
    ("path-repeat-expands-long", 'memories:\n  - {path: "' + "n" * 250 + '{i}.md", repeat: 2, type: user}\n' + STEP,
     "memories[0].path", 2),
    ("tool-write-nul", 'steps:\n  - session: s\n    turns:\n      - tool_write: "a\\0.md"\n',
     "steps[0].turns[0].tool_write", 4),
    ("tool-write-absolute", 'steps:\n  - session: s\n    turns:\n      - tool_write: /etc/passwd\n',
     "steps[0].turns[0].tool_write", 4),
    # YAML structure
    ("two-documents", "steps: [{advance: 1h}]\n---\nsteps: [{advance: 1h}]\n", "yaml", 2),
    ("undefined-alias", "description: *nope\n" + STEP, "yaml", 1),
    ("top-level-list", "- a\n- b\n", "scenario", None),
    ("empty-file", "", "scenario", 1),
    ("only-comment", "# nothing\n", "scenario", 1),
    ("scalar-document", "hello\n", "scenario", None),
]


@pytest.mark.parametrize(("text", "field", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_scenario_gives_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                                 field: str, line: int | None) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    o = cli(["validate", str(path)], capsys)
    assert_one_line_error(o, mentions=(str(path), field))
    m = LOCATED.match(o.err.strip())
    assert m is not None, o.err
    if line is not None:
        assert m["line"] == str(line), o.err


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 10 * 1024 * 1024])
def test_oversized_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int) -> None:
    one_line = tmp_path / "one-line.yaml"
    one_line.write_text("description: " + "x" * size + "\n" + STEP)
    many = tmp_path / "many-lines.yaml"
    many.write_text(STEP + "# padding\n" * (size // 10))
    for path in (one_line, many):
        assert_one_line_error(cli(["validate", str(path)], capsys), mentions=(str(path), ":1: file: larger than"))


def test_everything_accepted_near_the_limits_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The limits are not off by one: the largest accepted values still validate."""
    path = tmp_path / "edge.yaml"
    path.write_text(
        "clock: 2000-01-02T00:00:00Z\n"
        'memories:\n  - {path: "p/n{i}.md", repeat: 1000, type: user}\n'
        '  - {path: "' + "/".join(["d"] * 15) + '/x.md", type: user}\n'
        '  - {path: "u/' + "é" * 125 + '.md", type: user, body: "tab\\tcr\\rnel\\u0085ls\\u2028"}\n'
        "steps:\n  - session: s\n    turns: [{user: 'I prefer tabs, remember that'}, {tool_write: 'a b/c.md'}]\n"
        "  - advance: 36499d\n  - lock: {pid: dead, age: 36400d}\n  - dream: {force: true}\n"
        "  - recall: {query: q, k: 1000000}\n  - check: {index_within_limits: true}\n", encoding="utf-8")
    o = cli(["validate", str(path)], capsys)
    assert o.code == 0, o.err
    assert o.out.strip() == "1 scenario(s) valid"
    # … and what validate accepts at its limits, run can run (no error status, nothing written outside --out)
    out = tmp_path / "out"
    o = cli(["run", str(path), "--out", str(out), "--no-gates"], capsys)
    assert o.code == 0, (o.out, o.err)
    # no `systems:`: both shipped systems replay it; the SQLite system lacks the memory tool the first session uses,
    # so every later step is skipped with it and its run is reported skipped, not passed by absence
    assert "1/2 scenario runs passed, 1 skipped" in o.out
