"""``memharness fuzz --system module:factory`` contains a hostile plug-in (issue 33): each property runs in a child
process, so a call that ends its process, is killed, raises or defeats its timeout fails that property (exit 1)
with the system's failure naming the call; the other properties still run; never exit 0 with no output, never a
hang, never a traceback. Before, ``os._exit(0)`` in ``recall()`` made ``memharness fuzz`` a silent green build."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import SYSTEM_FAILED
from tests.hostile_cli import test_hostile_systems as hostile  # its hostile factory

VALUES = {"exit_now": 0, "signal": signal.SIGKILL, "raise": RuntimeError("boom"), "hang_hard": None, "print": "noise"}


@pytest.mark.parametrize("how", sorted(VALUES))
@pytest.mark.parametrize("call", ["recall", "extract"])  # every pair (the fuzz runs Hypothesis itself); both
# properties below call both
def test_fuzz_contains_a_hostile_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capfd: pytest.CaptureFixture[str], call: str, how: str) -> None:
    from harness.replay import _isolated

    monkeypatch.setenv("MEMHARNESS_OP_TIMEOUT", "1")
    monkeypatch.setattr(_isolated, "KILL_GRACE_S", 1.0)
    hostile.PLAN.clear()
    hostile.PLAN.update(call=call, how=how, value=VALUES[how])
    try:
        capfd.readouterr()
        code = main(["fuzz", "--system", "tests.hostile_cli.test_hostile_systems:factory", "--max-examples", "3",
                     "--property", "recall-bounded", "--property", "planted-fact-recall",
                     "--regressions", str(tmp_path / "reg")], environ={})
        stdout, stderr = capfd.readouterr()
    finally:
        hostile.PLAN.clear()
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stdout.splitlines() if line.startswith(("held", "FAILED"))]
    assert len(lines) == 2, stdout  # every property reported, whatever the one before did
    if how == "print":
        assert code == 0, stdout + stderr
        assert "noise" not in stdout
        return
    assert code == 1, stdout + stderr
    failed = [line for line in lines if line.startswith("FAILED")]
    assert failed, stdout
    assert all(SYSTEM_FAILED in line and f"{call}()" in line for line in failed), stdout
