"""A run's traces kept on disk as they arrive, not in memory: the spans are the biggest thing a run produces (about
55 MB of OTLP-JSON per 1,000 scenarios × 2 systems), so a run that held them all grew with its suite (issue 34).

:class:`TraceSpool` appends each OTLP-JSON request (one trace) to a temporary ``traces.jsonl`` the moment a scenario
finishes and keeps only the little the report needs of it: where each trace's lines are, and its recall candidate
counts. A waterfall is drawn when the report reaches its scenario, from the lines read back."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

import orjson
from markupsafe import Markup

from harness.reporting import _charts as charts
from harness.telemetry import EncodedTrace, otlp_spans


class TraceSpool:
    """``traces.jsonl`` written as the run goes (a temporary file, removed by :meth:`close`), with each trace's
    line offsets and recall candidate counts in memory. Iterating yields the requests back, in arrival order."""

    def __init__(self, lines: Iterable[Mapping[str, Any]] = ()) -> None:
        fd, self.path = tempfile.mkstemp(prefix="memharness-traces-", suffix=".jsonl")
        self._file: IO[bytes] = os.fdopen(fd, "w+b")
        os.unlink(self.path)  # nothing left behind whatever happens to the run: the open file is the spool
        self._closer = weakref.finalize(self, self._file.close)  # a run that fails early closes it when dropped
        self._where: dict[str, tuple[tuple[int, int], ...]] = {}
        self.candidates: dict[tuple[str, int], int] = {}
        """``memory.recall.candidates`` per (trace id, step)."""
        self.count = 0
        self.add(lines)

    def add(self, lines: Iterable[Mapping[str, Any] | EncodedTrace]) -> None:
        """Append OTLP-JSON requests (as ``traces.jsonl`` writes them), or traces a worker encoded already, and note
        what the report needs of each."""
        self._file.seek(0, os.SEEK_END)
        for request in lines:
            trace = request if isinstance(request, EncodedTrace) else EncodedTrace.of(request)
            at = self._file.tell()
            self._file.write(trace.line)
            ids = {t: t for t in trace.trace_ids}  # every span's own copy of its trace id: the one kept (issue 34)
            for trace_id in ids:
                self._where[trace_id] = (*self._where.get(trace_id, ()), (at, len(trace.line)))  # mostly one line: no list
            self.candidates.update({(ids.get(t, t), step): n for (t, step), n in trace.candidates.items()})
            self.count += 1

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._file.flush()
        self._file.seek(0)
        for line in self._file:
            yield orjson.loads(line)

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        """Every span of one trace, read back from the spool."""
        out: list[dict[str, Any]] = []
        self._file.flush()
        for at, size in self._where.get(trace_id, ()):
            self._file.seek(at)
            request = orjson.loads(self._file.read(size))
            out += [s for s in otlp_spans([request]) if str(s.get("traceId", "")) == trace_id]
        return out

    def copy_to(self, handle: IO[bytes]) -> None:
        """The whole ``traces.jsonl`` into an open binary file."""
        self._file.flush()
        self._file.seek(0)
        shutil.copyfileobj(self._file, handle, 1 << 20)

    def close(self) -> None:
        self._closer()


def spooled(spans: Sequence[Mapping[str, Any]] | TraceSpool) -> TraceSpool:
    """``spans`` as a spool (requests read back from a run directory, or none, become one)."""
    return spans if isinstance(spans, TraceSpool) else TraceSpool(spans)


class Waterfalls(Mapping[str, Markup]):
    """The report's ``waterfalls[trace_id]``: each drawn when the template asks for it, never all held at once."""

    def __init__(self, spool: TraceSpool) -> None:
        self._spool = spool

    def __getitem__(self, trace_id: str) -> Markup:
        return Markup(charts.waterfall(self._spool.spans(trace_id)))

    def __iter__(self) -> Iterator[str]:
        return iter(self._spool._where)

    def __len__(self) -> int:
        return len(self._spool._where)
