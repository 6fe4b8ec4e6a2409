from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.scenario import load_all
from harness.tools._bench import format_table, run_benchmark, score_question
from harness.tools._locomo import CATEGORIES, load_locomo, repair_evidence, to_scenarios, turn_docs

TINY = Path(__file__).resolve().parents[1] / "data" / "locomo_tiny.json"
REAL = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo" / "locomo10.json"


def test_category_map() -> None:
    assert CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@pytest.mark.parametrize(
    ("raw", "ids", "dropped"),
    [
        (["D1:3"], ("D1:3",), []),
        (["D:11:26"], ("D11:26",), []),
        (["D30:05"], ("D30:5",), []),
        (["D1:3, D1:4", "D1:4;D2:1"], ("D1:3", "D1:4", "D2:1"), []),
        (["D10:19", "D", "D4:36"], (), ["D10:19", "D", "D4:36"]),
    ],
)
def test_evidence_repair(raw: list[str], ids: tuple[str, ...], dropped: list[str]) -> None:
    known = {"D1:3", "D1:4", "D2:1", "D11:26", "D30:5"}
    assert repair_evidence(raw, known) == (ids, dropped)


def test_load_tiny_fixture() -> None:
    [conv] = load_locomo(TINY)
    assert len(conv.turns) == 6  # session_3 has a date but no turns: ignored
    assert conv.turns[2].document == "Ana: Look at this photo from the beach. [image: a dog running on the sand]"
    assert conv.turns[0].when is not None
    assert conv.turns[0].when.isoformat() == "2023-05-08T13:56:00+00:00"
    q = {x.question: x for x in conv.questions}
    assert q["What did Ben make after fixing the kiln?"].evidence == ("D2:1",)
    assert q["When did Ben start pottery?"].evidence == ("D1:2", "D1:4")
    assert q["What breed is the dog that won a race?"].evidence == ("D1:1", "D2:2")
    assert q["What does Ana think about jazz?"].evidence == ()
    assert q["What did Ana make in pottery class?"].answer == "a vase"
    assert conv.dropped_evidence == ["D9:9"]
    assert [o.provenance for o in conv.observations][:3] == [("D1:1",), ("D1:3", "D1:4"), ("D1:2",)]
    assert [d.relative_path for d in turn_docs(conv)][:2] == ["turns/D1-1.md", "turns/D1-2.md"]


def test_score_question() -> None:
    covered = [["D9:9"], ["D1:1"], ["x"], ["y"], ["z"], ["D2:2"]]
    assert score_question({"D1:1", "D2:2"}, covered) == (0.5, 1.0, 1.0, 1.0, 0.5)
    assert score_question({"D7:7"}, covered) == (0.0, 0.0, 0.0, 0.0, 0.0)


def test_bench_on_tiny_fixture_turns_and_observations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = run_benchmark(TINY, ["heuristic", "bm25"])
    assert bench["scored"] == 5
    table = bench["strategies"]["bm25"]["table"]
    assert table["single-hop"]["n"] == 2
    assert table["single-hop"]["hit@10"] == 100.0
    assert bench["comparisons"][0]["a"] == "heuristic"
    text = format_table(bench)
    assert "our bm25, categories 1-4" in text
    obs = run_benchmark(TINY, ["bm25"], mode="observations")
    assert obs["strategies"]["bm25"]["table"]["overall 1-5"]["n"] == 5
    assert main(["bench", "locomo", str(TINY), "--strategy", "bm25", "--out", str(tmp_path)], environ={}) == 0
    assert json.loads((tmp_path / "benchmark.json").read_text())["mode"] == "turns"
    assert "Benchmark: LoCoMo" in (tmp_path / "report.html").read_text()
    assert "bm25       overall 1-4" in capsys.readouterr().out


def test_import_writes_valid_scenarios(tmp_path: Path) -> None:
    assert main(["import", "locomo", str(TINY), "--out", str(tmp_path)], environ={}) == 0
    [scenario] = load_all([tmp_path])
    assert scenario.id == "locomo/conv-tiny-turns"
    assert len(scenario.memories) == 6
    assert sum(1 for s in scenario.steps if type(s).__name__ == "RecallStep") == 5
    data = to_scenarios(load_locomo(TINY), mode="observations")[0]
    assert data["memories"][1]["description"] == "[D1:3] [D1:4]"
    assert main(["run", str(tmp_path), "--strategy", "bm25", "--out", str(tmp_path / "run"), "--no-gates"],
                environ={}) == 0


def test_missing_dataset_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="no such file"):
        load_locomo(tmp_path / "nope.json")


@pytest.mark.slow
@pytest.mark.skipif(not REAL.exists(), reason="the LoCoMo file is not at ../shared/datasets/locomo/")
def test_bm25_reproduces_the_calibration_numbers() -> None:
    bench = run_benchmark(REAL, ["bm25"])
    row = bench["strategies"]["bm25"]["table"]["overall 1-4"]
    assert row["n"] == 1536
    assert abs(row["R@5"] - 50.0) <= 1.0
    assert abs(row["R@10"] - 56.5) <= 1.0
    assert abs(row["MRR"] - 42.2) <= 1.0
    assert bench["scored"] == 1982


def test_malformed_dataset_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "x", "qa": []}]')
    with pytest.raises(HarnessError, match=r"bad\.json: sample 0: malformed LoCoMo record \(KeyError: 'conversation'\)"):
        load_locomo(bad)
