"""Write a run directory (DESIGN §4): summary.json, probes.jsonl, results.jsonl, traces.jsonl, junit.xml,
summary.md and report.html; and read one back into the same typed records (``report``, ``compare``, merges)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.evaluation import RunSummary
from harness.replay import Probe, ScenarioResult
from harness.reporting._text import junit_xml, summary_markdown
from harness.scenario._limits import MAX_RUN_FILE_BYTES
from harness.scenario._yaml import decode_utf8, read_regular
from harness.telemetry import finite_json, otlp_jsonl


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file, fsync and ``os.replace``: a reader never sees half a file, a crash never leaves one.
    The file gets the mode a plain ``open()`` would give (0666 less the umask), not mkstemp's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(finite_json(dict(r)), ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def write_run(out: Path, *, summary: RunSummary, results: Sequence[ScenarioResult],
              spans: Sequence[Mapping[str, Any]], html: str) -> None:
    """Write every output file of a run directory."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "summary.json", json.dumps(finite_json(summary.to_dict()), indent=2, ensure_ascii=False) + "\n")
    atomic_write(out / "probes.jsonl", jsonl(p.to_row() for r in results for p in r.probes))
    atomic_write(out / "results.jsonl", jsonl(r.to_row() for r in results))
    atomic_write(out / "traces.jsonl", otlp_jsonl(spans))
    atomic_write(out / "junit.xml", junit_xml(results, summary.gates))
    atomic_write(out / "summary.md", summary_markdown(summary, results))
    atomic_write(out / "report.html", html)


def _read_text(path: Path) -> str:
    """A run-directory file as text: a regular file within ``MAX_RUN_FILE_BYTES`` (a FIFO or device never blocks)."""
    if not path.exists() and not path.is_symlink():
        raise HarnessError(f"{path}: missing (is this a memharness run directory?)")
    return decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    # "\n" only: str.splitlines() also breaks at U+2028, U+0085, form feed and more, which the writers leave
    # unescaped inside strings (ensure_ascii off), so a query holding one made the run unreadable
    for n, line in enumerate(_read_text(path).split("\n"), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
            except RecursionError:
                raise HarnessError(f"{path}:{n}: invalid JSON (nested too deeply)") from None
            if not isinstance(row, dict):
                raise HarnessError(f"{path}:{n}: expected a JSON object per line, got {type(row).__name__}")
            rows.append(row)
    return rows


def read_run(run_dir: Path) -> tuple[RunSummary, list[ScenarioResult], list[dict[str, Any]]]:
    """(summary, results with their probes, spans) of a run directory."""
    summary_path = run_dir / "summary.json"
    try:
        data = json.loads(_read_text(summary_path))
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{summary_path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise HarnessError(f"{summary_path}: invalid JSON (nested too deeply)") from None
    try:
        summary = RunSummary.from_dict(data)
        by_key: dict[tuple[str, str], list[Probe]] = {}
        for row in read_jsonl(run_dir / "probes.jsonl"):
            probe = Probe.from_row(row)
            by_key.setdefault((probe.scenario, probe.strategy), []).append(probe)
        results = [ScenarioResult.from_row(row, tuple(by_key.get((row["scenario"], row["strategy"]), [])))
                   for row in read_jsonl(run_dir / "results.jsonl")]
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise HarnessError(f"{run_dir}: not a memharness run directory of this version ({type(exc).__name__}: {exc})") \
            from None
    spans = read_jsonl(run_dir / "traces.jsonl") if (run_dir / "traces.jsonl").exists() else []
    return summary, results, spans
