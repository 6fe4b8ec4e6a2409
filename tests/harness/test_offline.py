"""No network attempt in any offline mode (issue 32): a run with the network namespace cut (`unshare -n`) and
LITELLM_LOCAL_MODEL_COST_MAP unset — parallel (--jobs 2) and through the litellm adapter — finishes with the same
verdict and never mentions fetching anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.conftest import SCENARIOS

pytestmark = pytest.mark.slow  # a subprocess that imports litellm


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="unshare -n is not available or not permitted here")
def test_a_parallel_model_run_needs_no_network(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_LOCAL_MODEL_COST_MAP",) and
           not k.startswith(("OTEL_", "MEMHARNESS_"))}
    paths = [str(SCENARIOS / "recall" / "type-user.yaml"), str(SCENARIOS / "language" / "model-transport-faults.yaml")]
    cmd = ["unshare", "-n", sys.executable, "-m", "harness", "run", *paths, "--strategy", "heuristic,model",
           "--jobs", "2", "--out", str(tmp_path / "run"), "--no-gates"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "PASSED" in p.stdout
    for word in ("cost map", "Failed to fetch", "urlopen", "ConnectionError", "Traceback"):
        assert word not in p.stderr
