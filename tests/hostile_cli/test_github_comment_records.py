"""``memharness github comment`` posts a run's summary.md as the pull request's verdict only when it is what the
run's checked records render (issue 33: it posted any summary.md, so an edited, truncated or swapped one, or one
beside a run directory whose other files are broken, became the verdict on the pull request). Generated edits of
the file, at a random line, must be refused naming that line; the untouched file, from a plain run, a run against a
baseline and a merged run, must be posted whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.tools._github import MARKER, comment_body
from tests.helpers import examples

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

SETTINGS = settings(max_examples=examples(25), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    suite = [str(SCENARIOS / "recall" / "multi-fact.yaml"), str(SCENARIOS / "dream")]
    out = {name: root / name for name in ("plain", "failing", "baseline", "s1", "s2", "merged")}
    assert main(["run", *suite, "--no-gates", "--out", str(out["plain"])], environ={}) == 0
    gates = root / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "recall.f1"\nmin = 1.01\n', encoding="utf-8")  # no run meets it
    assert main(["run", *suite, "--gates", str(gates), "--out", str(out["failing"])], environ={}) == 1
    assert main(["run", *suite, "--no-gates", "--baseline", str(out["plain"]), "--out", str(out["baseline"])],
                environ={}) == 0
    for i in (1, 2):
        assert main(["run", *suite, "--no-gates", "--shard", f"{i}/2", "--out", str(out[f"s{i}"])], environ={}) == 0
    assert main(["merge", str(out["merged"]), str(out["s1"]), str(out["s2"])], environ={}) == 0
    return out


@pytest.mark.parametrize("name", ["plain", "failing", "baseline", "merged"])
def test_an_untouched_summary_is_posted_whole(runs: dict[str, Path], name: str) -> None:
    body = comment_body(runs[name])
    assert body == f"{MARKER}\n" + (runs[name] / "summary.md").read_text(encoding="utf-8")


def _edit(lines: list[str], kind: str, at: int, text: str, other: list[str]) -> list[str]:
    if kind == "replace":
        return [*lines[:at], text, *lines[at + 1:]]
    if kind == "insert":
        return [*lines[:at], text, *lines[at:]]
    if kind == "drop":
        return [*lines[:at], *lines[at + 1:]]
    if kind == "truncate":
        return lines[:at]
    return other  # another run's summary.md


@SETTINGS
@given(name=st.sampled_from(["plain", "failing", "baseline", "merged"]),
       kind=st.sampled_from(["replace", "insert", "drop", "truncate", "swap"]),
       where=st.floats(min_value=0, max_value=1, exclude_max=True),
       text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85"
                                  "\u2028\u2029"), max_size=40),
       other=st.sampled_from(["plain", "failing", "baseline", "merged"]))
def test_an_edited_summary_is_refused_at_its_first_changed_line(runs: dict[str, Path], tmp_path_factory:
                                                                 pytest.TempPathFactory, name: str, kind: str,
                                                                 where: float, text: str, other: str) -> None:
    original = (runs[name] / "summary.md").read_text(encoding="utf-8").splitlines()
    swapped = (runs[other] / "summary.md").read_text(encoding="utf-8").splitlines()
    edited = _edit(original, kind, int(where * len(original)), text, swapped)
    if edited == original:
        return  # an edit that changed nothing (the same text, another run's identical file)
    run = tmp_path_factory.mktemp("edited") / "run"
    shutil.copytree(runs[name], run)
    path = run / "summary.md"
    path.write_text("\n".join(edited) + ("\n" if edited else ""), encoding="utf-8")
    with pytest.raises(HarnessError) as raised:
        comment_body(run)
    message = str(raised.value)
    assert "\n" not in message
    first = next((i for i, (a, b) in enumerate(zip(edited, original, strict=False)) if a != b),
                 min(len(edited), len(original))) + 1
    assert message.startswith(f"{path}:{first}: file: is not what the run's summary.json"), message


@pytest.mark.parametrize("broken", ["summary.json", "results.jsonl"])
def test_a_summary_beside_broken_records_is_not_posted(runs: dict[str, Path], tmp_path: Path, broken: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["plain"], run)
    (run / broken).write_text('{"passed": true', encoding="utf-8")
    with pytest.raises(HarnessError) as raised:
        comment_body(run)
    assert str(raised.value).startswith(f"{run / broken}:1:"), raised.value


def test_the_comment_command_says_why_in_one_line(runs: dict[str, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["plain"], run)
    (run / "summary.md").write_text("## memharness — PASSED\n", encoding="utf-8")
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": {"number": 3}}', encoding="utf-8")
    code = main(["github", "comment", str(run), "--event", str(event), "--repo", "o/r",
                 "--api", "http://127.0.0.1:9"], environ={"GITHUB_TOKEN": "t"})
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert f"{run / 'summary.md'}:" in err
