"""Suite scaling: ``memharness run`` over generated suites of growing size, ``--jobs 2`` against ``--jobs 1``, and
one LoCoMo-sized conversation against the same shape ten times shorter.

    .venv/bin/python bench/bench_suite.py                      # 100 / 1,000 / 5,000 scenarios, 3 rounds
    .venv/bin/python bench/bench_suite.py --sizes 100,1000 --rounds 5
    .venv/bin/python bench/bench_suite.py --quick              # 20 / 60 scenarios, 1 round, 60 / 120 turns

Suites are generated deterministically (into /dev/shm when writable) from three templates with varied ids, words
and memories: recall over seeded memories graded against gold facts, an extraction session (heuristic), and a
forced dream over duplicate entries. Every scenario says ``strategies: [heuristic]``: no model, no cassette.
Scratch stores go to /dev/shm and the core's fsync is off unless ``--tmp DIR`` / ``--fsync`` (as in
``bench_telemetry.py``: on this shared disk fsync and rmdir latency swamp the replay). Each
command is a fresh ``python -m harness run DIR --out OUT --no-gates --jobs N`` child; its wall time and peak RSS
(``os.wait4``'s rusage: the largest of the child and the processes it reaped, e.g. its side or pool processes) are
measured here. It prints per-scenario ms, wall and replay (the run's own per-run ``duration_ms``, summed: no
start-up, loading or report), the log-log slope of replay time between consecutive sizes (1 = linear; target
<= 1.05), peak RSS against the smallest size (flat: <= 1.2x), the paired median ``--jobs 1 / --jobs 2`` speedup
over interleaved rounds (target >= 1.7x on two free cores) and the conversation's replay-time slope per turn, each
beside the load average (the cores are shared here).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import target, write_json

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TOOLS = ["postgres", "redis", "kafka", "nginx", "terraform", "grafana", "jenkins", "vault", "consul", "airflow",
         "spark", "rabbitmq", "elastic", "prometheus", "ansible", "celery", "minio", "etcd", "traefik", "sentry"]
TEAMS = ["billing", "search", "payments", "checkout", "growth", "platform", "identity", "mobile", "ledger", "risk"]
HABITS = ["small pull requests", "squash merges", "tabs over spaces", "typed function signatures",
          "short commit messages", "feature flags for risky changes", "trunk based development", "pair reviews"]
CHAT = ["The weather was nice this morning so I walked to the office.", "Can you look at the failing build again?",
        "Thanks, that fixed the import error.", "Let me know when the migration has finished running.",
        "I had lunch with the design team and we talked about the new page.", "Please rename that helper to something clearer.",
        "The meeting moved to Thursday afternoon.", "What does this stack trace mean?",
        "Okay, that makes sense now.", "We should add a test for the empty list case."]


def _recall(i: int, rng: random.Random) -> dict[str, Any]:
    tools = rng.sample(TOOLS, 4)
    team = rng.choice(TEAMS)
    facts = {f"f{j}": {"type": "reference", "match": [f"{t} dashboard", f"d/{t}-{i}"]} for j, t in enumerate(tools)}
    memories = [{"path": f"reference/{t}-{i}.md", "name": f"{t} dashboard", "type": "reference",
                 "description": f"where the {team} {t} dashboard lives",
                 "body": f"The {t} dashboard for {team} is grafana.internal/d/{t}-{i}.", "facts": [f"f{j}"],
                 "age": f"{1 + rng.randrange(9)}d"} for j, t in enumerate(tools)]
    memories.append({"path": f"user/{team}-{i}.md", "name": "habit", "type": "user", "description": "a habit",
                     "body": f"I prefer {rng.choice(HABITS)} when working on {team}."})
    return {"id": f"recall-{i:05d}", "description": f"generated recall {i}", "tags": ["bench", "recall"],
            "strategies": ["heuristic"], "facts": facts, "memories": memories,
            "steps": [{"recall": {"query": f"where is the {tools[0]} dashboard?", "expect": ["f0"], "measure": True}},
                      {"recall": {"query": "what is the weather like on mars today?", "measure": True}}]}


def _extract(i: int, rng: random.Random) -> dict[str, Any]:
    habit, tool, team = rng.choice(HABITS), rng.choice(TOOLS), rng.choice(TEAMS)
    turns = [{"user": rng.choice(CHAT)}, {"user": f"I prefer {habit} in the {team} repository number {i}"},
             {"assistant": "Understood."}, {"user": f"always restart {tool} after editing config {i}"}]
    return {"id": f"extract-{i:05d}", "description": f"generated extraction {i}", "tags": ["bench", "extract"],
            "strategies": ["heuristic"],
            "facts": {"habit": {"type": "user", "match": [habit, f"number {i}"]}},
            "steps": [{"session": f"s{i}", "turns": turns}, {"check": {"facts_present": ["habit"]}},
                      {"recall": {"query": f"how do I like {habit}?", "expect": ["habit"], "measure": True}}]}


def _dream(i: int, rng: random.Random) -> dict[str, Any]:
    habit, other = rng.sample(HABITS, 2)
    memories = [{"path": f"user/{k}-{i}.md", "name": f"habit {k}", "description": habit, "type": "user",
                 "body": f"Prefers {habit}\n\nWhy: reason {k} of {i}", "age": f"{1 + 2 * k}d"} for k in range(3)]
    memories.append({"path": f"user/other-{i}.md", "name": "other", "description": other, "type": "user",
                     "body": f"Prefers {other} for scenario {i}", "age": "2d"})
    return {"id": f"dream-{i:05d}", "description": f"generated dream {i}", "tags": ["bench", "dream"],
            "strategies": ["heuristic"], "facts": {"habit": {"type": "user", "match": [habit]}},
            "memories": memories, "steps": [{"dream": {"force": True}}, {"check": {"facts_present": ["habit"]}}]}


def write_suite(root: Path, n: int) -> Path:
    """``n`` scenarios, round-robin over the three templates, seeded by ``n`` so a size is the same every run."""
    rng = random.Random(n)
    for i in range(n):
        kind, make = [("recall", _recall), ("extract", _extract), ("dream", _dream)][i % 3]
        path = root / kind / f"{kind}-{i:05d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(make(i, rng), sort_keys=False, width=200), encoding="utf-8")
    return root


def write_conversation(root: Path, turns: int, per_session: int = 20) -> Path:
    """One scenario: ``turns`` turns in sessions of ``per_session``, extraction on, a recall probe every tenth
    session; about one user turn in five states a durable fact."""
    rng = random.Random(turns)
    root.mkdir(parents=True, exist_ok=True)
    steps: list[dict[str, Any]] = []
    for s in range(turns // per_session):
        session: list[dict[str, str]] = []
        for t in range(per_session):
            if t % 2:
                session.append({"assistant": rng.choice(["Sure.", "Done.", "Got it, thanks.", "I updated the file."])})
            elif t % 10 == 4:
                session.append({"user": f"I prefer {rng.choice(HABITS)} for the {rng.choice(TOOLS)} service {s}"})
            else:
                session.append({"user": rng.choice(CHAT)})
        steps += [{"session": f"day-{s}", "turns": session}, {"advance": "1d"}]
        if s % 10 == 9:
            steps.append({"recall": {"query": f"how should I work on the {rng.choice(TOOLS)} service?", "measure": True}})
    doc = {"id": f"conversation-{turns}", "description": f"{turns} turns", "strategies": ["heuristic"], "steps": steps}
    (root / "conversation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=200), encoding="utf-8")
    return root


def measure(suite: Path, out: Path, jobs: int) -> tuple[float, int, float, float]:
    """Wall seconds, peak RSS (KiB), the summed replay seconds the run reports per scenario run (``results.jsonl``
    ``duration_ms``: no start-up, loading or report) and CPU seconds (user + system, reaped children included)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "harness", "run", str(suite), "--out", str(out), "--no-gates", "--jobs", str(jobs)]
    with open(out.with_suffix(".log"), "wb") as log:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = out.with_suffix(".log").read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}:\n{tail}")
    replay = sum(json.loads(line)["duration_ms"] for line in (out / "results.jsonl").open(encoding="utf-8")) / 1000
    return seconds, usage.ru_maxrss, replay, usage.ru_utime + usage.ru_stime


def validate(suite: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "validate", "--strict", str(suite)], cwd=REPO, env=ENV,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"generated suite {suite} is invalid:\n{done.stdout}{done.stderr}")


def slope(n0: float, t0: float, n1: float, t1: float) -> float:
    if t0 <= 0 or t1 <= 0:
        return float("nan")  # a net time under the floor: noise larger than the work (tiny sizes)
    return math.log(t1 / t0) / math.log(n1 / n0)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000", help="comma-separated suite sizes (scenarios)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved --jobs 1 / --jobs 2 rounds")
    parser.add_argument("--turns", default="60,600", help="short,long conversation turns (multiples of 20)")
    parser.add_argument("--jobs-size", type=int, default=None, help="suite size for the jobs rounds (default: middle)")
    parser.add_argument("--quick", action="store_true", help="sizes 20,60; 1 round; 60 / 120 turns")
    parser.add_argument("--keep", action="store_true", help="keep the generated suites and run dirs")
    parser.add_argument("--tmp", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None,
                        help="TMPDIR of the runs, where each replay's scratch store lives (default /dev/shm)")
    parser.add_argument("--fsync", action="store_true", help="keep the core's fsync of every write (default off)")
    parser.add_argument("--json", metavar="PATH", help="also write the targets' measurements there (bench_targets.py)")
    args = parser.parse_args()
    if args.tmp:
        ENV["TMPDIR"] = args.tmp
    if not args.fsync:
        ENV["MEMORY_CORE_FSYNC"] = "0"  # a shared disk's fsync latency is noise larger than what is measured
    if args.quick:
        args.sizes, args.rounds, args.turns = "20,60", 1, "60,120"
    sizes = sorted(int(x) for x in args.sizes.split(","))
    short, long = (int(x) for x in args.turns.split(","))
    jobs_size = args.jobs_size or sizes[len(sizes) // 2]
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="bench-suite-", dir=base))
    print(f"work dir {work}; scratch stores in {ENV.get('TMPDIR', tempfile.gettempdir())}, fsync "
          f"{'on' if args.fsync else 'off'}; cores {os.cpu_count()}; load average at start {load()}")
    try:
        for n in sorted({*sizes, jobs_size}):
            write_suite(work / f"suite-{n}", n)
        validate(work / f"suite-{sizes[0]}")
        for turns in (short, long):
            write_conversation(work / f"conv-{turns}", turns)
            validate(work / f"conv-{turns}")
        print(f"generated suites valid (validate --strict); sizes {sizes}, conversation {short} / {long} turns")

        write_suite(work / "suite-1", 1)
        floor = statistics.median(measure(work / "suite-1", work / "out-1", 1)[0] for _ in range(3))
        print(f"  floor (a 1-scenario suite, median of 3): {floor:.2f} s  load {load()}", flush=True)
        rows: list[tuple[int, float, int, str, float]] = []
        for n in sizes:
            seconds, rss, replay, _ = measure(work / f"suite-{n}", work / f"out-{n}", 1)
            rows.append((n, seconds, rss, load(), replay))
            print(f"  {n:>6,} scenarios --jobs 1: {seconds:8.2f} s  {1000 * seconds / n:7.2f} ms/scenario  "
                  f"replay {replay:.2f} s  peak RSS {rss / 1024:7.1f} MiB  load {rows[-1][3]}", flush=True)

        speedups: list[float] = []
        pair: dict[int, list[float]] = {1: [], 2: []}
        cpu: dict[int, list[float]] = {1: [], 2: []}
        rng = random.Random(0)
        for r in range(args.rounds):
            order = [1, 2]
            rng.shuffle(order)
            got = {j: measure(work / f"suite-{jobs_size}", work / f"jobs-{j}", j) for j in order}
            for j, value in got.items():
                pair[j].append(value[0])
                cpu[j].append(value[3])
            speedups.append(got[1][0] / got[2][0])
            print(f"  round {r + 1}: --jobs 1 {got[1][0]:.2f} s ({got[1][3]:.1f} s CPU), --jobs 2 {got[2][0]:.2f} s "
                  f"({got[2][3]:.1f} s CPU), {speedups[-1]:.2f}x  load {load()}", flush=True)

        # interleaved rounds, the median replay per length: one short run is ~20 ms of replay, a single pair's
        # slope swung from 0.87 to 1.13 between runs of the same code
        runs: dict[int, list[tuple[float, float, str]]] = {short: [], long: []}
        for r in range(max(3, args.rounds)):
            for turns in random.Random(r).sample((short, long), 2):
                seconds, _, replay, _ = measure(work / f"conv-{turns}", work / f"conv-out-{turns}", 1)
                runs[turns].append((seconds, replay, load()))
                print(f"  round {r + 1}: conversation {turns} turns: {seconds:.2f} s, replay {replay:.3f} s  "
                      f"load {runs[turns][-1][2]}", flush=True)
        conv = {t: sorted(v, key=lambda x: x[1])[len(v) // 2] for t, v in runs.items()}  # the median replay's run
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\nsuite scaling, memharness run --jobs 1 (fresh process each; heuristic only; each scenario replays on both "
          f"shipped systems, reference and sqlite); load average now {load()}")
    print(f"net = total - floor ({floor:.2f} s: start-up, loading, report of a 1-scenario run); slope of net time")
    print(f"{'scenarios':>9} {'total s':>9} {'ms/scen':>8} {'net ms/sc':>9} {'slope':>6} {'replay ms/sc':>12} {'slope':>6}"
          f" {'peak MiB':>9} {'/ first':>8}  load 1/5/15")
    for k, (n, seconds, rss, ld, replay) in enumerate(rows):
        s = f"{slope(rows[k - 1][0], rows[k - 1][1] - floor, n, seconds - floor):6.2f}" if k else f"{'':>6}"
        rslope = f"{slope(rows[k - 1][0], rows[k - 1][4], n, replay):6.2f}" if k else f"{'':>6}"
        print(f"{n:>9,} {seconds:>9.2f} {1000 * seconds / n:>8.2f} {1000 * (seconds - floor) / n:>9.2f} {s} "
              f"{1000 * replay / n:>12.2f} {rslope} {rss / 1024:>9.1f} {rss / rows[0][2]:>8.2f}  {ld}")
    worst = max((slope(a[0], a[4], b[0], b[4]) for a, b in itertools.pairwise(rows)), default=float("nan"))
    flat = max(r[2] for r in rows) / rows[0][2]
    print(f"replay-time slope (worst step) {worst:.2f} (target <= 1.05); peak RSS largest / smallest {flat:.2f} "
          f"(target flat, <= 1.2)")
    print(f"--jobs 2 at {jobs_size:,} scenarios, {args.rounds} interleaved round(s): --jobs 1 median "
          f"{statistics.median(pair[1]):.2f} s, --jobs 2 {statistics.median(pair[2]):.2f} s, paired median speedup "
          f"{statistics.median(speedups):.2f}x (target >= 1.7 on 2 free cores; these are shared: two workers take a "
          f"larger share of a loaded box, so it can pass 2x); CPU --jobs 2 / --jobs 1 "
          f"{statistics.median(cpu[2]) / statistics.median(cpu[1]):.2f}")
    (ts, rs, ls_), (tl, rl, ll) = conv[short], conv[long]
    print(f"conversation (both systems): {short} turns {ts:.2f} s wall, replay {1000 * rs / short:.2f} ms/turn (load "
          f"{ls_}); {long} turns {tl:.2f} s wall, replay {1000 * rl / long:.2f} ms/turn (load {ll}); replay-time slope "
          f"{slope(short, rs, long, rl):.2f} (median of {len(runs[short])} interleaved rounds; target <= 1.05; wall time is "
          f"mostly start-up at this size)")
    sizes_text = " / ".join(f"{r[0]:,}" for r in rows)
    write_json(args.json, "bench_suite.py", [
        target("suite scaling: replay time per scenario (slope)", worst, 1.05, "lower",
               f"worst step over {sizes_text} scenarios; ms/scenario "
               + " / ".join(f"{1000 * r[4] / r[0]:.2f}" for r in rows)),
        target("suite scaling: peak memory, largest / smallest", flat, 1.2, "lower",
               f"peak RSS {' / '.join(f'{r[2] / 1024:.0f}' for r in rows)} MiB over {sizes_text} scenarios"),
        target("--jobs 2 vs --jobs 1", statistics.median(speedups), 1.7, "higher",
               f"{jobs_size:,} scenarios, paired median of {args.rounds} rounds "
               f"({', '.join(f'{x:.2f}' for x in speedups)}); 2 cores, free only if the load says so"),
        target(f"conversation {short} -> {long} turns (slope)", slope(short, rs, long, rl), 1.05, "lower",
               f"replay {1000 * rs / short:.2f} -> {1000 * rl / long:.2f} ms per turn")])


if __name__ == "__main__":
    main()
