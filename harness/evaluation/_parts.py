"""Probe records as pandas frames: the whole frame a comparison joins, and one strategy's probes as a frame per
probe kind, which the run's summary reads (issue 34: the evaluation's peak memory was its frames)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.replay import Probe


def probe_frame(probes: Iterable[Probe], *, texts: bool = True) -> pd.DataFrame:
    """One row per graded probe (skipped ones feed no metric); ``metrics`` and ``tokens`` flattened to
    ``m.<name>`` and ``tok.<name>`` columns. ``texts=False`` leaves out ``query`` and ``selected`` (a list per row),
    which only the changed-probe listing reads.

    Built a column at a time, each number column a typed array (8 bytes a value): a dict per row
    (``DataFrame.from_records``) and then lists of boxed numbers were the evaluation's largest transient objects,
    and a run's peak memory grew with its suite because of them (issue 34). The frame holds what ``from_records``
    would, a column in order of first appearance, except that numbers (and bools) are float64 with NaN for no
    value (``step`` stays int64); a column with any other value holds objects, its numbers still as floats."""
    columns = _Columns({})
    for p in probes:
        if p.graded:
            columns.add(_frame_row(p, texts=texts))
    return columns.frame()


class _Columns:
    """A frame's columns as they are built, a row at a time (``order``: where new column names are noted)."""

    def __init__(self, order: dict[str, None]) -> None:
        self.columns: dict[str, list[Any] | array[Any]] = {}
        self.shared: dict[str, str] = {}  # one copy of each name: probes read back from disk each bring their own
        self.order = order
        self.n = 0

    def add(self, row: Mapping[str, Any]) -> None:
        columns, n = self.columns, self.n
        for key, value in row.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = _new_column(key, n)
                self.order.setdefault(key)
            if isinstance(value, str) and key != "query":
                value = self.shared.setdefault(value, value)
            if isinstance(column, array) and not _number(value):
                column = columns[key] = [math.nan if isinstance(v, float) and math.isnan(v) else v for v in column]
            column.append(value if key in _OBJECT_COLUMNS or key == "step" or not _number(value) else _numeric(value))
        self.n = n = n + 1
        for column in columns.values():
            if len(column) < n:
                column.append(math.nan)

    def frame(self, names: Sequence[str] = (), constants: Mapping[str, str] | None = None) -> pd.DataFrame:
        """The frame; ``names``: its columns in this order, a column it never had all NaN. No copy is made: each
        number column is its typed array's buffer (``copy=False``; the default consolidates every float column into
        one block, a second copy of them all while it is built). ``constants``: columns that hold one value on every
        row (a part's kind and strategy), a byte a row as a one-category ``Categorical``, placed after ``step``."""
        if not self.n:
            return pd.DataFrame(columns=["scenario", "step", "kind", "strategy"])
        for name in names:
            if name not in self.columns:
                self.columns[name] = _new_column(name, self.n)
        data: dict[str, Any] = {k: np.frombuffer(v, dtype=np.int64 if v.typecode == "q" else np.float64)
                                if isinstance(v, array) else v for k, v in self.columns.items()}
        if constants:
            fixed = {k: pd.Categorical.from_codes(np.zeros(self.n, dtype=np.int8), categories=[v])
                     for k, v in constants.items()}
            data = {**{k: data.pop(k) for k in ("scenario", "step") if k in data}, **fixed, **data}
        return pd.DataFrame(data, columns=list(names) or None, copy=False)


_OBJECT_COLUMNS = frozenset({"scenario", "kind", "strategy", "query", "selected", "fallback_reason"})


def _new_column(key: str, n: int) -> list[Any] | array[Any]:
    """A column that first appears at row ``n``: NaN in the rows before it."""
    if key == "step":
        return array("q")  # every row has its step: never NaN
    return [math.nan] * n if key in _OBJECT_COLUMNS else array("d", [math.nan]) * n


def _number(value: Any) -> bool:
    return value is None or isinstance(value, int | float)  # bool is an int


def _numeric(value: Any) -> float:
    return math.nan if value is None else float(value)


def _frame_row(p: Probe, *, texts: bool = True, constants: bool = True) -> dict[str, Any]:
    """The columns the summary and the comparisons read, and no others (the frame is the evaluation's largest
    object: about half the memory of flattening the whole ``probes.jsonl`` row). ``constants=False`` leaves out
    ``kind`` and ``strategy`` (a part of one kind and strategy adds them once, :class:`KindParts`)."""
    row: dict[str, Any] = {"scenario": p.scenario, "step": p.step}
    if constants:
        row["kind"], row["strategy"] = p.kind, p.strategy
    if texts:
        row["query"], row["selected"] = p.query, list(p.selected)
    row["duration_ms"], row["fallback_reason"] = round(p.duration_ms, 3), p.fallback_reason
    if p.final:
        row["final"] = True
    _flatten(row, "m.", p.metrics)
    _flatten(row, "tok.", p.tokens.to_dict())
    return row


def _flatten(row: dict[str, Any], prefix: str, values: Mapping[str, Any]) -> None:
    """Nested mappings as dotted columns (``m.index.lines``), as ``pandas.json_normalize`` names them."""
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            _flatten(row, f"{prefix}{key}.", value)
        else:
            row[prefix + key] = value


class KindParts:
    """One strategy's graded probes as one frame per probe kind, each with only the columns its rows have.

    The summary's frame held every column on every row (a dream's metrics on each recall row, as NaN) and each
    metric filtered it by kind, a copy of the whole frame each time: together most of a run's peak memory at
    thousands of scenarios (issue 34). Each part's rows keep their order; ``rows`` numbers them in the whole
    frame's order, so :meth:`column` and :meth:`final` give back exactly what the whole frame would."""

    def __init__(self, frames: Mapping[str, pd.DataFrame], rows: Mapping[str, np.ndarray], n: int) -> None:
        self.frames, self.rows, self.n = dict(frames), dict(rows), n

    @property
    def empty(self) -> bool:
        return self.n == 0

    def kind(self, kind: str) -> pd.DataFrame:
        """The rows of probes of ``kind`` (an empty frame when there is none)."""
        frame = self.frames.get(kind)
        return frame if frame is not None else pd.DataFrame(columns=["scenario", "step", "kind", "strategy"])

    def column(self, name: str) -> pd.Series:
        """The whole frame's column ``name``, every row in order (NaN on the rows of kinds without it); an empty
        float Series when no row has it."""
        having = [(self.rows[k], f[name]) for k, f in self.frames.items() if name in f.columns]
        if not having:
            return pd.Series(dtype=float)
        numeric = all(s.dtype == np.float64 for _, s in having)
        out = np.full(self.n, np.nan, dtype=np.float64 if numeric else object)
        for rows, series in having:
            out[rows] = series.to_numpy()
        return pd.Series(out)

    def final(self) -> pd.DataFrame:
        """The rows marked ``final`` (each scenario's end check), in the whole frame's order."""
        pieces, rows = [], []
        for kind, frame in self.frames.items():
            if "final" in frame.columns:
                mask = frame["final"].fillna(0.0).astype(bool).to_numpy()
                if mask.any():
                    pieces.append(frame[mask])
                    rows.append(self.rows[kind][mask])
        if not pieces:
            return pd.DataFrame(columns=["scenario", "step", "kind", "strategy"])
        if len(pieces) == 1:
            return pieces[0]
        order = np.argsort(np.concatenate(rows), kind="stable")
        return pd.concat(pieces, ignore_index=True).iloc[order].reset_index(drop=True)


def kind_parts(probes: Iterable[Probe], strategies: Sequence[str]) -> dict[str, KindParts]:
    """Each strategy's graded probes as :class:`KindParts`, built in one pass; a strategy without a probe gets
    empty parts. No texts (``query``, ``selected``): the summary reads none."""
    built: dict[tuple[str, str], tuple[_Columns, array[int]]] = {}
    counts: dict[str, int] = {}
    for p in probes:
        if p.graded:
            columns, rows = built.get((p.strategy, p.kind)) or built.setdefault(
                (p.strategy, p.kind), (_Columns({}), array("q")))
            columns.add(_frame_row(p, texts=False, constants=False))
            n = counts.get(p.strategy, 0)
            rows.append(n)
            counts[p.strategy] = n + 1
    out = {}
    for strategy in strategies:
        kinds = [k for s, k in built if s == strategy]
        frames = {k: built[strategy, k][0].frame(constants={"kind": k, "strategy": strategy}) for k in kinds}
        order = {k: np.frombuffer(built.pop((strategy, k))[1], dtype=np.int64) for k in kinds}
        out[strategy] = KindParts(frames, order, counts.get(strategy, 0))
    return out
