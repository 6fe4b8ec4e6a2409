"""scripts/local-model.sh without a network or a server: usage, unconfigured models, sha256 checks, the ready wait."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import REPO, closed_port

SCRIPT = REPO / "scripts" / "local-model.sh"
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"


def sh(*args: str, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMHARNESS_")}
    return subprocess.run(["bash", str(SCRIPT), *args], env={**base, "MEMHARNESS_LOCAL_MODEL_DIR": str(tmp), **env},
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("model", ["qwen-0.5b", "qwen-1.5b"])
@pytest.mark.parametrize("command", ["fetch", "verify", "serve"])
def test_unconfigured_qwen_refuses_with_exit_2_naming_the_variables(tmp_path: Path, model: str, command: str) -> None:
    p = sh(command, model, tmp=tmp_path)
    var = "MEMHARNESS_QWEN_" + model.split("-")[1].upper().replace(".", "_")
    assert p.returncode == 2
    assert f"{model} is not configured" in p.stderr
    assert f"{var}_PACKAGES" in p.stderr
    assert f"{var}_SHA256" in p.stderr
    assert not (tmp_path / "models").exists(), "nothing downloaded"


def test_configured_qwen_with_a_malformed_sha256_is_a_usage_error(tmp_path: Path) -> None:
    p = sh("fetch", "qwen-1.5b", tmp=tmp_path, MEMHARNESS_QWEN_1_5B_PACKAGES="x==1", MEMHARNESS_QWEN_1_5B_SHA256="abc")
    assert p.returncode == 2
    assert "64 lowercase hex" in p.stderr


@pytest.mark.parametrize("args", [[], ["bogus"], ["fetch"], ["fetch", "nope"], ["serve", "--port", "x"],
                                  ["serve", "--host", "0.0.0.0"]])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str]) -> None:
    p = sh(*args, tmp=tmp_path)
    assert p.returncode == 2
    assert p.stderr.startswith("local-model: "), p.stderr
    assert p.stderr.count("\n") == 1, p.stderr


def test_verify_checks_the_sha256(tmp_path: Path) -> None:
    gguf = tmp_path / "models" / SMOLLM2
    assert sh("path", "smollm2", tmp=tmp_path).stdout.strip() == str(gguf)
    missing = sh("verify", "smollm2", tmp=tmp_path)
    assert missing.returncode == 1
    assert "missing" in missing.stderr
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"not the model")
    wrong = sh("verify", "smollm2", tmp=tmp_path)
    assert wrong.returncode == 1
    assert hashlib.sha256(b"not the model").hexdigest() in wrong.stderr
    # a configured model verifies against its configured hash
    qwen = tmp_path / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    qwen.write_bytes(b"chunk1chunk2")
    env = {"MEMHARNESS_QWEN_0_5B_PACKAGES": "a==1 b==1",
           "MEMHARNESS_QWEN_0_5B_SHA256": hashlib.sha256(b"chunk1chunk2").hexdigest()}
    ok = sh("verify", "qwen-0.5b", tmp=tmp_path, **env)
    assert ok.returncode == 0
    assert "sha256 ok" in ok.stdout
    listed = sh("models", tmp=tmp_path, **env).stdout
    assert "qwen-0.5b: " in listed
    assert "sha256 ok" in listed.split("qwen-0.5b: ")[1].splitlines()[0]
    assert "qwen-1.5b: not configured" in listed


def test_serve_without_the_runtime_says_install(tmp_path: Path) -> None:
    p = sh("serve", "smollm2", "--port", "1", tmp=tmp_path)
    assert p.returncode == 1
    assert "install" in p.stderr


def test_wait_is_bounded_and_notices_a_dead_server(tmp_path: Path) -> None:
    port = str(closed_port())
    timed_out = sh("wait", "--port", port, "--timeout", "1", tmp=tmp_path)
    assert timed_out.returncode == 1
    assert "did not answer within 1 s" in timed_out.stderr
    gone = sh("wait", "--port", port, "--timeout", "60", "--pid", "999999999", tmp=tmp_path)
    assert gone.returncode == 1
    assert "exited" in gone.stderr
