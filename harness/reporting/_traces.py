"""A run's traces kept on disk as they arrive, not in memory: the spans are the biggest thing a run produces (about
55 MB of OTLP-JSON per 1,000 scenarios × 2 systems), so a run that held them all grew with its suite (issue 34).

:class:`TraceSpool` appends each OTLP-JSON request (one trace) to a temporary ``traces.jsonl`` the moment a scenario
finishes and keeps only the little the report needs of it: where each trace's lines are, and its recall candidate
counts. A waterfall is drawn when the report reaches its scenario, from the lines read back."""

from __future__ import annotations

import os
import shutil
import weakref
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

import orjson
from markupsafe import Markup

from harness.replay import SpoolFile, spool_close
from harness.reporting import _charts as charts
from harness.telemetry import EncodedTrace, otlp_spans


class TraceSpool:
    """``traces.jsonl`` written as the run goes (a temporary file, removed by :meth:`close`), with each trace's
    line offsets and recall candidate counts in memory. Iterating yields the requests back in place order (arrival
    order unless :meth:`add` was given places)."""

    def __init__(self, lines: Iterable[Mapping[str, Any]] = ()) -> None:
        self._file = SpoolFile("memharness-traces-", ".jsonl")
        self.path = self._file.path
        self._closer = weakref.finalize(self, spool_close, self._file)  # a run that fails early closes it when dropped
        self._where: dict[str, int | tuple[int, ...]] = {}
        """Each trace's line (its number; a tuple of them for a trace spread over lines): a few bytes a trace."""
        self.candidates: dict[tuple[str, int], int] = {}
        """``memory.recall.candidates`` per (trace id, step)."""
        self._at: array[int] = array("q")
        self._place: array[int] = array("q")
        self._in_order = True
        self._end = 0
        self._next = 0
        self.add(lines)

    def add(self, lines: Iterable[Mapping[str, Any] | EncodedTrace], place: int | None = None) -> None:
        """Append OTLP-JSON requests (as ``traces.jsonl`` writes them), or traces a worker encoded already, and note
        what the report needs of each. ``place``: their scenario's position in the run, when traces arrive out of
        order (the side process): the file is written in place order (default: after everything so far)."""
        self._file.seek(self._end)
        for request in lines:
            trace = request if isinstance(request, EncodedTrace) else EncodedTrace.of(request)
            at = self._end
            self._file.write(trace.line)
            self._end += len(trace.line)
            ids = {t: t for t in trace.trace_ids}  # every span's own copy of its trace id: the one kept (issue 34)
            for trace_id in ids:
                seen = self._where.get(trace_id)
                line = len(self._at)
                self._where[trace_id] = line if seen is None else (*((seen,) if isinstance(seen, int) else seen), line)
            self.candidates.update({(ids.get(t, t), step): n for (t, step), n in trace.candidates.items()})
            where = self._next if place is None else place
            self._next = max(self._next, where + 1)
            self._in_order = self._in_order and (not self._place or where >= self._place[-1])
            self._at.append(at)
            self._place.append(where)
        self._file.flush()  # on disk at once: the readers read by position only (a forked report writer too)

    @property
    def count(self) -> int:
        return len(self._at)

    def __len__(self) -> int:
        return self.count

    def _lines(self) -> Iterator[bytes]:
        """Each request's line, in place order."""
        order = range(len(self._at)) if self._in_order else sorted(range(len(self._at)), key=self._place.__getitem__)
        for i in order:  # stable: one place's as they came
            yield self._read(i)

    def _read(self, i: int) -> bytes:
        """Line ``i``, read where it lies: no seek, so no offset the open file shares with a forked process moves."""
        with self._file._named():
            return os.pread(self._file.fileno(), self._size(i), self._at[i])

    def _size(self, i: int) -> int:
        """Line ``i``'s length: the lines lie back to back, each ends where the next begins."""
        return (self._at[i + 1] if i + 1 < len(self._at) else self._end) - self._at[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self._lines():
            yield orjson.loads(line)

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        """Every span of one trace, read back from the spool."""
        out: list[dict[str, Any]] = []
        lines = self._where.get(trace_id, ())
        for i in (lines,) if isinstance(lines, int) else lines:
            request = orjson.loads(self._read(i))
            out += [s for s in otlp_spans([request]) if str(s.get("traceId", "")) == trace_id]
        return out

    def copy_to(self, handle: IO[bytes]) -> None:
        """The whole ``traces.jsonl`` into an open binary file."""
        if self._in_order:
            self._file.flush()
            self._file.seek(0)
            shutil.copyfileobj(self._file, handle, 1 << 20)
            return
        for line in self._lines():
            handle.write(line)

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
