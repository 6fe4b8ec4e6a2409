"""``memharness import locomo`` and ``bench locomo`` against generated hostile LoCoMo files (round 7): every id that
becomes a file name stays a file name inside ``--out``, a wrong record is one line naming the input and the sample,
and ``--out`` gets every scenario or none. The records are synthetic (LoCoMo itself is never copied here)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile_cli._support import cli

_PATHLIKE = st.sampled_from(["../escape", "../../escape", "/tmp/abs-escape", "a/b", "sub/../../x", "", ".", "..",
                             "a\\b", "x" * 65, "conv\n26", "conv\x0026", "con:26", "D1:1", "conv-26", "é", "a" * 64])
HOSTILE_IDS = st.one_of(_PATHLIKE, _PATHLIKE, _PATHLIKE, st.text(max_size=8), st.integers(), st.none(),
                        st.lists(st.integers(), max_size=2))
VALUES = st.one_of(st.text(max_size=6), st.integers(-2, 7), st.none(), st.booleans(), st.floats(allow_nan=True),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


def _sample(sample_id: Any, n_turns: int) -> dict[str, Any]:
    turns = [{"speaker": "Ann" if i % 2 == 0 else "Bob", "dia_id": f"D1:{i + 1}", "text": f"line {i} about hiking"}
             for i in range(n_turns)]
    return {"sample_id": sample_id,
            "conversation": {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": turns,
                             "session_1_date_time": "1:56 pm on 8 May, 2023"},
            "qa": [{"question": "what about hiking?", "evidence": ["D1:1"], "category": 1, "answer": "yes"}]}


@st.composite
def hostile_files(draw: Any) -> list[Any]:
    samples: list[Any] = [_sample(draw(st.sampled_from(["conv-26", "conv-30"])), draw(st.integers(0, 3)))
                          for _ in range(draw(st.integers(1, 2)))]
    for _ in range(draw(st.integers(0, 3))):  # each mutation: one field of one sample gets a hostile value
        s = samples[draw(st.integers(0, len(samples) - 1))]
        where = draw(st.sampled_from(["sample_id", "sample_id", "dia_id", "dia_id", "speaker", "category", "qa",
                                      "session", "question"]))
        turns = s["conversation"]["session_1"]
        if where == "sample_id":
            s["sample_id"] = draw(HOSTILE_IDS)
        elif where in ("dia_id", "speaker") and isinstance(turns, list) and turns:
            turn = turns[draw(st.integers(0, len(turns) - 1))]
            if isinstance(turn, dict):  # (a session already replaced by a list of numbers has no turn to change)
                turn[where] = draw(HOSTILE_IDS if where == "dia_id" else VALUES)
        elif where == "category":
            s["qa"][0]["category"] = draw(VALUES)
        elif where == "question":
            s["qa"][0]["question"] = draw(VALUES)
        elif where == "qa":
            s["qa"].append(draw(VALUES))
        else:
            s["conversation"]["session_1"] = draw(st.one_of(VALUES, st.just([])))
    if draw(st.booleans()):
        samples.append(json.loads(json.dumps(samples[0])))  # the same sample (and sample_id) twice
    return samples


def _everything_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=hostile_files())
def test_import_writes_inside_out_whole_or_nothing(data: list[Any], tmp_path_factory: pytest.TempPathFactory,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path_factory.mktemp("import")
    source = root / "in.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    out = root / "work" / "out"
    o = cli(["import", "locomo", str(source), "--out", str(out)], capsys)
    assert "Traceback" not in o.err
    assert "internal error" not in o.err, o.err
    assert o.code in (0, 2), (o.code, o.err)
    assert _everything_under(root / "work") <= {"out"} | {f"out/{p}" for p in _everything_under(out)} if out.exists() \
        else _everything_under(root / "work") == set()
    assert not [p for p in Path("/tmp").glob("abs-escape*")], "wrote outside --out"
    if o.code == 2:
        assert not out.exists(), "a refused import left files in --out"
        assert len(o.err.splitlines()) == 1, o.err
        assert str(source) in o.err
    else:
        written = sorted(os.listdir(out))
        assert all("/" not in name and name.endswith(".yaml") for name in written)
        assert o.out.strip() == f"wrote {len(written)} scenario(s) to {out}", (o.out, written)
        assert len(written) == len(data)  # one scenario per sample: none overwrote another
    b = cli(["bench", "locomo", str(source), "--strategy", "heuristic", "--out", str(root / "bench")], capsys)
    assert "Traceback" not in b.err
    assert "internal error" not in b.err, b.err
    assert b.code in (0, 2), (b.code, b.err)


def test_deeply_nested_json_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for args in (["import", "locomo", str(source), "--out", str(tmp_path / "out")],
                 ["bench", "locomo", str(source), "--out", str(tmp_path / "b")]):
        o = cli(args, capsys)
        assert o.code == 2, o.err
        assert o.err.splitlines() == [f"memharness: {source}:1: invalid JSON (nested too deeply: 100,000 levels, the "
                                      "deepest from this line)"]


def test_an_import_into_a_directory_keeps_its_other_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "suite"
    out.mkdir()
    (out / "mine.yaml").write_text("kept", encoding="utf-8")
    source = tmp_path / "in.json"
    source.write_text(json.dumps([_sample("conv-1", 2)]), encoding="utf-8")
    assert cli(["import", "locomo", str(source), "--out", str(out)], capsys).code == 0
    assert sorted(os.listdir(out)) == ["conv-1-turns.yaml", "mine.yaml"]
    assert (out / "mine.yaml").read_text(encoding="utf-8") == "kept"
