from __future__ import annotations

import ast
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
    for name in memory_core.__all__:
        assert getattr(memory_core, name) is not None


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
