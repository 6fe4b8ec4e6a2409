"""A blind generator of damaged run directories and a classifier of what the read-back commands make of them.

One mutation is drawn from a seed: a line dropped, duplicated, swapped, shuffled or replaced by a line of a second
run (another run id, the same or other scenarios); one field's value or type changed; a whole file taken from the
second run; the file cut mid-line; re-encoded (UTF-16, Latin-1), given a BOM, CR LF or CR line ends. Every read-back
command (``report``, ``compare`` both ways, ``merge``, ``traces push``) is run on the result and its outcome
classified:

- ``located``: exit 2 and one line ``memharness: <file>:<line>: <field>: <problem>`` (or a run-file error naming
  its file where there is no line: a missing file);
- ``same``: accepted, and the output is what the undamaged directory gives (a normalisation);
- ``different``: accepted with different output — silent acceptance, a BUG;
- ``traceback``: an internal error or a traceback — a BUG;
- ``unlocated``: exit 2 but not one located line — a BUG.

``python -m tests.hostile_cli._mutations A B C N`` prints the counts over N seeds (A the run mutated, B a run of
other scenarios, C a second run of A's scenarios)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.cli import main

JSONL = ("traces.jsonl", "results.jsonl", "probes.jsonl")
FILES = ("summary.json", *JSONL)
LOCATED = re.compile(r"^memharness: (?P<file>\S+?):(?P<line>\d+): (?P<field>[^:]+?): \S")
NO_LINE = re.compile(r"^memharness: \S+/(summary\.json|results\.jsonl|probes\.jsonl|traces\.jsonl): \S")


def _value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["null", "bool", "int", "float", "str", "bigint"] + (["list", "dict"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.randint(-3, 40)
    if kind == "bigint":
        return rng.choice([2**63, -(2**70), 10**20])
    if kind == "float":
        return rng.choice([0.5, -1.0, 1e300, 0.0, 2.5, 1e-9])
    if kind == "str":
        return rng.choice(["", "x", "heuristic", "passed", "recall", "7", "\u2028", "0" * 32])
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return {rng.choice(["a", "total", "step"]): _value(rng, depth + 1) for _ in range(rng.randint(0, 2))}


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        out += [p for k, v in value.items() for p in _nodes(v, (*path, k))]
    elif isinstance(value, list):
        out += [p for i, v in enumerate(value) for p in _nodes(v, (*path, i))]
    return out


def _change_field(rng: random.Random, value: Any) -> tuple[Any, str]:
    """One node of ``value`` (not the root) replaced by another value, or a near one (a number ± 1), or removed."""
    paths = [p for p in _nodes(value) if p] or [()]
    path = rng.choice(paths)
    if not path:
        return _value(rng), "root"
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    old = parent[path[-1]]
    how = rng.choice(["value", "near", "remove"])
    if how == "remove" and isinstance(parent, dict):
        del parent[path[-1]]
    elif how == "near" and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[path[-1]] = old + rng.choice([1, -1]) if isinstance(old, int) else round(old * 0.5 + 0.125, 6)
    elif how == "near" and isinstance(old, bool):
        parent[path[-1]] = not old
    else:
        parent[path[-1]] = _value(rng)
    return value, f"{how} {'.'.join(map(str, path))[:80]}"


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line]


def _put(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def mutate(run: Path, other: Path, twin: Path, rng: random.Random) -> str:
    """Damage ``run`` in place with one mutation drawn from ``rng``; ``other``: a run of other scenarios, ``twin``:
    another run of the same scenarios. Returns what was done."""
    name = rng.choice(FILES)
    path = run / name
    kind = rng.choice(["drop", "duplicate", "swap", "shuffle", "field", "splice", "splice-twin", "file-twin",
                       "file-other", "truncate", "encoding"] if name != "summary.json" else
                      ["field", "field", "field", "file-twin", "file-other", "truncate", "encoding"])
    if kind in ("drop", "duplicate", "swap", "shuffle", "splice", "splice-twin"):
        lines = _lines(path)
        n = rng.randrange(len(lines))
        if kind == "drop":
            del lines[n]
        elif kind == "duplicate":
            lines.insert(rng.randrange(len(lines) + 1), lines[n])
        elif kind == "swap":
            m = rng.randrange(len(lines))
            lines[n], lines[m] = lines[m], lines[n]
        elif kind == "shuffle":
            rng.shuffle(lines)
        else:
            source = _lines((other if kind == "splice" else twin) / name)
            line = rng.choice(source)
            if rng.random() < 0.5:
                lines[n] = line
            else:
                lines.insert(n, line)
        _put(path, lines)
        return f"{name} {kind} line {n + 1}"
    if kind == "field":
        if name == "summary.json":
            data, how = _change_field(rng, json.loads(path.read_text(encoding="utf-8")))
            path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            return f"{name} field {how}"
        lines = _lines(path)
        n = rng.randrange(len(lines))
        data, how = _change_field(rng, json.loads(lines[n]))
        lines[n] = json.dumps(data, ensure_ascii=False, sort_keys=True)
        _put(path, lines)
        return f"{name} field line {n + 1} {how}"
    if kind in ("file-twin", "file-other"):
        shutil.copyfile((twin if kind == "file-twin" else other) / name, path)
        return f"{name} {kind}"
    data = path.read_bytes()
    if kind == "truncate":
        at = rng.randrange(1, len(data))
        path.write_bytes(data[:at])
        return f"{name} truncate at byte {at}"
    how = rng.choice(["bom", "crlf", "cr", "utf-16", "latin-1"])
    text = data.decode("utf-8")
    out = {"bom": b"\xef\xbb\xbf" + data, "crlf": text.replace("\n", "\r\n").encode(),
           "cr": text.replace("\n", "\r").encode(), "utf-16": text.encode("utf-16"),
           "latin-1": text.replace("heuristic", "h\u00e9uristic", 1).encode("latin-1", "replace")}[how]
    path.write_bytes(out)
    return f"{name} encoding {how}"


def free_form(what: str) -> bool:
    """A mutation that edits what no other file states (a span's name, time or attribute value: docs/limits.md),
    so a different output is the edit read as written, not an inconsistency accepted."""
    return what.startswith("traces.jsonl field") and not any(k in what for k in ("traceId", "spanId", "run_id"))


def _cli(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv, environ=env)
        except BaseException as exc:  # a crash through main() is itself the finding
            err.write(f"Traceback: {type(exc).__name__}: {exc}\n")
            code = 99
    return code, out.getvalue(), err.getvalue()


def _merged(out: Path) -> str:
    """What a merge wrote, without what differs between any two runs (run id, time)."""
    if not (out / "summary.json").exists():
        return ""
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for key in ("run_id", "created_at", "meta"):
        summary.pop(key, None)
    return json.dumps(summary, sort_keys=True) + "".join((out / f).read_text(encoding="utf-8") for f in JSONL)


def _report(path: Path) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return re.sub(r"(run_id|generated|created)[^<]{0,80}", "", text)


COMMANDS: dict[str, Callable[[Path, Path, Path, Path], tuple[list[str], Callable[[], str]]]] = {
    "report": lambda run, base, other, scratch: (["report", str(run), "--output", str(scratch / "r.html")],
                                                  lambda: _report(scratch / "r.html")),
    "compare-as-cand": lambda run, base, other, scratch: (["compare", str(base), str(run)], lambda: ""),
    "compare-as-base": lambda run, base, other, scratch: (["compare", str(run), str(base)], lambda: ""),
    "merge": lambda run, base, other, scratch: (["merge", str(scratch / "m"), str(run), str(other)],
                                                lambda: _merged(scratch / "m")),
    "push": lambda run, base, other, scratch: (["traces", "push", str(run), "--endpoint", "http://127.0.0.1:9"],
                                               lambda: ""),
}


def outcome(name: str, run: Path, base: Path, other: Path, scratch: Path, env: dict[str, str]) -> tuple[str, str]:
    """(what was printed and written, stderr) of one command on ``run``."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    argv, written = COMMANDS[name](run, base, other, scratch)
    code, out, err = _cli(argv, env)
    if name == "push" and "127.0.0.1:9" in err:  # read and checked; only the endpoint refused it
        code, err = 0, ""
    return f"{code}\n{out}\n{written()}", err


def classify(code_out: str, err: str, reference: str, run: Path) -> str:
    code = int(code_out.split("\n", 1)[0])
    if "Traceback" in err or "internal error" in err or code not in (0, 1, 2):
        return "traceback"
    errors = [line for line in err.splitlines() if line.startswith("memharness:") and "warning" not in line]
    if code == 2 and errors:
        if len(errors) == 1 and str(run) in errors[0] and (LOCATED.match(errors[0]) or NO_LINE.match(errors[0])):
            return "located"
        return "unlocated"
    return "same" if code_out.replace(str(run), "RUN") == reference else "different"


def references(a: Path, b: Path, run: Path, scratch: Path, env: dict[str, str]) -> dict[str, str]:
    """Each command's output on an undamaged copy of ``a`` at ``run`` (where the damaged copies will be)."""
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(a, run)
    return {name: outcome(name, run, a, b, scratch, env)[0].replace(str(run), "RUN") for name in COMMANDS}


def hunt(a: Path, b: Path, twin: Path, seeds: range, work: Path, env: dict[str, str],
         show: Callable[[str], None] = print) -> Counter[str]:
    """Counts of each outcome class over ``seeds``, one damaged copy of ``a`` per seed, every command on it."""
    run, scratch = work / "run", work / "scratch"
    reference = references(a, b, run, scratch, env)
    counts: Counter[str] = Counter()
    for seed in seeds:
        shutil.rmtree(run)
        shutil.copytree(a, run)
        what = mutate(run, b, twin, random.Random(seed))
        for name in COMMANDS:
            got, err = outcome(name, run, a, b, scratch, env)
            verdict = classify(got, err, reference[name], run)
            verdict = "edited (free-form)" if verdict == "different" and free_form(what) else verdict
            counts[verdict] += 1
            if verdict in ("different", "traceback", "unlocated"):
                show(f"{verdict.upper()} seed {seed} {name}: {what} | {err.strip()[:200]}")
    return counts


if __name__ == "__main__":
    a, b, twin, n = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    work = Path(sys.argv[5]) if len(sys.argv) > 5 else Path("/tmp/mutations-work")
    start = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    total = hunt(a, b, twin, range(start, start + n), work, {"MEMHARNESS_HISTORY": str(work / "history.sqlite")})
    print(dict(sorted(total.items())))
