"""Stage 4 — reporting: the run directory (write and read back), the HTML report, JUnit XML and Markdown.

Renders what evaluation computed; imports nothing from the CLI.

Importing the package imports nothing else: each name loads its module on first use (PEP 562), so a command that
only writes a file (``schema -o``, ``docs -o``) does not pay for pandas, the evaluation stage and ``memory_core``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.reporting._history import (
        HistoryRun,
        append_run,
        history_path,
        preview_history,
        read_history,
        record_history,
    )
    from harness.reporting._html import flatten_spans, prepare_report, render_benchmark, render_report, report_chunks
    from harness.reporting._rundir import jsonl, read_jsonl, read_run, result_line, write_dir, write_run
    from harness.reporting._targets import atomic_write, wrote
    from harness.reporting._terminal import closing_table, github_outputs
    from harness.reporting._text import HEADLINE, junit_xml, summary_markdown
    from harness.reporting._traces import TraceSpool
    from harness.reporting._view import Annotation, failure_annotations, verdict

_HOME: dict[str, str] = {
    "Annotation": "_view",
    "HEADLINE": "_text",
    "HistoryRun": "_history",
    "TraceSpool": "_traces",
    "append_run": "_history",
    "atomic_write": "_targets",
    "closing_table": "_terminal",
    "failure_annotations": "_view",
    "flatten_spans": "_html",
    "github_outputs": "_terminal",
    "history_path": "_history",
    "jsonl": "_rundir",
    "junit_xml": "_text",
    "prepare_report": "_html",
    "preview_history": "_history",
    "read_history": "_history",
    "read_jsonl": "_rundir",
    "read_run": "_rundir",
    "record_history": "_history",
    "result_line": "_rundir",
    "render_benchmark": "_html",
    "render_report": "_html",
    "report_chunks": "_html",
    "summary_markdown": "_text",
    "verdict": "_view",
    "write_dir": "_rundir",
    "write_run": "_rundir",
    "wrote": "_targets",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "HEADLINE",
    "Annotation",
    "HistoryRun",
    "TraceSpool",
    "append_run",
    "atomic_write",
    "closing_table",
    "failure_annotations",
    "flatten_spans",
    "github_outputs",
    "history_path",
    "jsonl",
    "junit_xml",
    "prepare_report",
    "preview_history",
    "read_history",
    "read_jsonl",
    "read_run",
    "record_history",
    "render_benchmark",
    "render_report",
    "report_chunks",
    "result_line",
    "summary_markdown",
    "verdict",
    "write_dir",
    "write_run",
    "wrote",
]
