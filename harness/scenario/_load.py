"""Load and validate scenario YAML; every problem is reported as ``file:line: field: what was expected``."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import yaml

from harness.errors import ScenarioError, one_line
from harness.scenario import _limits as lim
from harness.scenario import _load_more as more
from harness.scenario._impossible import refuse_unrun_strategies
from harness.scenario._load_more import EXTRACT_STATUSES
from harness.scenario._memories import TYPES, memories
from harness.scenario._packed import pack, shelving
from harness.scenario._parallel import load_parallel
from harness.scenario._registry import MODEL_STRATEGIES, OUTCOME_STRATEGIES, STRATEGY_NAMES
from harness.scenario._types import (
    AdvanceStep,
    DreamStep,
    Fact,
    FaultStep,
    ForgetStep,
    LockStep,
    Outcome,
    RecallStep,
    Scenario,
    SessionStep,
    StateStep,
    Step,
    ToolCallSpec,
    ToolResultSpec,
    Turn,
)
from harness.scenario._yaml import NodeReader, compose_bounded, node_text, read_bounded

DREAM_STATUSES: Final = ("updated", "noop", "skipped", "failed")
DREAM_REASONS: Final = ("disabled", "same_session", "min_hours", "scan_throttled", "min_sessions", "locked", "running")
EXTRACT_REASONS: Final = ("memory_tool", "queued", "already_running")
STRATEGIES: Final = STRATEGY_NAMES


def _facts(ctx: NodeReader, node: yaml.Node) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    for fid, value in ctx.mapping(node, "facts", None).items():
        problem = lim.name_problem(fid)
        if problem:
            raise ctx.fail(value, f"facts.{fid}", f"fact id: {problem}")
        fields = ctx.mapping(value, f"facts.{fid}", ("type", "match"))
        if "type" not in fields or "match" not in fields:
            raise ctx.fail(value, f"facts.{fid}", "expected both 'type' and 'match'")
        match = ctx.strings(fields["match"], f"facts.{fid}.match")
        if not match or not all(m.strip() for m in match):
            raise ctx.fail(fields["match"], f"facts.{fid}.match", "expected a non-empty list of non-empty phrases")
        facts[fid] = Fact(id=fid, type=ctx.string(fields["type"], f"facts.{fid}.type", choices=TYPES), match=match)
    return facts


def _turn(ctx: NodeReader, node: yaml.Node, field: str) -> Turn:
    f = ctx.mapping(node, field, ("user", "assistant", "tool_write", "tool_calls", "tool_results"))
    kinds = [k for k in ("user", "assistant", "tool_write") if k in f]
    if len(kinds) != 1:
        raise ctx.fail(node, field, "expected exactly one of user, assistant, tool_write")
    kind = kinds[0]
    value = f[kind]
    text = ctx.text(value, f"{field}.{kind}")
    if kind == "tool_write":
        problem = lim.memory_path_problem(text, topic=False)
        if problem:
            raise ctx.fail(value, f"{field}.{kind}", f"expected a relative path inside the memory root: {problem}")
        if "tool_calls" in f or "tool_results" in f:
            raise ctx.fail(node, field, "tool_calls and tool_results go with a user or assistant turn, not tool_write")
    calls = tuple(ctx.seq(f["tool_calls"], f"{field}.tool_calls", lambda n, p: _tool_call(ctx, n, p))) \
        if "tool_calls" in f else ()
    results = tuple(ctx.seq(f["tool_results"], f"{field}.tool_results", lambda n, p: _tool_result(ctx, n, p))) \
        if "tool_results" in f else ()
    return Turn(kind=kind, text=text, tool_calls=calls, tool_results=results)


def _tool_call(ctx: NodeReader, node: yaml.Node, field: str) -> ToolCallSpec:
    c = ctx.mapping(node, field, ("name", "input", "arguments"))
    if "name" not in c or ("input" in c and "arguments" in c):
        raise ctx.fail(node, field, "expected a 'name' and at most one of 'input' or 'arguments'")
    key = "arguments" if "arguments" in c else "input"
    params = more.system_fields(ctx, c[key], f"{field}.{key}") if key in c else {}
    return ToolCallSpec(ctx.name(c["name"], f"{field}.name"), params, key)  # type: ignore[arg-type]


def _tool_result(ctx: NodeReader, node: yaml.Node, field: str) -> ToolResultSpec:
    r = ctx.mapping(node, field, ("content", "is_error"))
    if "content" not in r:
        raise ctx.fail(node, field, "expected 'content'")
    return ToolResultSpec(ctx.text(r["content"], f"{field}.content"),
                          ctx.boolean(r["is_error"], f"{field}.is_error") if "is_error" in r else False)


def _step(ctx: NodeReader, node: yaml.Node, field: str, facts: dict[str, Fact]) -> Step:
    kinds = ("session", "advance", "dream", "recall", "forget", "check", "lock", "fault", "state")
    extra = ("turns", "extract", "expect_extract", "queued_behind", "expect_trailing")
    top = ctx.mapping(node, field, (*kinds, *extra))
    present = [k for k in kinds if k in top]
    if len(present) != 1:
        raise ctx.fail(node, field, f"expected exactly one of {', '.join(kinds)}")
    kind = present[0]
    if kind != "session" and any(k in top for k in extra):
        bad = next(k for k in extra if k in top)
        raise ctx.fail(node, f"{field}.{bad}", f"only allowed on a session step, not on {kind}")
    value = top[kind]
    here = f"{field}.{kind}"
    if kind == "session":
        return _session(ctx, top, value, field, here)
    if kind == "advance":
        return AdvanceStep(delta=ctx.duration(value, here))
    if kind == "dream":
        d = ctx.mapping(value, here, ("force", "expect_status", "expect_reason", *more.OUTCOME_KEYS, "expect_deduped")) \
            if not _is_null(value) else {}
        return DreamStep(
            outcome=more.outcome(ctx, d, here, count_key="expect_deduped"),
            force=ctx.boolean(d["force"], f"{here}.force") if "force" in d else False,
            expect_status=ctx.string(d["expect_status"], f"{here}.expect_status", choices=DREAM_STATUSES)
            if "expect_status" in d else None,
            expect_reason=ctx.string(d["expect_reason"], f"{here}.expect_reason", choices=DREAM_REASONS)
            if "expect_reason" in d else None,
        )
    if kind == "recall":
        return more.recall(ctx, value, here, facts)
    if kind == "forget":
        f = ctx.mapping(value, here, ("query", "expect_removed", "strategy", *more.OUTCOME_KEYS, "expect_removed_count",
                                      "expect_removed_ids", "options"))
        if "query" not in f:
            raise ctx.fail(value, here, "expected a 'query'")
        return ForgetStep(
            outcome=more.outcome(ctx, f, here, count_key="expect_removed_count"),
            query=ctx.text(f["query"], f"{here}.query"),
            options=more.system_fields(ctx, f["options"], f"{here}.options") if "options" in f else {},
            expect_removed=ctx.fact_ids(f["expect_removed"], f"{here}.expect_removed", facts)
            if "expect_removed" in f else (),
            strategy=ctx.string(f["strategy"], f"{here}.strategy", choices=STRATEGIES) if "strategy" in f else None,
            expect_strategy=ctx.string(f["expect_strategy"], f"{here}.expect_strategy", choices=OUTCOME_STRATEGIES)
            if "expect_strategy" in f else None,
            expect_fallback=ctx.text(f["expect_fallback"], f"{here}.expect_fallback") if "expect_fallback" in f else None,
            expect_removed_ids=tuple(ctx.seq(f["expect_removed_ids"], f"{here}.expect_removed_ids", ctx.text))
            if "expect_removed_ids" in f else None,
        )
    if kind == "lock":
        lk = ctx.mapping(value, here, ("pid", "age"))
        return LockStep(
            pid=more.lock_pid(ctx, lk["pid"], f"{here}.pid") if "pid" in lk else "live",
            age=ctx.duration(lk["age"], f"{here}.age") if "age" in lk else timedelta(0),
        )
    if kind == "check":
        return more.check(ctx, value, here, facts)
    if kind == "state":
        st = ctx.mapping(value, here, ("file", "text"))
        if "file" not in st or "text" not in st:
            raise ctx.fail(value, here, "expected 'file' (meta or cursor) and 'text'")
        return StateStep(file=ctx.string(st["file"], f"{here}.file", choices=("meta", "cursor")),  # type: ignore[arg-type]
                         text=ctx.text(st["text"], f"{here}.text"))
    if kind == "fault":
        return more.fault(ctx, value, here)
    raise ctx.fail(node, field, f"unknown step kind {kind!r}")  # unreachable: `present` is checked above


def _session(ctx: NodeReader, top: dict[str, yaml.Node], value: yaml.Node, field: str, here: str) -> SessionStep:
    status = reason = None
    extra = Outcome()
    if "expect_extract" in top and "extract" in top and not ctx.boolean(top["extract"], f"{field}.extract"):
        raise ctx.fail(top["expect_extract"], f"{field}.expect_extract", "this session does not extract (extract: "
                       "false), so nothing here would be checked")  # round 17: it passed whatever it stated
    if "expect_extract" in top:
        e = ctx.mapping(top["expect_extract"], f"{field}.expect_extract",
                        ("status", "reason", "strategy", "fallback", "touched", "written", "event", "model_shown",
                         "model_hidden", "model_params", "details", "warnings"))
        extra = more.outcome(ctx, e, f"{field}.expect_extract", count_key="written", prefix="")
        if "status" in e:
            status = ctx.string(e["status"], f"{field}.expect_extract.status", choices=EXTRACT_STATUSES)
        if "reason" in e:
            reason = ctx.string(e["reason"], f"{field}.expect_extract.reason", choices=EXTRACT_REASONS)
    return SessionStep(
        session=ctx.name(value, here),
        turns=tuple(ctx.seq(top["turns"], f"{field}.turns", lambda n, p: _turn(ctx, n, p), lim.MAX_TURNS))
        if "turns" in top else (),
        extract=ctx.boolean(top["extract"], f"{field}.extract") if "extract" in top else True,
        expect_status=status,
        expect_reason=reason,
        queued_behind=more.queue_label(ctx, top["queued_behind"], f"{field}.queued_behind")
        if "queued_behind" in top else "",
        outcome=extra,
        expect_trailing=more.trailing(ctx, top["expect_trailing"], f"{field}.expect_trailing")
        if "expect_trailing" in top else None,
    )


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"



def _scripted(ctx: NodeReader, node: yaml.Node) -> tuple[Any, ...]:
    """Scripted model replies: a mapping is a JSON answer, a string is raw model text, {error: reason} raises."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise ctx.fail(node, "scripted_model", "expected a non-empty list of replies")
    return tuple(more.scripted_reply(ctx, item, f"scripted_model[{i}]")
                 for i, item in enumerate(ctx.seq(node, "scripted_model", lambda n, p: n)))


def _timeline(ctx: NodeReader, steps_node: yaml.Node, steps: list[Step], clock: datetime) -> None:
    """Every instant the replay reaches stays in the supported clock range."""
    now = clock
    for i, (node, step) in enumerate(zip(steps_node.value, steps, strict=True)):
        if isinstance(step, AdvanceStep):
            now += step.delta
            ctx.instant(node, f"steps[{i}].advance", now, "the clock")
        elif isinstance(step, LockStep):
            ctx.instant(node, f"steps[{i}].lock.age", now - step.age, "the lock's time")


TOP_KEYS: Final = ("id", "description", "tags", "clock", "facts", "memories", "steps", "strategy_overrides", "strategies",
                   "scripted_model", "systems", "design", "variant")
_STEP_INDEX: Final = re.compile(r"^[0-9]{1,6}$")


def load_scenario(path: Path, *, suite_root: Path | None = None) -> Scenario:
    """Parse and validate one scenario file; raise ``ScenarioError`` with ``file:line: field: expected``."""
    root = compose_bounded(read_bounded(path), path)
    ctx = NodeReader(path)
    if root is None:
        raise ctx.fail(None, "scenario", "expected a mapping with 'steps', got an empty file")
    if not isinstance(root, yaml.MappingNode):
        raise ctx.fail(root, "scenario", f"expected a mapping with 'steps', got {node_text(root)!r:.60}")
    top = ctx.mapping(root, "", TOP_KEYS)
    if "steps" not in top:
        raise ctx.fail(root, "steps", "expected a list of steps")
    clock = ctx.clock(top["clock"], "clock") if "clock" in top else datetime(2026, 1, 1, tzinfo=UTC)
    facts = _facts(ctx, top["facts"]) if "facts" in top else {}
    default_id = str(path.relative_to(suite_root).with_suffix("")) if suite_root and path.is_relative_to(suite_root) \
        else path.stem
    default_id = one_line(default_id.replace("\\", "/"))
    if "id" not in top and lim.name_problem(default_id):
        raise ctx.fail(root, "id", f"the file name cannot be the scenario id ({lim.name_problem(default_id)}); "
                                   "set 'id:'")
    design = ctx.name(top["design"], "design") if "design" in top else ""
    ctx.design = design  # `touched` names the design's memory kinds
    steps_node = top["steps"]
    steps = ctx.seq(steps_node, "steps", lambda n, p: _step(ctx, n, p, facts), lim.MAX_STEPS)
    if not steps:
        raise ctx.fail(steps_node, "steps", "expected at least one step")
    _timeline(ctx, steps_node, steps, clock)
    steps = more.queue_groups(ctx, steps_node, steps)
    overrides: dict[int, str] = {}
    if "strategy_overrides" in top:
        for key, value in ctx.mapping(top["strategy_overrides"], "strategy_overrides", None).items():
            if not _STEP_INDEX.fullmatch(key) or int(key) >= len(steps):
                raise ctx.fail(value, f"strategy_overrides.{key}", f"expected a step index 0..{len(steps) - 1}")
            if int(key) in overrides:  # 1 and '01' name one step: one would silently win
                raise ctx.fail(value, f"strategy_overrides.{key}", f"step {int(key)} is named twice")
            overrides[int(key)] = ctx.string(value, f"strategy_overrides.{key}", choices=STRATEGIES)
            step = steps[int(key)]  # round 17: an override no step reads was accepted in silence
            if not isinstance(step, SessionStep | DreamStep | RecallStep | ForgetStep) or getattr(step, "strategy", None):
                why = "its own 'strategy' pins it" if getattr(step, "strategy", None) else \
                    f"a {type(step).__name__.removesuffix('Step').lower()} step runs no strategy"
                raise ctx.fail(value, f"strategy_overrides.{key}", f"step {int(key)} would never use it: {why}")
    tags_node = top.get("tags")
    strategies = tuple(ctx.seq(top["strategies"], "strategies", lambda n, p: ctx.string(n, p, choices=STRATEGIES))) \
        if "strategies" in top else ()
    if "strategies" in top and not strategies:  # round 17: [] ran every strategy, the opposite of what it says
        raise ctx.fail(top["strategies"], "strategies", "expected at least one strategy (leave 'strategies' out to "
                                                        "run with every strategy)")
    _dead_requirements(ctx, steps_node, steps, overrides, strategies)
    refuse_unrun_strategies(ctx, steps_node, steps, overrides, strategies)  # round 19
    no_model = bool(strategies) and not set(strategies) & set(MODEL_STRATEGIES)
    for i, (node, step) in enumerate(zip(steps_node.value, steps, strict=True)):  # what `run` fails every time
        if no_model and isinstance(step, FaultStep) and step.model:
            raise ctx.fail(node, f"steps[{i}].fault.model", f"a model fault needs a model: this scenario runs only "
                                                             f"with {', '.join(strategies)}, which call none")
    if "scripted_model" in top and no_model:
        raise ctx.fail(top["scripted_model"], "scripted_model", f"never used: this scenario runs only with "
                       f"{', '.join(strategies)}, and only a model strategy ({', '.join(MODEL_STRATEGIES)}) asks "
                       "the scripted model")  # round 17: the replies were accepted and ignored
    return Scenario(
        id=ctx.name(top["id"], "id") if "id" in top else default_id,
        path=path,
        description=ctx.text(top["description"], "description") if "description" in top else "",
        tags=tuple(ctx.seq(tags_node, "tags", ctx.name)) if tags_node is not None else (),
        clock=clock,
        facts=facts,
        memories=tuple(memories(ctx, top["memories"], facts, clock)) if "memories" in top else (),
        steps=tuple(steps),
        step_lines=tuple(n.start_mark.line + 1 for n in steps_node.value),
        strategy_overrides=overrides,
        strategies=strategies,
        scripted_model=_scripted(ctx, top["scripted_model"]) if "scripted_model" in top else None,
        systems=ctx.strings(top["systems"], "systems") if "systems" in top else (),
        design=design,
        variant=more.variant(ctx, top) if "variant" in top else "", field_lines=ctx.lines)


def _dead_requirements(ctx: NodeReader, steps_node: yaml.Node, steps: list[Step], overrides: dict[int, str],
                       strategies: tuple[str, ...]) -> None:
    """Refuse a per-strategy ``require`` (``require: {model: {recall: 1}}``) for a strategy the probe never runs
    with: its own ``strategy``, its ``strategy_overrides`` entry, else the scenario's ``strategies`` decide. Such a
    threshold was never checked, yet ``validate --strict`` counted it as the probe's assertion (blind probe, round 17)."""
    for i, (node, step) in enumerate(zip(steps_node.value, steps, strict=True)):
        if not isinstance(step, RecallStep) or not step.require_by:
            continue
        runs = (step.strategy,) if step.strategy else (overrides[i],) if i in overrides else strategies
        dead = [name for name in step.require_by if runs and name not in runs]
        if dead:
            require = ctx.mapping(ctx.mapping(node, f"steps[{i}]", None)["recall"], f"steps[{i}].recall", None)["require"]
            key = next(k for k, _ in require.value if isinstance(k, yaml.ScalarNode) and k.value == dead[0]) \
                if isinstance(require, yaml.MappingNode) else require
            raise ctx.fail(key, f"steps[{i}].recall.require.{dead[0]}",
                           f"this probe runs only with {', '.join(runs)}: a requirement for {dead[0]} is never checked")


def _walk_error(exc: OSError) -> None:
    raise ScenarioError(f"{one_line(str(exc.filename))}: path: cannot list the directory ({exc.strerror or exc})")


def discover(paths: Iterable[Path]) -> list[tuple[Path, Path]]:
    """``(file, suite root)`` for every ``.yaml``/``.yml`` scenario under ``paths`` (cassettes excluded), sorted.

    A directory that holds no scenario, or one that cannot be listed (at any depth), is an error; symlinked
    directories are not followed; every file found is opened later as a regular file only."""
    found: list[tuple[Path, Path]] = []
    for p in paths:
        try:
            is_dir, exists = p.is_dir(), p.exists() or p.is_symlink()
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"{one_line(str(p))}:1: path: cannot be examined ({exc})") from None
        if is_dir:
            files = []
            for dirpath, dirnames, filenames in os.walk(p, onerror=_walk_error):
                rel = Path(dirpath).relative_to(p).parts
                if "cassettes" in rel:
                    dirnames.clear()
                    continue
                files += [Path(dirpath) / f for f in filenames if f.endswith((".yaml", ".yml"))]
            if not files:
                raise ScenarioError(f"{one_line(str(p))}: path: no scenario file (*.yaml, *.yml) in this directory")
            found += [(f, p) for f in sorted(files)]
        elif exists:
            found.append((p, p.parent))
        else:
            raise ScenarioError(f"{one_line(str(p))}:1: path: no such file or directory")
    return list(dict.fromkeys(found))


def load_all(paths: Iterable[Path], *, jobs: int = 1, packed: bool = False) -> list[Scenario]:
    """Load every scenario (on ``jobs`` cores when the suite is large); the first error raises. Duplicate ids are an
    error. ``packed``: each held as its pickle until replayed (``_packed``: a run's memory grows less with the suite)."""
    found = discover(paths)
    load = _load_packed if packed else _load_found
    with shelving() if packed else contextlib.nullcontext():
        scenarios = load_parallel(found, jobs, load) if jobs > 1 else None
        if scenarios is None:
            scenarios = [load(item) for item in found]
    if problems := duplicate_ids(scenarios):
        raise ScenarioError(problems[0])
    return scenarios


def _load_found(item: tuple[Path, Path]) -> Scenario:
    return load_scenario(item[0], suite_root=item[1])


def _load_packed(item: tuple[Path, Path]) -> Scenario:
    return pack(load_scenario(item[0], suite_root=item[1]))


def duplicate_ids(scenarios: Iterable[Scenario]) -> list[str]:
    """One ``file:1: id: …`` line per scenario whose id an earlier one already has."""
    seen: dict[str, Scenario] = {}  # the scenario, not its path: a packed one reads its path from a fresh copy
    problems = []
    for s in scenarios:
        if s.id in seen:
            problems.append(f"{one_line(str(s.path))}:1: id: duplicate scenario id {s.id!r} "
                            f"(also in {one_line(str(seen[s.id].path))})")
        seen.setdefault(s.id, s)
    return problems

