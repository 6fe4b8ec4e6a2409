"""Write a run directory (DESIGN §4): summary.json, probes.jsonl, results.jsonl, traces.jsonl, junit.xml,
summary.md and report.html; and read one back into the same typed records (``report``, ``compare``, merges)."""

from __future__ import annotations

import ctypes
import errno
import functools
import glob
import json
import os
import shutil
import stat
import sys
import tempfile
import typing
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError, json_trouble, naming, one_line, unique_members, unreadable_json
from harness.evaluation import RunSummary
from harness.evaluation._stats import NULL_IS_INF
from harness.replay import Probe, ScenarioResult, shipped
from harness.replay._records import ScenarioStatus
from harness.reporting._badjson import json_problem
from harness.reporting._beside import Writer, put_each
from harness.reporting._beside import text_writer as _text
from harness.reporting._consistency import check_traces, order_problem, probe_kinds_problem, summary_problem
from harness.reporting._located import problem_line
from harness.reporting._stored import meta_problem, row_problem_shown
from harness.reporting._targets import _umask
from harness.reporting._text import junit_chunks, summary_markdown
from harness.reporting._trace_rows import check_trace_rows
from harness.reporting._traces import TraceSpool, spooled
from harness.reporting._typed import row_problem, rows_problem, type_problem
from harness.scenario._limits import MAX_RUN_FILE_BYTES
from harness.scenario._yaml import decode_utf8, read_regular
from harness.telemetry import checked_lines, finite_json
from memory_core.files.lock import pid_alive


def jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(_json_row(r) + "\n" for r in rows)


def _json_row(row: Mapping[str, Any]) -> str:
    """One row as JSON, NaN and infinities as null: walked by ``finite_json`` only if json refuses it (issue 34)."""
    try:
        return json.dumps(row, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (ValueError, TypeError):
        return json.dumps(finite_json(dict(row)), ensure_ascii=False, sort_keys=True)


RUN_FILES: Final = ("summary.json", "probes.jsonl", "results.jsonl", "traces.jsonl", "junit.xml", "summary.md",
                    "report.html")
"""What ``write_run`` writes; any other entry of the run directory (``regressions/``, a user's notes) is kept."""
_STAGE: Final = ".tmp-run-"
_RENAME_EXCHANGE: Final = 2
_AT_FDCWD: Final = -100


def write_run(out: Path, *, summary: RunSummary, results: Sequence[ScenarioResult],
              spans: Sequence[Mapping[str, Any]] | TraceSpool, html: str | Iterable[str], workers: int = 1) -> None:
    """Write every output file of a run directory, whole or not at all: each file is streamed (the report as the
    template renders it, the traces from their spool: no whole-run text is held in memory) into a temporary
    sibling directory (each file fsynced) beside the entries of ``out`` the run does not write (hard links), and
    the directory is swapped into place with one atomic rename (``renameat2(RENAME_EXCHANGE)`` on Linux). A run
    killed or failing at any point leaves the previous run directory or the new one, never a mix.

    In place instead when ``out`` holds the working directory, is a mount point, or no sibling can be made or
    filled: every file is written to a temporary file first, and only when all are written is each renamed over
    its old version (``os.replace``). ``workers`` ≥ 2 (``--jobs``): the report is written by a forked process."""
    spool = spooled(spans)
    writers: dict[str, Writer] = {
        "summary.json": _text(lambda: [json.dumps(finite_json(summary.to_dict()), indent=2, ensure_ascii=False) + "\n"]),
        "probes.jsonl": _text(lambda: (jsonl([p.to_row()]) for r in results for p in r.probes)),
        "results.jsonl": _text(lambda: (jsonl([r.to_row()]) for r in results)), "traces.jsonl": spool.copy_to,
        "junit.xml": _text(lambda: junit_chunks(results, summary.gates)),
        "summary.md": _text(lambda: [summary_markdown(summary, results)]),
        "report.html": _text(lambda: [html] if isinstance(html, str) else html)}
    try:
        with naming(out):
            _write_dir(out, writers, RUN_FILES, workers)
    finally:
        if spool is not spans:
            spool.close()


def write_dir(out: Path, files: Mapping[str, str]) -> None:
    """Files (name → UTF-8 text) into directory ``out`` whole or not at all, as :func:`write_run` writes a run
    (``memharness import`` uses it): ``out``'s other entries are kept, none of these files is ever half there."""
    with naming(out):
        _write_dir(out, {name: _text(functools.partial(list, [text])) for name, text in files.items()}, files)


def _write_dir(out: Path, writers: Mapping[str, Writer], own: Collection[str], workers: int = 1) -> None:
    target = Path(os.path.realpath(out)) if out.is_symlink() else out  # a symlinked directory: its target
    stage = _stage(target, own)
    if stage is None:
        _in_place(target, writers)
        return
    try:
        put_each(stage, writers, _put, workers=workers)
        _fsync_dir(stage)
        _swap(stage, target)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _in_place(target: Path, writers: Mapping[str, Writer]) -> None:
    """Every file into a temp file of ``target`` (fsynced), then each renamed over its old version."""
    target.mkdir(parents=True, exist_ok=True)
    done: dict[str, str] = {}
    try:
        for name, write in writers.items():
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target)
            done[name] = tmp
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
        for name, tmp in list(done.items()):
            os.replace(tmp, target / name)
            del done[name]
        _fsync_dir(target)
    finally:
        for tmp in done.values():
            Path(tmp).unlink(missing_ok=True)


def _put(path: Path, write: Writer) -> None:
    """One file of a staged run directory (new, so no temp file of its own): written and fsynced."""
    with open(path, "xb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, 0o666 & ~_umask())


def _stage(out: Path, own: Collection[str]) -> Path | None:
    """A new sibling directory holding what ``out`` holds besides the files written now (``own``), or None (write
    in place)."""
    here = Path.cwd().resolve()
    resolved = out.resolve()
    if resolved == here or resolved in here.parents or resolved.parent == resolved:
        return None  # never swap away the directory this process (or its caller) stands in
    try:
        if out.exists() and (not out.is_dir() or os.path.ismount(out)):
            return None
        out.parent.mkdir(parents=True, exist_ok=True)
        _sweep(out)
        stage = Path(tempfile.mkdtemp(prefix=f"{_STAGE}{os.getpid()}-", suffix=f"-{out.name}", dir=out.parent))
    except OSError:
        return None
    try:
        os.chmod(stage, stat.S_IMODE(out.stat().st_mode) if out.exists() else 0o777 & ~_umask())
        if out.exists():
            with os.scandir(out) as entries:
                for entry in entries:
                    if entry.name not in own and not entry.name.startswith(".tmp-"):
                        _link(Path(entry.path), stage / entry.name)
    except OSError:
        shutil.rmtree(stage, ignore_errors=True)
        return None
    return stage


def _link(source: Path, dest: Path) -> None:
    """``source`` (a file, a symlink or a directory tree) at ``dest`` by hard links: the same files, no copy."""
    if source.is_symlink():
        os.symlink(os.readlink(source), dest)
    elif source.is_dir():
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    else:
        os.link(source, dest)


def _sweep(out: Path) -> None:
    """Remove the staged directories of runs that were killed (their process is gone) beside ``out``."""
    for leftover in out.parent.glob(f"{_STAGE}*-{glob.escape(out.name)}"):
        pid = leftover.name[len(_STAGE):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _swap(stage: Path, out: Path) -> None:
    """Put ``stage`` at ``out`` in one rename (a new directory), or exchange the two atomically and remove the old
    one; where the kernel cannot exchange, two renames (a kill between them leaves the old run beside, whole)."""
    try:
        os.rename(stage, out)  # out missing: atomic
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
            raise
    else:
        _fsync_dir(out.parent)
        return
    if _exchange(stage, out):
        _fsync_dir(out.parent)
        shutil.rmtree(stage, ignore_errors=True)  # now the previous run
        return
    old = Path(tempfile.mkdtemp(prefix=f"{_STAGE}{os.getpid()}-", suffix=f"-{out.name}", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(stage, out)
    except BaseException:
        os.rename(old, out)  # the previous run back in place
        raise
    _fsync_dir(out.parent)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """``renameat2(a, b, RENAME_EXCHANGE)``: True when done, False when this kernel, libc or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _fsync_dir(path: Path) -> None:
    """Make a rename or the entries of a directory durable (best effort: not every platform opens directories)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_text(path: Path) -> str:
    """A run-directory file as text: a regular file within ``MAX_RUN_FILE_BYTES`` (a FIFO or device never blocks)."""
    if not path.exists() and not path.is_symlink():
        raise HarnessError(f"{path}: missing (is this a memharness run directory?)")
    text = decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)
    return text.removeprefix("\ufeff")  # a BOM an editor added: read as without it (docs/limits.md)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in numbered_jsonl(path)]


def numbered_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSON-lines run file."""
    rows = []
    # "\n" only: str.splitlines() also breaks at U+2028, U+0085, form feed and more, which the writers leave
    # unescaped inside strings (ensure_ascii off), so a query holding one made the run unreadable
    for n, line in enumerate(_read_text(path).split("\n"), 1):
        if line.strip():
            try:
                row = json.loads(line, object_pairs_hook=unique_members)  # a member twice: refused
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{path}:{n}: {json_problem(line, exc, whole='row')}") from None
            except (RecursionError, ValueError) as exc:  # nested too deep, 5,000 digits (round 16: internal)
                raise HarnessError(f"{path}:{n}: row: invalid JSON ({json_trouble(exc)})") from None
            if not isinstance(row, dict):
                raise HarnessError(f"{path}:{n}: row: expected a JSON object per line, got {type(row).__name__}")
            rows.append((n, row))
    return rows


REQUIRED_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "results.jsonl": ("scenario", "strategy", "passed", "failures", "trace_id", "duration_ms"),
    "probes.jsonl": ("scenario", "strategy", "step", "kind", "passed", "metrics", "duration_ms"),
}
"""The fields a run file's row must have; the types of these and of every other field are its record's
(``row_problem``: true is no number, nor "yes" a bool)."""


def _typed(path: Path, n: int, row: dict[str, Any], record: type) -> None:
    """``path:n: field: missing`` or ``path:n: field: expected …, got …`` for the first field of ``row`` that is
    absent though required, or not of its ``record``'s type."""
    for name in REQUIRED_FIELDS[path.name]:
        if name not in row:
            raise HarnessError(f"{path}:{n}: {name}: missing")
    if (problem := row_problem({k: v for k, v in row.items() if k != "probes"}, record)) is not None:
        raise HarnessError(f"{path}:{n}: {problem}")


def _nulls_read(value: Any) -> Any:
    """``value`` with the nulls that stand for an infinite p-value or MDE (``NULL_IS_INF``) read as numbers."""
    if isinstance(value, dict):
        return {k: 0.0 if v is None and k in NULL_IS_INF else _nulls_read(v) for k, v in value.items()}
    return [_nulls_read(v) for v in value] if isinstance(value, list) else value


def read_run(run_dir: Path) -> tuple[RunSummary, list[ScenarioResult], list[dict[str, Any]]]:
    """(summary, results with their probes, spans) of a run directory; a file, line and field in every error."""
    summary_path = run_dir / "summary.json"
    text = _read_text(summary_path)
    try:
        data = json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{summary_path}:{exc.lineno}: {json_problem(text, exc, whole='file')}") from None
    except (RecursionError, ValueError) as exc:
        raise HarnessError(unreadable_json(summary_path, text, "file: invalid JSON", exc)) from None

    def located(problem: str) -> HarnessError:
        return HarnessError(f"{summary_path}:{problem_line(text, data, problem)}: {problem}")

    if not isinstance(data, dict) or not isinstance(data.get("passed"), bool):
        raise located("passed: expected true or false (not a summary of this version)")
    where = f"{summary_path}:1"
    if (problem := row_problem(_nulls_read(data), RunSummary)) is not None:  # as read: from_dict converts
        raise located(problem)  # ("7" became 7, "xy" two incomplete runs)
    for key, kind in (("complete", bool), ("schema", str)):  # written, derived (or fixed) on read
        if key in data and not isinstance(data[key], kind):
            raise located(f"{key}: expected {kind.__name__}, got "
                          f"{one_line(json.dumps(data[key], ensure_ascii=False))[:60]}")
    meta: dict[str, Any] = data["meta"] if isinstance(data.get("meta"), dict) else {}
    if (problem := meta_problem(meta)) is not None:  # typed, and what is shown or linked to as written (round 19)
        raise located(problem)
    try:
        summary = RunSummary.from_dict(data)
        if (problem := type_problem(summary)) is not None:
            raise located(problem)
        by_key: dict[tuple[str, str], list[Probe]] = {}
        probe_lines: dict[tuple[str, str, int, str], int] = {}
        where = str(run_dir / "probes.jsonl")
        for n, row in numbered_jsonl(run_dir / "probes.jsonl"):
            where = f"{run_dir / 'probes.jsonl'}:{n}"
            _typed(run_dir / "probes.jsonl", n, row, Probe)
            probe = Probe.from_row(row)
            once = (probe.scenario, probe.strategy, probe.step, probe.kind)
            if once in probe_lines:  # fix (hostile probe, round 11): a second row was counted twice in every metric
                raise HarnessError(f"{where}: step: {once[0]} [{once[1]}] step {once[2]} ({once[3]}) is also on line "
                                   f"{probe_lines[once]}")
            probe_lines[once] = n
            by_key.setdefault((probe.scenario, probe.strategy), []).append(probe)
        results: list[ScenarioResult] = []
        lines: dict[tuple[str, str], int] = {}
        rows = numbered_jsonl(run_dir / "results.jsonl")
        for n, row in rows:
            where = f"{run_dir / 'results.jsonl'}:{n}"
            _typed(run_dir / "results.jsonl", n, row, ScenarioResult)
            if (problem := row_problem_shown(row)) is not None:  # names, path, trace id: shown or linked to
                raise HarnessError(f"{where}: {problem}")
            if "status" in row and row["status"] not in typing.get_args(ScenarioStatus):  # written, derived on read
                raise HarnessError(f"{where}: status: expected one of {', '.join(typing.get_args(ScenarioStatus))}, "
                                   f"got {one_line(json.dumps(row['status'], ensure_ascii=False))[:60]}")
            pair = (row["scenario"], row["strategy"])
            if pair[1] not in summary.strategies:  # every column a run replayed has its summary block
                raise HarnessError(f"{where}: strategy: {pair[1]} is not a column of {summary_path}")
            if pair in lines:  # a run has one row per scenario and column: a second would count every metric twice
                raise HarnessError(f"{where}: scenario: {pair[0]} [{pair[1]}] is also on line {lines[pair]}")
            lines[pair] = n
            results.append(ScenarioResult.from_row(row, tuple(by_key.get(pair, []))))
        for seen, n in probe_lines.items():  # fix (round 11): a probe of no result was read and dropped unsaid
            if seen[:2] not in lines:
                where = f"{run_dir / 'probes.jsonl'}:{n}"
                raise HarnessError(f"{where}: scenario: {seen[0]} [{seen[1]}] has no row in {run_dir / 'results.jsonl'}")
        if (wrong := order_problem(rows, probe_lines)) is not None:  # results rows swapped, probes shuffled
            raise HarnessError(f"{run_dir / 'probes.jsonl'}:{wrong[0]}: {wrong[1]}")
        if (problem := rows_problem(summary.strategies, results)) is not None:  # a row lost or added since the run
            raise located(problem)
        for n, row in rows:  # a check or dream row lost (recall rows: the summary counts them)
            if (problem := probe_kinds_problem(row, by_key.get((row["scenario"], row["strategy"]), []))) is not None:
                raise HarnessError(f"{run_dir / 'results.jsonl'}:{n}: {problem}")
        if (problem := summary_problem(summary, results)) is not None:  # a metric or verdict the rows contradict
            raise located(problem)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError, IndexError) as exc:
        field = f"{exc.args[0]}: missing" if isinstance(exc, KeyError) and exc.args else f"{type(exc).__name__}: {exc}"
        raise HarnessError(f"{where}: not a memharness run file of this version ({one_line(field)[:200]})") from None
    traces = run_dir / "traces.jsonl"
    numbered = numbered_jsonl(traces) if traces.exists() or traces.is_symlink() else None
    if numbered is not None:
        checked_lines(traces, numbered)
    spans = check_traces(run_dir, summary, rows, numbered)  # each row's trace, of this run
    check_trace_rows(run_dir, rows, by_key, probe_lines, spans,  # and whose it is (round 19: rows swapped, probes moved)
                     trusted=shipped(str(summary.meta.get("system") or "") or None))
    return summary, results, spans


def result_line(run_dir: Path, scenario: str, strategy: str) -> str:
    """``<run_dir>/results.jsonl:<line>`` of a run's row of ``scenario`` [``strategy``] (read back: it has one)."""
    path = run_dir / "results.jsonl"
    lines = [n for n, row in numbered_jsonl(path) if (row.get("scenario"), row.get("strategy")) == (scenario, strategy)]
    return f"{path}:{lines[0] if lines else 1}"
