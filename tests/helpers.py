"""Small builders shared by tests."""

from __future__ import annotations

import datetime
import gc
import json
import math
import os
import time
from collections.abc import Callable

from memory_core.files.formats import to_ms
from memory_core.files.store import Store
from memory_core.files.topic import MemoryType, render_topic


def put_doc(
    store: Store,
    path: str,
    kind: MemoryType,
    body: str,
    *,
    name: str | None = None,
    description: str = "",
    mtime_ms: float | None = None,
) -> None:
    """Write a topic file, optionally with a given mtime."""
    store.write(path, render_topic(name=name or path, description=description, kind=kind, body=body))
    if mtime_ms is not None:
        store.set_mtime(path, mtime_ms)


def raw_doc(store: Store, path: str, text: str, *, mtime_ms: float | None = None) -> None:
    """Write raw file text."""
    store.write(path, text)
    if mtime_ms is not None:
        store.set_mtime(path, mtime_ms)


def cpu_seconds(fn: Callable[[], object]) -> float:
    """CPU seconds ``fn`` takes with the cyclic collector paused: a ratio of two timings measures the algorithm, not
    a gen-2 collection that happens to land in one of them (after litellm or a whole run is loaded in the same
    process, one such pass costs more than the small input's whole timing). CPU, not wall, time: the machines are
    shared."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        if enabled:
            gc.enable()


def examples(n: int) -> int:
    """A property's Hypothesis example count: ``n`` under the CI profile (``HYPOTHESIS_PROFILE=ci``, which .ci/run
    sets), a fifth of it (at least 10) under the quick local ``dev`` profile, as the profiles in conftest do."""
    return max(10, n // 5) if os.environ.get("HYPOTHESIS_PROFILE", "dev") == "dev" else n


__all__ = ["cpu_seconds", "examples", "put_doc", "raw_doc", "to_ms"]


def toml_value(value: object) -> str:
    """``value`` (bool, int, float, text, date, list, dict) as a TOML value, for tests that generate TOML files:
    NaN and the infinities as TOML's own words, text as a JSON string (a TOML basic string), tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else {math.inf: "inf", -math.inf: "-inf"}.get(value, repr(value))
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value) if isinstance(value, str) else str(value)


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The checkout these tests belong to: the fresh interpreters below import its harness."""


def fresh_process_run(argv: list[str], environ: dict[str, str] | None = None, timeout: float = 600.0) -> int:
    """``memharness ARGV`` in a new interpreter with only ``environ`` (plus what it needs to start), for runs that
    fork a process pool: forking from a pytest-xdist worker, whose execnet thread may hold a lock at that moment,
    is the pattern that once hung a pool child in a futex wait. Its output goes to this test's stdout/stderr."""
    import subprocess
    import sys

    root = _ROOT
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": root, **(environ or {})}
    done = subprocess.run([sys.executable, "-m", "harness", *argv], env=env, cwd=root, timeout=timeout, check=False)
    return done.returncode


def in_fresh_interpreter(module: str, check: str, *args: str, timeout: float = 300.0) -> None:
    """``module.check(*args)`` in a new interpreter (for checks that fork a process pool, as ``fresh_process_run``
    says why); its failure (an assertion, an import error) fails the calling test with its output."""
    import subprocess
    import sys

    root = _ROOT
    code = f"import sys; from {module} import {check}; {check}(*sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=root, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": root}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
