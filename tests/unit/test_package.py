from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import memory_core

CORE = Path(memory_core.__file__).parent


def test_import_pulls_no_otel_pandas_or_litellm() -> None:
    code = "import sys, memory_core; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
           "{'opentelemetry', 'pandas', 'litellm'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_api_is_curated_and_resolvable() -> None:
    assert sorted(memory_core.__all__) == memory_core.__all__
    # exactly the public names the package defines (no stray export, no unexported public name) ...
    public = {n for n, v in vars(memory_core).items() if not n.startswith("_") and not inspect.ismodule(v)}
    assert set(memory_core.__all__) == public
    # ... and each is the object its defining module has (a re-export, not a stale copy)
    for name in memory_core.__all__:
        obj = getattr(memory_core, name)
        home = getattr(obj, "__module__", None)
        if home and home.startswith("memory_core."):
            assert getattr(sys.modules[home], name) is obj, name


def test_only_the_clock_reads_the_wall_clock() -> None:
    offenders = []
    for path in CORE.glob("*.py"):
        if path.name == "clock.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"now", "time", "utcnow", "today"}:
                base = node.value
                if isinstance(base, ast.Name) and base.id in {"datetime", "time", "date"}:
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_no_module_over_400_lines() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in CORE.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes
