from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memory_core
import memory_core.files

CORE = Path(memory_core.__file__).parent


def test_import_pulls_no_otel_pandas_or_litellm() -> None:
    code = "import sys, memory_core; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
           "{'opentelemetry', 'pandas', 'litellm'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", [memory_core, memory_core.files], ids=lambda p: p.__name__)
def test_public_api_is_curated_and_resolvable(package: Any) -> None:
    assert sorted(package.__all__) == package.__all__
    # exactly the public names the package defines (no stray export, no unexported public name) ...
    public = {n for n, v in vars(package).items() if not n.startswith("_") and not inspect.ismodule(v)}
    assert set(package.__all__) == public
    # ... and each is the object its defining module has (a re-export, not a stale copy)
    for name in package.__all__:
        obj = getattr(package, name)
        home = getattr(obj, "__module__", None)
        if home and home.startswith("memory_core."):
            assert getattr(sys.modules[home], name) is obj, name


def test_only_the_clock_reads_the_wall_clock() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):  # both systems and the seams
        if path == CORE / "clock.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"now", "time", "utcnow", "today"}:
                base = node.value
                if isinstance(base, ast.Name) and base.id in {"datetime", "time", "date"}:
                    offenders.append(f"{path.relative_to(CORE)}:{node.lineno}")
    assert offenders == []


def test_no_module_over_400_lines() -> None:
    sizes = {str(p.relative_to(CORE)): len(p.read_text().splitlines()) for p in CORE.rglob("*.py")}
    assert max(sizes.values()) <= 400, sizes
