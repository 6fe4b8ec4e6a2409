"""Stage 4 — reporting: the run directory (write and read back), the HTML report, JUnit XML and Markdown.

Renders what evaluation computed; imports nothing from the CLI.
"""

from harness.reporting._history import (
    HistoryRun,
    append_run,
    history_path,
    preview_history,
    read_history,
    record_history,
)
from harness.reporting._html import flatten_spans, prepare_report, render_benchmark, render_report, report_chunks
from harness.reporting._rundir import atomic_write, jsonl, read_jsonl, read_run, write_dir, write_run
from harness.reporting._targets import wrote
from harness.reporting._terminal import closing_table, github_outputs
from harness.reporting._text import HEADLINE, junit_xml, summary_markdown
from harness.reporting._traces import TraceSpool
from harness.reporting._view import Annotation, failure_annotations, verdict

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
    "summary_markdown",
    "verdict",
    "write_dir",
    "write_run",
    "wrote",
]
