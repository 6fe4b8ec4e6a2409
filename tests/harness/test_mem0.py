"""mem0 (``--system mem0``, the optional extra ``mem0``) replayed offline from the committed recordings
(``scenarios/cassettes/<default set>/proxy.jsonl``): no model, no network but loopback, the same probes every time;
a request nobody recorded is an error naming the call; it declares only what it has.

Skipped without mem0ai installed (``pip install -e '.[mem0]'``; .ci/run installs it). The missing-extra message is
tested either way."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.replay import PROXY_FILE

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "scenarios"
RECORDED = SUITE / "cassettes" / "qwen2.5-coder-1.5b" / PROXY_FILE
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def _mem0_missing() -> bool:
    """Without importing it: mem0 read with telemetry on (its default) is refused by the adapter."""
    return importlib.util.find_spec("mem0") is None


needs_mem0 = pytest.mark.skipif(_mem0_missing(), reason="mem0ai is not installed: pip install -e '.[mem0]'")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Refuse (and record) every connection and name lookup that is not loopback, in this process."""
    attempts: list[Any] = []
    connect, lookup = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            attempts.append(address)
            raise OSError(f"test: network refused ({address!r})")
        return connect(self, address)

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOOPBACK and host is not None:
            attempts.append(host)
            raise socket.gaierror(f"test: no name lookups ({host!r})")
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    return attempts


def _run(out: Path, *args: str) -> int:
    return main(["run", *args, "--system", "mem0", "--no-gates", "--jobs", "1", "--out", str(out)], environ={})


def _probes(out: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if "duration" not in k and k != "trace_id"} for r in rows]


def _results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@needs_mem0
def test_the_suite_replays_offline_from_the_committed_recordings(tmp_path: Path, offline: list[Any]) -> None:
    codes = [_run(tmp_path / name, str(SUITE)) for name in ("a", "b")]
    assert offline == []  # no connection or lookup beyond 127.0.0.1: models replayed, telemetry off
    assert all(code in (0, 1) for code in codes), codes  # complete (2 would be an unrecorded call or an error)
    assert _probes(tmp_path / "a") == _probes(tmp_path / "b")
    results = _results(tmp_path / "a")
    assert all(r["error"] is None for r in results), [r["error"] for r in results if r["error"]]
    portable = {f"{p.parent.name}/{p.stem}" for p in SUITE.glob("*/*.yaml")
                if not any(line.startswith(("design:", "systems:")) for line in p.read_text().splitlines())}
    ran = {r["scenario"] for r in results}
    assert portable <= ran
    assert "mem0/extract-then-recall" in ran
    skipped = {r["scenario"]: r["skipped"] for r in results if r.get("skipped")}
    assert set(skipped.values()) == {"mem0 implements strategies heuristic, not model"}
    dream = [p for p in _probes(tmp_path / "a") if p["kind"] == "dream"]
    assert dream
    assert all(p["skipped"] == "dream needs capability dream" for p in dream)
    extract = [p for p in _probes(tmp_path / "a") if p["kind"] == "extract"]
    assert extract
    assert all(p.get("skipped") is None for p in extract)
    import mem0.memory.telemetry

    assert mem0.memory.telemetry.MEM0_TELEMETRY is False


@needs_mem0
def test_an_unrecorded_call_is_an_error_naming_it(tmp_path: Path, offline: list[Any],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    shutil.copy(RECORDED, cassettes / PROXY_FILE)
    scenario = (SUITE / "recall" / "multi-fact.yaml").read_text()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "new-query.yaml").write_text(scenario.replace(
        "write an integration test for the orders database repository", "a query nobody recorded"))
    assert _run(tmp_path / "out", str(tmp_path / "s"), "--cassettes", str(cassettes)) == 2
    out = capsys.readouterr()
    (line,) = [x for x in (out.out + out.err).splitlines() if x.startswith("ERROR: new-query [heuristic] ")]
    assert "new-query.yaml: step 0: unrecorded model call embeddings (model all-MiniLM-L6-v2" in line, line
    assert offline == []


@needs_mem0
def test_a_fresh_cassette_directory_needs_no_model_name(tmp_path: Path, offline: list[Any],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """mem0 has no model path of ours: a suite with model scenarios (skipped for it) and a cassette directory without
    cassette-meta.json replays, or records, without --model (it asked for one: found by a live re-record)."""
    (tmp_path / "s" / "model").mkdir(parents=True)
    shutil.copy(SUITE / "recall" / "multi-fact.yaml", tmp_path / "s")
    shutil.copy(SUITE / "model" / "pin-cassette-recall.yaml", tmp_path / "s" / "model")  # a recorded model
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    shutil.copy(RECORDED, cassettes / PROXY_FILE)
    assert _run(tmp_path / "out", str(tmp_path / "s"), "--cassettes", str(cassettes)) == 0
    out = capsys.readouterr()
    assert "no model named" not in out.out + out.err
    assert [(r["scenario"], r["status"]) for r in _results(tmp_path / "out")] == [("multi-fact", "passed")]


@needs_mem0
def test_record_without_an_upstream_is_refused_before_any_replay(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path / "out", str(SUITE / "recall" / "multi-fact.yaml"), "--record",
                "--cassettes", str(tmp_path / "c")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["memharness: --record: a system behind the model proxy needs --api-base URL, the upstream it calls"]
    assert not (tmp_path / "out").exists()  # refused before replaying, not once per scenario
    # --system all: only when mem0 has a scenario to replay (a design: qwen-file one runs on the reference alone)
    assert main(["run", str(SUITE / "model" / "shown-recall.yaml"), "--system", "all", "--record", "--no-gates",
                 "--cassettes", str(tmp_path / "c"), "--out", str(tmp_path / "all")], environ={}) == 0


@needs_mem0
def test_it_declares_only_what_it_has() -> None:
    from harness.systems.mem0ai import Mem0System, factory

    assert Mem0System.capabilities == frozenset()
    assert Mem0System.strategies == frozenset({"heuristic"})
    assert getattr(factory, "model_proxy", False) is True


@pytest.mark.parametrize("system", ["mem0", "all"])
def test_without_the_extra_it_says_how_to_install_it(tmp_path: Path, system: str) -> None:
    code = ("import sys; sys.modules['mem0'] = None\n"
            "from harness.cli import main\n"
            f"sys.exit(main(['run', {str(SUITE / 'recall' / 'multi-fact.yaml')!r}, '--system', {system!r}, '--out', "
            f"{str(tmp_path / 'o')!r}], environ={{}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"memharness: --system {system}:")  # what was typed, not another option
    assert "pip install -e '.[mem0]'" in lines[0]
    assert "Traceback" not in lines[0]


def test_the_offline_guard_refuses_the_network(offline: list[Any]) -> None:
    with socket.socket() as sock, pytest.raises(OSError, match="network refused"):
        sock.connect(("192.0.2.1", 80))
    with pytest.raises(OSError, match="no name lookups"):
        socket.getaddrinfo("us.i.posthog.com", 443)
    assert len(offline) == 2


@needs_mem0
def test_conformance_builds_it_behind_a_proxy_with_nothing_recorded(offline: list[Any]) -> None:
    from harness.cli._conformance import conformance

    rows = {r.capability: r for r in conformance("mem0", [SUITE])}
    assert rows["model path (strategy model)"].verdict == "not declared"
    assert {c for c, r in rows.items() if r.verdict == "not declared"} >= {"dream", "file_index", "file_paths"}
    assert all(r.verdict != "missing method" for r in rows.values())
    assert rows["core (the portable operations its cases call)"].cases > 0
    assert offline == []


@needs_mem0
def test_conformance_replays_from_the_cassettes_it_is_given(tmp_path: Path, offline: list[Any]) -> None:
    """``conformance --cassettes DIR`` (the walk-through found no way to name them): an empty set leaves mem0's
    calls unrecorded, the committed recordings answer them."""
    from harness.cli._conformance import conformance

    (tmp_path / "empty").mkdir()
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    shutil.copy(RECORDED, recorded / PROXY_FILE)
    core = "core (the portable operations its cases call)"
    empty = {r.capability: r for r in conformance("mem0", [SUITE / "recall"], cassettes=tmp_path / "empty")}
    full = {r.capability: r for r in conformance("mem0", [SUITE / "recall"], cassettes=recorded)}
    assert empty[core].verdict == "incomplete"  # the cassettes' gap, never "wrong" (the walk-through saw "wrong")
    assert "unrecorded model call" in (empty[core].detail or "")
    assert full[core].verdict != "incomplete"
    assert "unrecorded" not in (full[core].detail or "")
    assert main(["conformance", "--system", "mem0", str(SUITE / "recall"), "--cases", "1", "--cassettes",
                 str(tmp_path / "empty")], environ={}) == 2  # incomplete, as a run is: exit 2 with one line
    assert offline == []


@needs_mem0
def test_system_all_puts_mem0_beside_the_shipped_systems_in_one_report(tmp_path: Path, offline: list[Any]) -> None:
    """Issue 35's side by side: one run, one report; mem0's columns paired with the reference's and SQLite's."""
    portable = [p for p in SUITE.glob("recall/*.yaml")
                if not any(line.startswith(("design:", "systems:")) for line in p.read_text().splitlines())]
    code = main(["run", *map(str, portable), "--system", "all", "--no-gates", "--out", str(tmp_path / "o")],
                environ={})
    assert code == 0
    assert offline == []
    summary = (tmp_path / "o" / "summary.md").read_text()
    header = next(line for line in summary.splitlines() if line.startswith("| metric |"))
    assert "| heuristic |" in header
    assert "| heuristic@sqlite |" in header
    assert "| heuristic@mem0 |" in header
    assert "heuristic@mem0 − heuristic recall.f1" in summary  # paired where the probes match
    assert "heuristic@mem0 − heuristic@sqlite recall.f1" in summary
    meta = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert meta["meta"]["systems"] == ["reference", "sqlite", "mem0"]
    assert (tmp_path / "o" / "report.html").stat().st_size > 0
