"""``memharness record`` refuses clearly before replaying anything (no server, no model, no such set); the live
recording itself is tested against a real local model in tests/live/test_live_model.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
SCENARIO = str(REPO / "scenarios" / "recall" / "type-user.yaml")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def test_no_server_is_one_line_naming_what_to_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    (tmp_path / "cassette-meta.json").write_text(json.dumps(
        {"model": "openai/qwen2.5-coder-0.5b-instruct", "api_base": f"http://127.0.0.1:{port}/v1", "timeout_scale": 24}))
    assert main(["record", SCENARIO, "--cassettes", str(tmp_path), "--out", str(tmp_path / "run")], environ={}) == 2
    err = _one_line(capsys)
    assert f"no model answers at http://127.0.0.1:{port}/v1" in err
    assert f"scripts/local-model.sh serve qwen-0.5b --port {port}" in err
    assert not (tmp_path / "cassette.jsonl").exists()  # nothing replayed, nothing written
    assert not (tmp_path / "run").exists()


def test_the_shipped_sets_name_their_server(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("qwen-1.5b", "qwen-0.5b", "smollm2"):
        code = main(["record", SCENARIO, "--set", name, "--api-base", f"http://127.0.0.1:{_closed_port()}/v1",
                     "--out", str(tmp_path / name)], environ={})
        assert code == 2
        assert "no model answers at" in _one_line(capsys)


def test_a_set_without_a_model_or_an_unknown_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", SCENARIO, "--cassettes", str(tmp_path)], environ={}) == 2
    assert "pass --model MODEL" in _one_line(capsys)
    assert main(["record", SCENARIO, "--set", "qwen-9b"], environ={}) == 2
    err = _one_line(capsys)
    assert "no cassette set 'qwen-9b'" in err
    assert "qwen-1.5b" in err
