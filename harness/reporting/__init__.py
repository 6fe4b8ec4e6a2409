"""Stage 4 — reporting: the run directory (write and read back), the HTML report, JUnit XML and Markdown.

Renders what evaluation computed; imports nothing from the CLI.
"""

from harness.reporting._html import flatten_spans, render_benchmark, render_report
from harness.reporting._rundir import atomic_write, jsonl, read_jsonl, read_run, write_run
from harness.reporting._text import HEADLINE, junit_xml, summary_markdown

__all__ = [
    "HEADLINE",
    "atomic_write",
    "flatten_spans",
    "jsonl",
    "junit_xml",
    "read_jsonl",
    "read_run",
    "render_benchmark",
    "render_report",
    "summary_markdown",
    "write_run",
]
