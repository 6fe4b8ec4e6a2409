"""Scenario-language extensions: outcome expectations for every operation, fault steps, store-wide checks."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Final

import yaml

from harness.scenario import _limits as lim
from harness.scenario._impossible import refuse_contradictions, refuse_impossible
from harness.scenario._registry import OUTCOME_STRATEGIES, STRATEGY_NAMES
from harness.scenario._types import (
    CheckStep,
    EntryExpect,
    Fact,
    FaultStep,
    Outcome,
    RecallStep,
    Scalar,
    SessionStep,
    Step,
    TrailingExpect,
)
from harness.scenario._yaml import NodeReader

STRATEGIES: Final = STRATEGY_NAMES

MODEL_FAULTS: Final = ("timeout", "connection", "rate_limit", "server_error", "malformed")
IO_FAULTS: Final = ("write_error", "vanish")
EXTRACT_STATUSES: Final = ("completed", "skipped", "failed")
OUTCOME_KEYS: Final = ("expect_strategy", "expect_fallback", "expect_touched", "expect_event", "expect_model_shown",
                        "expect_model_hidden", "expect_model_params", "expect_details", "expect_warnings")
"""Outcome keys shared by dream, forget and recall steps (plus a count key per kind)."""
MODEL_PARAMS: Final = ("purpose", "timeout_s", "max_tokens", "temperature")
"""What ``model_params`` can pin: the fields of every model request a step makes."""
TOPICS: Final = ("user", "feedback", "project", "reference")
"""The file design's memory kinds (qwen spec §2): what its extract, dream and forget report ``touched``."""
SQLITE_TYPES: Final = ("fact", "preference", "skill", "context", "rule", "error", "persona_trait")
"""The SQLite design's memory types as v2 writes them (s1 spec §1, the ``type`` column): what its extraction reports
``touched``. A scenario of ``design: s1-sqlite`` names these; any other names ``TOPICS``."""


def touched_kinds(design: str) -> tuple[str, ...]:
    """The names a ``touched`` list of a scenario of ``design`` may use."""
    return SQLITE_TYPES if design == "s1-sqlite" else TOPICS


def _touched(ctx: NodeReader, node: yaml.Node, field: str) -> str:
    """One name of a ``touched`` list; a name of the other vocabulary says whose it is (a misspelled ``design``
    otherwise reads as a wrong name: ``design: s1-sqlit`` with ``touched: [fact]``)."""
    kinds = touched_kinds(ctx.design)
    value = ctx.string(node, field)
    if value not in kinds:
        other = "s1-sqlite design's kinds" if value in SQLITE_TYPES else "file topics" if value in TOPICS else ""
        hint = f" ({value!r} is one of the {other}; this scenario's design is {ctx.design or 'none'})" if other else ""
        raise ctx.fail(node, field, f"expected one of {', '.join(kinds)}, got {value!r:.60}{hint}")
    return value


def outcome(ctx: NodeReader, nodes: dict[str, yaml.Node], here: str, *, count_key: str | None = None,
            prefix: str = "expect_") -> Outcome:
    """An ``Outcome`` from ``<prefix>strategy``, ``<prefix>fallback``, ``<prefix>touched``, ``<count_key>`` and
    ``<prefix>event`` keys of an already-checked mapping."""

    def key(name: str) -> str:
        return f"{prefix}{name}"

    return Outcome(
        strategy=ctx.string(nodes[key("strategy")], f"{here}.{key('strategy')}", choices=OUTCOME_STRATEGIES)
        if key("strategy") in nodes else None,
        fallback=ctx.text(nodes[key("fallback")], f"{here}.{key('fallback')}") if key("fallback") in nodes else None,
        touched=tuple(ctx.seq(nodes[key("touched")], f"{here}.{key('touched')}",
                              lambda n, p: _touched(ctx, n, p)))
        if key("touched") in nodes else None,
        count=ctx.integer(nodes[count_key], f"{here}.{count_key}") if count_key and count_key in nodes else None,
        event=event(ctx, nodes[key("event")], f"{here}.{key('event')}") if key("event") in nodes else {},
        **model_seen(ctx, nodes, here, prefix),
        **reported(ctx, nodes, here, prefix),
    )


def reported(ctx: NodeReader, nodes: dict[str, yaml.Node], here: str, prefix: str = "expect_") -> dict[str, Any]:
    """``details`` / ``warnings`` of an Outcome from ``<prefix>details`` / ``<prefix>warnings``."""
    out: dict[str, Any] = {}
    if f"{prefix}details" in nodes:
        out["details"] = system_fields(ctx, nodes[f"{prefix}details"], f"{here}.{prefix}details")
    if f"{prefix}warnings" in nodes:
        out["warnings"] = ctx.phrases(nodes[f"{prefix}warnings"], f"{here}.{prefix}warnings")
    return out


def model_seen(ctx: NodeReader, nodes: dict[str, yaml.Node], here: str, prefix: str = "expect_") -> dict[str, Any]:
    """``model_shown`` / ``model_hidden`` of an Outcome from ``<prefix>model_shown`` / ``<prefix>model_hidden``."""
    out: dict[str, Any] = {}
    for name in ("model_shown", "model_hidden"):
        if f"{prefix}{name}" in nodes:
            out[name] = ctx.phrases(nodes[f"{prefix}{name}"], f"{here}.{prefix}{name}")
    if f"{prefix}model_params" in nodes:
        out.update(model_params(ctx, nodes[f"{prefix}model_params"], f"{here}.{prefix}model_params"))
    return out


def model_params(ctx: NodeReader, node: yaml.Node, here: str) -> dict[str, Any]:
    """``model_params``: parameters every request carries (``{timeout_s: 30}``: ``model_params``), or per purpose
    when a value is not a scalar (``{sqlite-memory-extract: {max_tokens: 1024}}``: ``model_params_by``)."""
    items = ctx.mapping(node, here, None)
    if all(isinstance(v, yaml.ScalarNode) for v in items.values()):
        return {"model_params": _params(ctx, node, here, MODEL_PARAMS)}
    by: dict[str, dict[str, Scalar]] = {}
    for purpose, value in items.items():
        field = f"{here}.{purpose}"
        if problem := lim.bad_char(purpose, allow_newlines=False):
            raise ctx.fail(value, field, f"{problem} in a purpose")
        if purpose in MODEL_PARAMS:
            raise ctx.fail(value, field, f"{purpose!r} is a parameter, not a purpose: pin it on every request "
                                         f"({purpose}: <value>) or under a purpose (<purpose>: {{{purpose}: <value>}}),"
                                         " not both forms in one model_params")
        if not isinstance(value, yaml.MappingNode):
            raise ctx.fail(value, field, "expected a mapping of parameters: this model_params names purposes (each key "
                                         "a request's purpose, each value the parameters its requests carry)")
        by[purpose] = _params(ctx, value, field, MODEL_PARAMS[1:])
    return {"model_params_by": by}


def _params(ctx: NodeReader, node: yaml.Node, here: str, known: tuple[str, ...]) -> dict[str, Scalar]:
    params = system_fields(ctx, node, here)
    if unknown := sorted(set(params) - set(known)):
        said = "; the purpose is this mapping's key" if unknown[0] == "purpose" else ""
        raise ctx.fail(node, here, f"unknown parameter {unknown[0]!r} (known: {', '.join(known)}){said}")
    nodes = ctx.mapping(node, here, None)
    for name, value in params.items():  # the schema's types (blind probe, round 17: temperature: hot was accepted)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        wrong = {"purpose": not isinstance(value, str), "max_tokens": not number or not isinstance(value, int)
                 }.get(name, not number)
        if wrong:
            what = {"purpose": "a purpose name", "max_tokens": "an integer"}.get(name, "a number")
            raise ctx.fail(nodes[name], f"{here}.{name}", f"expected {what}, got {value!r:.60}")
    return params


def event(ctx: NodeReader, node: yaml.Node, here: str) -> dict[str, Scalar]:
    """The event fields an ``expect_event`` names: any names, scalar values."""
    return system_fields(ctx, node, here)


def fault(ctx: NodeReader, node: yaml.Node, here: str) -> FaultStep:
    f = ctx.mapping(node, here, ("model", "io", "match", "times"))
    if ("model" in f) == ("io" in f):
        raise ctx.fail(node, here, "expected exactly one of 'model' or 'io'")
    return FaultStep(
        model=ctx.string(f["model"], f"{here}.model", choices=MODEL_FAULTS) if "model" in f else None,
        io=ctx.string(f["io"], f"{here}.io", choices=IO_FAULTS) if "io" in f else None,
        match=ctx.text(f["match"], f"{here}.match") if "match" in f else "*",
        times=ctx.integer(f["times"], f"{here}.times", minimum=1) if "times" in f else 1,
    )


def entries(ctx: NodeReader, node: yaml.Node, here: str) -> tuple[EntryExpect, ...]:
    def one(item: yaml.Node, field: str) -> EntryExpect:
        e = ctx.mapping(item, field, ("record", "summary", "why", "how_to_apply"))
        if "record" not in e:
            raise ctx.fail(item, field, "expected a 'record' (the record id or file path)")
        return EntryExpect(**{k: ctx.text(v, f"{field}.{k}") for k, v in e.items()})

    return tuple(ctx.seq(node, here, one))


_RECALL_KEYS: Final = ("query", "expect", "k", "require", "exclude_surfaced", "prompt_contains", "prompt_excludes",
                       "strategy",
                       "expect_selected", "expect_strategy", "expect_fallback", "forbid", "expect_covered", "measure",
                       "expect_event", "expect_model_shown", "expect_model_hidden", "expect_model_params",
                       "expect_details", "options")
REQUIRE_METRICS: Final = ("precision", "recall", "f1", "mrr", "ndcg", "abstention")


def _requirement(ctx: NodeReader, node: yaml.Node, field: str, metric: str, expect: tuple[str, ...]) -> float:
    value = ctx.number(node, field)
    if metric == "abstention" and expect:
        raise ctx.fail(node, field, "abstention applies only to probes that expect nothing (expect: [])")
    if metric in ("mrr", "ndcg") and not expect:
        raise ctx.fail(node, field, f"{metric} is undefined when nothing is expected; use abstention")
    if metric == "recall" and not expect:  # round 17: a threshold that held whatever was selected
        raise ctx.fail(node, field, "recall is 1 whenever nothing is expected, so this could never fail; use abstention")
    return value


def recall(ctx: NodeReader, value: yaml.Node, here: str, facts: dict[str, Fact]) -> RecallStep:
    r = ctx.mapping(value, here, _RECALL_KEYS)
    if "query" not in r:
        raise ctx.fail(value, here, "expected a 'query'")
    require: dict[str, float] = {}
    require_by: dict[str, dict[str, float]] = {}
    expect = ctx.fact_ids(r["expect"], f"{here}.expect", facts) if "expect" in r else ()
    if "require" in r:
        for key, v in ctx.mapping(r["require"], f"{here}.require", (*REQUIRE_METRICS, *STRATEGIES)).items():
            if key in STRATEGIES:
                require_by[key] = {m: _requirement(ctx, x, f"{here}.require.{key}.{m}", m, expect)
                                   for m, x in ctx.mapping(v, f"{here}.require.{key}", REQUIRE_METRICS).items()}
            else:
                require[key] = _requirement(ctx, v, f"{here}.require.{key}", key, expect)
    return refuse_impossible(ctx, r, here, RecallStep(
        query=ctx.text(r["query"], f"{here}.query"),
        expect=expect,
        k=ctx.integer(r["k"], f"{here}.k", minimum=1) if "k" in r else None,
        require=require,
        require_by=require_by,
        measure=ctx.boolean(r["measure"], f"{here}.measure") if "measure" in r else False,
        outcome=Outcome(event=event(ctx, r["expect_event"], f"{here}.expect_event") if "expect_event" in r else {},
                        **model_seen(ctx, r, here), **reported(ctx, r, here)),
        exclude_surfaced=ctx.boolean(r["exclude_surfaced"], f"{here}.exclude_surfaced") if "exclude_surfaced" in r else False,
        prompt_contains=ctx.phrases(r["prompt_contains"], f"{here}.prompt_contains") if "prompt_contains" in r else (),
        prompt_excludes=ctx.phrases(r["prompt_excludes"], f"{here}.prompt_excludes") if "prompt_excludes" in r else (),
        strategy=ctx.string(r["strategy"], f"{here}.strategy", choices=STRATEGIES) if "strategy" in r else None,
        options=system_fields(ctx, r["options"], f"{here}.options") if "options" in r else {},
        expect_selected=ctx.strings(r["expect_selected"], f"{here}.expect_selected") if "expect_selected" in r else None,
        expect_strategy=ctx.string(r["expect_strategy"], f"{here}.expect_strategy", choices=OUTCOME_STRATEGIES)
        if "expect_strategy" in r else None,
        expect_fallback=ctx.text(r["expect_fallback"], f"{here}.expect_fallback") if "expect_fallback" in r else None,
        forbid=ctx.fact_ids(r["forbid"], f"{here}.forbid", facts) if "forbid" in r else (),
        expect_covered=ctx.fact_ids(r["expect_covered"], f"{here}.expect_covered", facts) if "expect_covered" in r else None,
    ))


_CHECK_KEYS: Final = ("facts_present", "facts_absent", "index_within_limits", "max_entries_per_fact", "files_present",
                      "files_absent", "index_contains", "index_lines", "no_stray_files", "loaded_index_contains", "system",
                      "only_files", "index_order", "entries", "lock_held")


def system_fields(ctx: NodeReader, node: yaml.Node, field: str) -> dict[str, str | int | float | bool]:
    """A mapping of names to scalars, passed to the system under test untouched."""
    out: dict[str, str | int | float | bool] = {}
    for key, value in ctx.mapping(node, field, None).items():
        ctx.lines[f"{field}.{key}"] = value.start_mark.line + 1
        if problem := lim.bad_char(key, allow_newlines=False):
            raise ctx.fail(node, f"{field}.{key}", f"{problem} in a key")
        scalar = ctx.scalar(value, f"{field}.{key}")
        if not isinstance(scalar, (str, int, float, bool)) or (isinstance(scalar, float) and not math.isfinite(scalar)):
            raise ctx.fail(value, f"{field}.{key}", f"expected text, a finite number or true/false, got {scalar!r}")
        out[key] = ctx.text(value, f"{field}.{key}") if isinstance(scalar, str) else scalar  # control characters
    return out


def check(ctx: NodeReader, value: yaml.Node, here: str, facts: dict[str, Fact]) -> CheckStep:
    c = ctx.mapping(value, here, _CHECK_KEYS)

    def texts(key: str) -> tuple[str, ...]:
        return ctx.phrases(c[key], f"{here}.{key}") if key in c else ()

    def fact_ids(key: str) -> tuple[str, ...]:
        return ctx.fact_ids(c[key], f"{here}.{key}", facts) if key in c else ()

    return refuse_contradictions(ctx, c, here, CheckStep(
        facts_present=fact_ids("facts_present"),
        facts_absent=fact_ids("facts_absent"),
        index_within_limits=ctx.boolean(c["index_within_limits"], f"{here}.index_within_limits")
        if "index_within_limits" in c else None,
        max_entries_per_fact=ctx.integer(c["max_entries_per_fact"], f"{here}.max_entries_per_fact", minimum=1)
        if "max_entries_per_fact" in c else None,
        files_present=texts("files_present"),
        files_absent=texts("files_absent"),
        index_contains=texts("index_contains"),
        index_lines=ctx.integer(c["index_lines"], f"{here}.index_lines") if "index_lines" in c else None,
        no_stray_files=ctx.boolean(c["no_stray_files"], f"{here}.no_stray_files") if "no_stray_files" in c else False,
        loaded_index_contains=texts("loaded_index_contains"),
        system=system_fields(ctx, c["system"], f"{here}.system") if "system" in c else {},
        only_files=texts("only_files") if "only_files" in c else None,
        index_order=texts("index_order"),
        entries=entries(ctx, c["entries"], f"{here}.entries") if "entries" in c else (),
        lock_held=ctx.boolean(c["lock_held"], f"{here}.lock_held") if "lock_held" in c else None,
    ))


TRAILING_KEYS: Final = ("runs", "sessions", "status", "strategy", "fallback", "touched", "written", "event")


def queue_label(ctx: NodeReader, node: yaml.Node, here: str) -> str:
    """``queued_behind``: ``true`` (a group of its own, labelled by the step), ``false`` or a group label."""
    value = ctx.scalar(node, here)
    if isinstance(value, bool):
        return f"#{here}" if value else ""
    if not isinstance(value, str):
        raise ctx.fail(node, here, f"expected true, false or a queue label, got {value!r:.60}")
    label = ctx.name(node, here)
    if label.startswith("#"):  # '#…' names the queue of a lone `true`
        raise ctx.fail(node, here, f"expected a queue label that does not start with '#', got {label!r:.60}")
    return label


def trailing(ctx: NodeReader, node: yaml.Node, here: str) -> TrailingExpect:
    """``expect_trailing``: what the trailing extraction(s) report when a queue group's in-flight one finishes."""
    f = ctx.mapping(node, here, TRAILING_KEYS)
    return TrailingExpect(
        runs=ctx.integer(f["runs"], f"{here}.runs") if "runs" in f else None,
        sessions=tuple(ctx.seq(f["sessions"], f"{here}.sessions", ctx.name)) if "sessions" in f else None,
        status=ctx.string(f["status"], f"{here}.status", choices=EXTRACT_STATUSES) if "status" in f else None,
        outcome=outcome(ctx, f, here, count_key="written", prefix=""),
    )


def queue_groups(ctx: NodeReader, steps_node: yaml.Node, steps: list[Step]) -> list[Step]:
    """Mark where each ``queued_behind`` group opens and closes, and check the groups make sense: one extraction is
    in flight at a time (spec §5.2), so groups do not overlap and no other extraction starts inside one; a queued
    step extracts; ``expect_trailing`` sits on a group's last step."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, step in enumerate(steps):
        if isinstance(step, SessionStep) and step.queued_behind:
            first.setdefault(step.queued_behind, i)
            last[step.queued_behind] = i
    out = list(steps)
    open_label = ""
    for i, (node, step) in enumerate(zip(steps_node.value, steps, strict=True)):
        if not isinstance(step, SessionStep):
            continue
        here = f"steps[{i}]"
        label = step.queued_behind
        if label and not step.extract:
            raise ctx.fail(node, f"{here}.queued_behind", "a queued request must extract (remove 'extract: false')")
        if open_label and label != open_label and (step.extract or label):
            other = "true" if open_label.startswith("#") else repr(open_label)
            raise ctx.fail(node, f"{here}.queued_behind" if label else f"{here}.session",
                           f"an extraction is in flight for queue {other} until steps[{last[open_label]}] (spec §5.2: "
                           f"one runs at a time); queue this request behind {other} or move it after that step")
        if step.expect_trailing is not None and (not label or last[label] != i):
            where = f"its queue's last step, steps[{last[label]}]" if label else "a step with 'queued_behind'"
            raise ctx.fail(node, f"{here}.expect_trailing", f"expected only on {where}")
        if not label:
            continue
        if first[label] == i:
            open_label = label
        if last[label] == i:
            open_label = ""
        out[i] = dataclasses.replace(step, opens_queue=first[label] == i, closes_queue=last[label] == i)
    return out


LOCK_PIDS: Final = ("live", "dead", "none", "not_utf8", "directory")


def lock_pid(ctx: Any, node: Any, field: str) -> str:
    """``live``, ``dead``, ``none``, ``not_utf8`` (bytes that are not text), ``directory`` (a directory where the
    lock file belongs), or a number the lock file names verbatim (any 1 to 10 digits: a PID the spec accepts, one
    above its bound, or one no process has)."""
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
        value = ctx.integer(node, field, minimum=1, maximum=9_999_999_999)
        return str(value)
    return str(ctx.string(node, field, choices=LOCK_PIDS))


DESIGN_VARIANTS: Final = {
    "s1-sqlite": "a quirk set of spec §7: seed or fixed, then +QUIRK / -QUIRK (e.g. fixed+q3_cjk_unsegmented)"}
"""The designs whose systems may be built in a variant, and what a variant names."""


def variant(ctx: NodeReader, top: dict[str, yaml.Node]) -> str:
    """``variant:``: only for a design that has variants (``DESIGN_VARIANTS``); an s1-sqlite quirk set must parse."""
    text = ctx.name(top["variant"], "variant")
    design = ctx.name(top["design"], "design") if "design" in top else ""
    if design not in DESIGN_VARIANTS:
        raise ctx.fail(top["variant"], "variant", f"only a scenario of design {', '.join(DESIGN_VARIANTS)} names a "
                                                  f"variant (this one's design: {design or 'none, portable'})")
    from memory_core.sqlite.quirks import Quirks

    try:
        Quirks.parse(text)
    except (ValueError, TypeError) as exc:
        raise ctx.fail(top["variant"], "variant", f"{exc}; expected {DESIGN_VARIANTS[design]}") from None
    return text


def scripted_reply(ctx: NodeReader, item: yaml.Node, here: str) -> Any:
    """One scripted reply: a JSON object (the answer), a string (raw model text), ``{error: <reason>, message: <text>}``
    (a model error), or ``{answer: <object or text>, pad_to: N}``: the answer's text followed by spaces up to exactly
    N characters (a reply at a size cap without megabytes of YAML)."""
    value = ctx.json_value(item, here)
    if isinstance(value, dict) and "error" in value:
        if set(value) - {"error", "message"} or not isinstance(value["error"], str) or not value["error"].strip() \
                or not isinstance(value.get("message", ""), str):
            raise ctx.fail(item, here, "expected {error: <reason>, message: <text>} (a reason such as timeout; the "
                                       "message optional)")
    elif isinstance(value, dict) and set(value) == {"answer", "pad_to"}:
        answer = value["answer"]
        if not isinstance(answer, dict | str):
            raise ctx.fail(item, f"{here}.answer", f"expected a JSON object or a string, got {answer!r:.60}")
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        size = value["pad_to"]
        if isinstance(size, bool) or not isinstance(size, int) or not len(text) <= size <= lim.MAX_REPLY_PAD:
            raise ctx.fail(item, f"{here}.pad_to", f"expected a whole number of characters from the answer's own "
                                                   f"{len(text)} to {lim.MAX_REPLY_PAD}, got {size!r:.60}")
        return text + " " * (size - len(text))
    elif not isinstance(value, dict | str):
        raise ctx.fail(item, here, f"expected a JSON object, a string or an error, got {value!r:.60}")
    return value
