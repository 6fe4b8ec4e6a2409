"""JSON nested too deeply for the parser, in every whole-file JSON the harness reads (hostile probe, round 13;
generated).

On the old code the error named line 1 (``summary.json``, a ``--benchmark`` file, ``cassette-meta.json``, the GitHub
event) or no line at all (the LoCoMo import), wherever the nesting was. Now it names the line where the nesting is
deepest. The oracle is the generator's: it knows on which line it put the innermost bracket.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay import read_meta
from harness.reporting import read_run
from harness.tools._github import pull_number
from harness.tools._locomo import load_locomo
from tests.hostile_cli._support import cli


def _read_benchmark(path: Path) -> object:
    from harness.cli._report_cmds import read_benchmark

    return read_benchmark(path)


READERS: dict[str, tuple[str, Callable[[Path], object]]] = {  # the file's name, and what reads it
    "summary": ("summary.json", lambda p: read_run(p.parent)),
    "benchmark": ("bench.json", _read_benchmark),
    "cassette-meta": ("cassette-meta.json", lambda p: read_meta(p.parent)),
    "github-event": ("event.json", pull_number),
    "locomo": ("locomo10.json", load_locomo),
}


def deep_json(seed: int, depth: int, wrapper: str) -> tuple[str, int]:
    """Nesting ``depth`` deep with line breaks (and strings holding brackets) strewn through it, inside ``wrapper``;
    and the line of the innermost opening bracket."""
    rng = random.Random(seed)
    opening: list[str] = []
    for i in range(depth):
        bracket = rng.choice("[{")
        opening.append(bracket if bracket == "[" else '{"k' + str(i % 7) + '": ')
        if rng.random() < 0.002:
            opening.append("\n" * rng.randint(1, 3))
        if bracket == "[" and rng.random() < 0.001:
            opening.append('"[{\\"[", ')  # brackets in a string are not nesting
    inner_line = 1 + "".join(opening).count("\n") + wrapper.partition("@")[0].count("\n")
    closing = "".join("]" if o.startswith("[") else "}" for o in reversed(opening) if o.strip() and o[0] in "[{")
    body = "".join(opening) + "1" + "\n" * rng.randint(0, 3) + closing
    return wrapper.replace("@", body), inner_line


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32), depth=st.integers(20_000, 60_000), reader=st.sampled_from(sorted(READERS)),
       wrapper=st.sampled_from(["@", '{\n"a": @\n}', '[\n\n{"x": 1},\n@]', '{"pull_request":\n @}']))
def test_too_deep_names_the_line_of_the_deepest_nesting(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                                        depth: int, reader: str, wrapper: str) -> None:
    name, read = READERS[reader]
    path = tmp_path_factory.mktemp("deep") / name
    text, line = deep_json(seed, depth, wrapper)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}:"), (message[:200], line)  # old: line 1, or (LoCoMo) no line
    assert "nested too deeply" in message
    assert "\n" not in message


def test_the_locomo_import_prints_it_as_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "locomo10.json"
    text, line = deep_json(7, 50_000, "[\n@\n]")
    source.write_text(text, encoding="utf-8")
    o = cli(["import", "locomo", str(source), "--out", str(tmp_path / "out")], capsys)
    assert o.code == 2
    assert o.out == ""
    assert o.err.strip().splitlines() == [f"memharness: {source}:{line}: invalid JSON (nested too deeply: 50,001 levels, "
                                        "the deepest from this line)"]
