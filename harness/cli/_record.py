"""``memharness record``: fill a cassette set with the model calls the suite makes and it does not hold yet.

The set's ``cassette-meta.json`` says which model, endpoint and timeout scale it was recorded with, so recording
after a prompt edit is one command. Only missing calls reach the model (a prompt edit changes a request, so its
key: the stale entry is simply not used; ``memharness cassettes status`` lists those); each answer is appended and
fsynced as it arrives, so Ctrl-C loses nothing and the same command resumes. Before anything is replayed the
endpoint must answer: no server is one line saying what to start, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.errors import HarnessError

SERVE_HINT = {  # scripts/local-model.sh knows these models (the set's alias → the script's model name)
    "openai/qwen2.5-coder-1.5b-instruct": "qwen-1.5b", "openai/qwen2.5-coder-0.5b-instruct": "qwen-0.5b",
    "openai/smollm2-135m-instruct": "smollm2",
}


def endpoint_problem(api_base: str, timeout_s: float = 3.0) -> str | None:
    """None when ``GET {api_base}/models`` answers with JSON within ``timeout_s`` seconds, else why not (one line)."""
    from harness.tools._http import fetch_json

    url = api_base.rstrip("/") + "/models"
    try:
        fetch_json(url, timeout=timeout_s, what=url)
    except HarnessError as exc:
        return str(exc).removeprefix(f"{url}: ")
    return None


def cmd_record(args: argparse.Namespace, environ: Mapping[str, str],
               run: Callable[[list[str], Mapping[str, str]], int]) -> int:
    """Record what the set lacks, then say how many calls were added."""
    from harness.replay import Cassette, nearest_cassettes, read_meta, resolve_set, spec_problem, system_list
    from harness.systems import SYSTEMS

    # a malformed --system is said before the model server is probed (round 13)
    if args.system and system_list(args.system) is None and spec_problem(args.system, alone=True) is not None:
        raise HarnessError(f"--system {args.system}: expected a shipped system ({', '.join(SYSTEMS)}), NAME:VARIANT, "
                           "module:factory or a comma-separated list of them")
    paths = [str(p) for p in args.paths] or ["scenarios"]
    first = Path(paths[0])
    shelf = args.cassettes or nearest_cassettes(first) or (first if first.is_dir() else first.parent) / "cassettes"
    target = resolve_set(shelf, args.set)
    meta = read_meta(target)
    model = args.model or meta.get("model")
    if not model:
        raise HarnessError(f"record: {target} has no cassette-meta.json naming a model: pass --model MODEL")
    api_base = args.api_base or meta.get("api_base")
    scale = args.timeout_scale or float(meta.get("timeout_scale") or 1.0)
    if api_base:
        problem = endpoint_problem(str(api_base))
        if problem:
            hint = SERVE_HINT.get(str(model))
            start = (f"scripts/local-model.sh serve {hint} --port {str(api_base).rsplit(':', 1)[-1].split('/')[0]}"
                     if hint else "your model server")
            raise HarnessError(f"record: no model answers at {api_base} ({problem}); start {start}, "
                               f"or pass --api-base URL")
    before = len(Cassette.open(target))
    argv = ["run", *paths, "--strategy", "model", "--record", "--model", str(model), "--cassettes", str(target),
            "--timeout-scale", str(scale), "--no-gates", "--out", str(args.out)]
    if api_base:
        argv += ["--api-base", str(api_base)]
    for tag in args.tags or ():
        argv += ["--tag", tag]
    if args.system:
        argv += ["--system", args.system]
    code = run(argv, environ)
    after = len(Cassette.open(target))
    if code != 2 or after != before:  # a run refused before it began (exit 2, nothing recorded): its line is all
        print(f"record: {after - before} new call(s) recorded into {target} ({after} in all; model {model})",
              file=sys.stderr)
    return code
