"""Re-fetch the vendored Chart.js from the npm registry and verify it (or, with --check, verify the committed copy).

    python scripts/vendor_chartjs.py            # npm pack chart.js@<version>, check the tarball's integrity, copy files
    python scripts/vendor_chartjs.py --check    # only verify harness/reporting/vendor/* against VENDOR.json

Uses the ordinary npm client (``npm pack``); the versions and hashes live in harness/reporting/vendor/VENDOR.json.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "harness" / "reporting" / "vendor"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(meta: dict[str, object]) -> list[str]:
    files = meta["files"]
    assert isinstance(files, dict)
    return [f"{name}: sha256 {sha256(VENDOR / name)} != {info['sha256']}" for name, info in files.items()
            if sha256(VENDOR / name) != info["sha256"]]


def refetch(meta: dict[str, object]) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["npm", "pack", f"{meta['package']}@{meta['version']}", "--silent"], cwd=tmp,
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        tarball = Path(tmp) / out
        algo, _, digest = str(meta["registry_tarball_sha512"]).partition("-")
        got = base64.b64encode(hashlib.new(algo, tarball.read_bytes()).digest()).decode()
        if got != digest:
            return [f"{tarball.name}: {algo} {got} != {digest}"]
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="data")
        files = meta["files"]
        assert isinstance(files, dict)
        for name, info in files.items():
            shutil.copyfile(Path(tmp) / info["from"], VENDOR / name)
    return check(meta)


def main(argv: list[str]) -> int:
    meta = json.loads((VENDOR / "VENDOR.json").read_text(encoding="utf-8"))
    problems = check(meta) if "--check" in argv else refetch(meta)
    for p in problems:
        print(p, file=sys.stderr)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
