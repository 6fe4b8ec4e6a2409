"""``memharness sensitivity``: mutation analysis of a memory system's code, with the scenario suite as the oracle.

For each mutant the target package is copied to a temporary directory, the mutant is written into the copy, and
``memharness run SUITE --strategy … --out TMP`` (with the suite's own gates) runs in a subprocess whose
``PYTHONPATH`` puts the copy first. The subprocess checks, before anything else, that the target it imported is
the mutated copy (exit 97 otherwise, which aborts the analysis). A mutant is *killed* when that run exits non-zero;
the scenarios, probes and gates that failed are read back from the run directory. A run that exceeds the timeout
is killed too (reported as ``timeout``). The unmutated copy runs first and must pass: a suite that already fails
would "kill" every mutant.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import HarnessError
from harness.reporting import atomic_write, read_run
from harness.tools._equivalent import UNREACHABLE
from harness.tools._mutants import Mutant, Target

SCHEMA: Final = "memharness.sensitivity/1"
IMPORT_CHECK_EXIT: Final = 97
ENV_TARGET: Final = "MEMHARNESS_MUTANT_TARGET"
ENV_COPY: Final = "MEMHARNESS_MUTANT_COPY"
# Runs in the subprocess: import the target, prove it is the mutated copy, then run `memharness` with the arguments.
BOOT: Final = f"""\
import importlib, os, sys
name, expect = os.environ[{ENV_TARGET!r}], os.environ[{ENV_COPY!r}]
module = importlib.import_module(name)
where = (list(getattr(module, "__path__", None) or []) or [getattr(module, "__file__", None) or "?"])[0]
if os.path.realpath(where) != os.path.realpath(expect):
    print(f"sensitivity: {{name}} was imported from {{where}}, not from the mutated copy {{expect}}", file=sys.stderr)
    sys.exit({IMPORT_CHECK_EXIT})
from harness.cli import main
sys.exit(main(sys.argv[1:]))
"""
Status = Literal["killed", "survived", "timeout"]


@dataclass(frozen=True, slots=True)
class MutantResult:
    """What the suite did with one mutant."""

    mutant: Mutant
    status: Status
    killed_by: tuple[str, ...] = ()
    """Failed scenarios (``id [strategy]``) and gates (``gate <label>``), or ``timeout`` / ``exit N: …``."""
    details: tuple[str, ...] = ()
    """One line per failure: the scenario's failure messages or error, the gate's value."""
    seconds: float = 0.0
    exit_code: int | None = None

    @property
    def killed(self) -> bool:
        return self.status != "survived"

    def to_dict(self) -> dict[str, Any]:
        return {**self.mutant.to_dict(), "status": self.status, "killed": self.killed, "killed_by": list(self.killed_by),
                "details": list(self.details), "seconds": round(self.seconds, 2), "exit_code": self.exit_code}


@dataclass(frozen=True, slots=True)
class SensitivityReport:
    """Every mutant's result and the kill rate."""

    target: str
    suite: tuple[str, ...]
    strategies: str
    results: tuple[MutantResult, ...]
    baseline_seconds: float
    timeout_s: float
    min_kill_rate: float
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)
    equivalent: tuple[tuple[Mutant, str], ...] = ()  # left out of the score (triaged by hand), with the reason

    @property
    def killed(self) -> int:
        return sum(r.killed for r in self.results)

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if not r.killed]

    @property
    def kill_rate(self) -> float:
        return self.killed / len(self.results) if self.results else 0.0

    @property
    def kill_rate_ci95(self) -> tuple[float, float]:
        """The Wilson score 95% interval of the kill rate (the mutants are a sample of all possible faults)."""
        if not self.results:
            return (0.0, 1.0)
        from scipy.stats import binomtest

        ci = binomtest(self.killed, len(self.results)).proportion_ci(confidence_level=0.95, method="wilson")
        return (float(ci.low), float(ci.high))

    @property
    def passed(self) -> bool:
        return self.kill_rate >= self.min_kill_rate

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "target": self.target, "suite": list(self.suite), "strategies": self.strategies,
                "mutants": len(self.results), "killed": self.killed, "survived": len(self.survivors),
                "timeouts": sum(r.status == "timeout" for r in self.results), "kill_rate": round(self.kill_rate, 4),
                "kill_rate_ci95": [round(x, 4) for x in self.kill_rate_ci95],
                "equivalent": [{**m.to_dict(), "reason": why} for m, why in self.equivalent],
                "min_kill_rate": self.min_kill_rate, "passed": self.passed,
                "baseline_seconds": round(self.baseline_seconds, 2), "timeout_s": round(self.timeout_s, 1),
                "seconds": round(self.seconds, 1), "meta": dict(self.meta),
                "results": [r.to_dict() for r in self.results]}


class _Live:
    """Process groups of running suite subprocesses, so an interrupt or error leaves none behind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()

    def add(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def failures_in(run_dir: Path) -> tuple[list[str], list[str]]:
    """(what failed, one detail line each) from a run directory: failed/error scenarios, then failed gates."""
    if not (run_dir / "summary.json").exists():
        return [], []
    try:
        summary, results, _ = read_run(run_dir)
    except HarnessError as exc:
        return [], [f"unreadable run directory: {exc}"]
    by: list[str] = []
    details: list[str] = []
    for r in results:
        if r.status in ("failed", "error"):
            by.append(f"{r.scenario} [{r.strategy}]")
            details.append(f"{r.scenario} [{r.strategy}] {r.status}: {r.error or '; '.join(r.failures)}"[:500])
    for g in summary.gates:
        if not g.passed and not g.skipped:
            by.append(f"gate {g.name}")
            details.append(f"gate {g.name}: value {g.value} {g.detail}".rstrip())
    return by, details


@dataclass(frozen=True, slots=True)
class Oracle:
    """Runs the scenario suite against a (possibly mutated) copy of the target."""

    suite: tuple[Path, ...]
    """Absolute scenario files or directories."""
    target: Target
    strategies: str = "own"
    """``--strategy`` of every run, or ``own``: each scenario's own strategies, exactly as a plain ``memharness run``."""
    system: str | None = None
    tags: tuple[str, ...] = ()
    """Run only scenarios with one of these tags (``memharness run --tag``)."""
    gates: Path | None = None
    """A gates file instead of the suite's own ``gates.toml``."""
    workdir: Path = field(default_factory=Path.cwd)
    """Importable after the copy (as the current directory is for ``memharness run``), for ``--system``."""
    live: _Live = field(default_factory=_Live)

    def command(self, out: Path) -> list[str]:
        chosen = [] if self.strategies == "own" else ["--strategy", self.strategies]
        cmd = [sys.executable, "-P", "-c", BOOT, "run", *map(str, self.suite), *chosen, "--out", str(out),
               *(f"--tag={t}" for t in self.tags), *(["--gates", str(self.gates)] if self.gates else [])]
        return [*cmd, "--system", self.system] if self.system else cmd

    def _copy(self, root: Path, mutant: Mutant | None) -> Path:
        src = root / "src"
        src.mkdir()
        dest = src / self.target.path.name
        if self.target.is_package:
            shutil.copytree(self.target.path, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(self.target.path, dest)
        if mutant is not None:
            module = dest / mutant.file if self.target.is_package else dest
            module.write_text(mutant.mutated, encoding="utf-8")
        return dest

    def run(self, mutant: Mutant | None, *, timeout_s: float) -> tuple[Status, list[str], list[str], float, int | None]:
        """(status, killed by, details, seconds, exit code) of one suite run against the copy."""
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memharness-mutant-") as tmp:
            root = Path(tmp)
            dest = self._copy(root, mutant)
            env = dict(os.environ)
            # the mutated copy first, then the caller's directory (for --system modules), then any PYTHONPATH
            extra = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
            env["PYTHONPATH"] = os.pathsep.join([str(dest.parent), str(self.workdir.resolve()), *extra])
            env.update({"PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1", ENV_TARGET: self.target.name,
                        ENV_COPY: str(dest)})
            env.pop("MEMHARNESS_DEBUG", None)
            out = root / "run"
            proc = subprocess.Popen(self.command(out), cwd=root, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                    start_new_session=True)
            self.live.add(proc)
            try:
                _, stderr = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.communicate()
                return "timeout", ["timeout"], [f"no exit within {timeout_s:.0f}s"], time.monotonic() - t0, None
            finally:
                self.live.discard(proc)
            code = proc.returncode
            if code == IMPORT_CHECK_EXIT:
                raise HarnessError(_last_line(stderr))
            if code == 0:
                return "survived", [], [], time.monotonic() - t0, 0
            by, details = failures_in(out)
            if not by:
                by, details = [f"exit {code}: {_last_line(stderr)}"], [*details, _last_line(stderr)]
            return "killed", by, details, time.monotonic() - t0, code


def run_sensitivity(
    mutants: Sequence[Mutant], oracle: Oracle, *, jobs: int = 2, timeout_s: float | None = None,
    min_kill_rate: float = 0.9, progress: Callable[[str], None] | None = None, meta: dict[str, Any] | None = None,
    equivalent: Sequence[tuple[Mutant, str]] = (),
) -> SensitivityReport:
    """Run the unmutated suite (must pass), then every mutant, ``jobs`` at a time; results in ``mutants`` order."""
    say = progress or (lambda _line: None)
    t0 = time.monotonic()
    say(f"baseline: running the suite on the unmutated copy of {oracle.target.name}")
    status, by, details, base_s, code = oracle.run(None, timeout_s=timeout_s or 1800.0)
    if status != "survived":
        why = "; ".join(details[:3]) or ", ".join(by)
        raise HarnessError(f"the suite does not pass on the unmutated {oracle.target.name} "
                           f"({status}, exit {code}): {why} — sensitivity needs a passing suite")
    limit = timeout_s if timeout_s is not None else max(120.0, 6 * base_s)
    say(f"baseline passed in {base_s:.1f}s; {len(mutants)} mutant(s), {jobs} at a time, timeout {limit:.0f}s each")
    results: dict[int, MutantResult] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(oracle.run, m, timeout_s=limit): i for i, m in enumerate(mutants)}
        for n, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            status, by, details, seconds, code = fut.result()
            results[i] = MutantResult(mutants[i], status, tuple(by), tuple(details), seconds, code)
            say(f"[{n}/{len(mutants)}] {status:8} {mutants[i].name} ({seconds:.1f}s)")
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        oracle.live.kill_all()
        raise
    pool.shutdown(wait=True)
    return SensitivityReport(
        oracle.target.name, tuple(str(p) for p in oracle.suite), oracle.strategies,
        tuple(results[i] for i in range(len(mutants))), base_s, limit, min_kill_rate, time.monotonic() - t0,
        {"created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "jobs": jobs, **(meta or {})},
        tuple(equivalent),
    )


def exit_code(report: SensitivityReport) -> int:
    """1 when the kill rate is below the floor, else 0."""
    return 0 if report.passed else 1


def _by(r: MutantResult, n: int = 3) -> str:
    shown = ", ".join(r.killed_by[:n])
    return shown + (f" (+{len(r.killed_by) - n} more)" if len(r.killed_by) > n else "")


def format_lines(report: SensitivityReport) -> list[str]:
    """The terminal lines: one per mutant (catalogue order), survivors with their source line, the kill rate."""
    lines = []
    width = max((len(r.mutant.name) for r in report.results), default=10)
    for r in report.results:
        where = f"{report.target}/{r.mutant.file}:{r.mutant.line}"
        what = f"by {_by(r)}" if r.killed else f"{where}: {r.mutant.before} -> {r.mutant.after}"
        lines.append(f"{r.status.upper():8} {r.mutant.name:{width}} {r.seconds:6.1f}s  {what}")
    if report.survivors:
        lines.append(f"survivors ({len(report.survivors)}):")
        for r in report.survivors:
            lines.append(f"  {report.target}/{r.mutant.file}:{r.mutant.line} {r.mutant.name} [{r.mutant.rule}]")
            lines.append(f"      - {r.mutant.before}")
            lines.append(f"      + {r.mutant.after}")
    if report.equivalent:
        lines.append(f"left out as equivalent ({len(report.equivalent)}, triaged by hand):")
        lines += [f"  {report.target}/{m.file}:{m.line} {m.name}: {why}" for m, why in report.equivalent]
    verdict = "ok" if report.passed else "BELOW the floor"
    low, high = report.kill_rate_ci95
    lines.append(f"kill rate {report.kill_rate:.3f} (95% CI {low:.3f}-{high:.3f}, Wilson; {report.killed}/"
                 f"{len(report.results)} killed, {len(report.survivors)} survived, {len(report.equivalent)} equivalent "
                 f"left out; floor {report.min_kill_rate}: {verdict}) in {report.seconds:.0f}s")
    if n := sum(why.startswith(UNREACHABLE) for _, why in report.equivalent):  # a gap, not an equivalence: say so
        lines.append(f"of those left out, {n} are unreachable by any scenario, not equivalent; counted as survivors "
                     f"the kill rate is {report.killed / (len(report.results) + n):.3f}")
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def markdown(report: SensitivityReport) -> str:
    """``sensitivity.md``: the kill rate, survivors with file:line and before/after, then every mutant."""
    out = [f"# Sensitivity of `{report.target}` to the scenario suite", "",
           f"Kill rate **{report.kill_rate:.3f}** (95% CI {report.kill_rate_ci95[0]:.3f}-{report.kill_rate_ci95[1]:.3f}, "
           f"Wilson; {report.killed}/{len(report.results)} mutants killed, {len(report.survivors)} survived, "
           f"{len(report.equivalent)} equivalent left out; floor {report.min_kill_rate}: "
           f"{'ok' if report.passed else 'BELOW'}).",
           f"Suite: {', '.join(report.suite)} with "
           + ("each scenario's own strategies (a plain `memharness run`)" if report.strategies == "own"
              else f"`--strategy {report.strategies}`") + " and its gates; "
           f"baseline {report.baseline_seconds:.1f}s, timeout {report.timeout_s:.0f}s per mutant.", ""]
    if report.survivors:
        out += ["## Survivors", "", "| mutant | where | rule | before | after |", "|---|---|---|---|---|"]
        out += [f"| {r.mutant.name} | `{report.target}/{r.mutant.file}:{r.mutant.line}` | {_md(r.mutant.rule)} | "
                f"`{_md(r.mutant.before)}` | `{_md(r.mutant.after)}` |" for r in report.survivors]
        out.append("")
    if report.equivalent:
        out += ["## Left out as equivalent", "", "| mutant | where | before | after | why |", "|---|---|---|---|---|"]
        out += [f"| {m.name} | `{report.target}/{m.file}:{m.line}` | `{_md(m.before)}` | `{_md(m.after)}` | {_md(why)} |"
                for m, why in report.equivalent]
        out.append("")
    out += ["## Every mutant", "", "| mutant | kind | status | killed by | seconds |", "|---|---|---|---|---|"]
    out += [f"| {r.mutant.name} | {r.mutant.kind} | {r.status} | {_md(_by(r, 5))} | {r.seconds:.1f} |"
            for r in report.results]
    return "\n".join(out) + "\n"


_SECTION: Final = re.compile(r"§\s*(\d+\s*Q\d+|\d+(?:\.\d+)*)")


def _section_key(section: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", section))


def coverage_markdown(report: SensitivityReport) -> str:
    """``coverage.md``: for every spec mutant, the rule it breaks (spec and section from its ``rule``; SQLite
    modules cite the SQLite spec), the scenarios that killed it — the proof that they can fail — or "gap"."""
    rows = []
    for r in report.results:
        if r.mutant.kind != "spec":
            continue
        spec = "sqlite" if r.mutant.file.startswith("sqlite/") else "qwen"
        match = _SECTION.search(r.mutant.rule)
        section = " ".join(match.group(1).replace("Q", " Q").split()) if match else "—"
        scenarios = sorted({k.split(" [")[0] for k in r.killed_by if not k.startswith(("gate ", "exit ", "timeout"))})
        proof = ", ".join(f"`{s}`" for s in scenarios) or ("a gate: " + _md(_by(r)) if r.killed else "**gap**")
        rows.append((spec, _section_key(section), section, r.mutant.rule, r.mutant.name, proof))
    rows.sort(key=lambda row: (row[0], row[1], row[4]))
    gaps = sum(row[5] == "**gap**" for row in rows)
    out = ["| spec | § | rule | mutant | killed by (the scenarios that fail when the rule is broken) |",
           "|---|---|---|---|---|"]
    out += [f"| {spec} | {section} | {_md(rule)} | `{name}` | {proof} |" for spec, _, section, rule, name, proof in rows]
    head = (f"{len(rows)} rules broken one at a time ({report.killed}/{len(report.results)} mutants killed; "
            f"{gaps} gap(s)).")
    return head + "\n\n" + "\n".join(out) + "\n"


def write_report(out: Path, report: SensitivityReport) -> None:
    """Write ``sensitivity.json``, ``sensitivity.md`` and (for spec mutants) ``coverage.md`` (atomically)."""
    atomic_write(out / "sensitivity.json", json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    atomic_write(out / "sensitivity.md", markdown(report))
    if any(r.mutant.kind == "spec" for r in report.results):
        atomic_write(out / "coverage.md", coverage_markdown(report))
