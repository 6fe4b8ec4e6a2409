"""Write a ``Scenario`` back as v1 YAML (generated conversations and shrunk fuzz counterexamples)."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import yaml

from harness.scenario._types import (
    AdvanceStep,
    CheckStep,
    DreamStep,
    FaultStep,
    ForgetStep,
    LockStep,
    Outcome,
    RecallStep,
    Scenario,
    SessionStep,
    StateStep,
    Step,
    Turn,
)
from harness.scenario._yaml_lines import STR_TAG, number_tag


def duration(delta: timedelta) -> str:
    """The shortest exact ``<n><unit>`` form of a duration."""
    seconds = delta.total_seconds()
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    # plain decimals to the microsecond (a timedelta's resolution): never :g or repr, which write 2591999 s as
    # 2.592e+06s and a microsecond as 1e-06s, no duration the loader reads
    return f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"


def _step(step: Step) -> dict[str, Any]:
    if isinstance(step, SessionStep):
        out: dict[str, Any] = {"session": step.session, "turns": [_turn(t) for t in step.turns]}
        if not step.extract:
            out["extract"] = False
        if step.queued_behind:
            out["queued_behind"] = True if step.queued_behind.startswith("#") else step.queued_behind
        expect = {k: v for k, v in (("status", step.expect_status), ("reason", step.expect_reason)) if v is not None}
        expect.update(_outcome(step.outcome, "", "written"))
        if expect:
            out["expect_extract"] = expect
        if step.expect_trailing is not None:
            t = step.expect_trailing
            fields = (("runs", t.runs), ("sessions", list(t.sessions) if t.sessions is not None else None),
                      ("status", t.status))
            out["expect_trailing"] = {**{k: v for k, v in fields if v is not None}, **_outcome(t.outcome, "", "written")}
        return out
    if isinstance(step, AdvanceStep):
        return {"advance": duration(step.delta)}
    if isinstance(step, DreamStep):
        d = {k: v for k, v in (("force", step.force or None), ("expect_status", step.expect_status),
                               ("expect_reason", step.expect_reason)) if v is not None}
        d.update(_outcome(step.outcome, "expect_", "expect_deduped"))
        return {"dream": d}
    if isinstance(step, RecallStep):
        r: dict[str, Any] = {"query": step.query, "expect": list(step.expect)}
        if step.k is not None:
            r["k"] = step.k
        if step.require or step.require_by:
            r["require"] = {**step.require, **{s: dict(v) for s, v in step.require_by.items()}}
        for key in ("prompt_contains", "prompt_excludes", "forbid"):
            if getattr(step, key):
                r[key] = list(getattr(step, key))
        if step.measure:
            r["measure"] = True
        if step.exclude_surfaced:
            r["exclude_surfaced"] = True
        for key in ("strategy", "expect_strategy", "expect_fallback"):
            if getattr(step, key):
                r[key] = getattr(step, key)
        for key in ("expect_selected", "expect_covered"):
            if getattr(step, key) is not None:
                r[key] = list(getattr(step, key))
        r.update({k: v for k, v in _outcome(step.outcome, "expect_", "").items() if k not in r})
        if step.options:
            r["options"] = dict(step.options)
        return {"recall": r}
    if isinstance(step, ForgetStep):
        f: dict[str, Any] = {"query": step.query, "expect_removed": list(step.expect_removed)}
        for key in ("strategy", "expect_strategy", "expect_fallback"):
            if getattr(step, key):
                f[key] = getattr(step, key)
        f.update({k: v for k, v in _outcome(step.outcome, "expect_", "expect_removed_count").items() if k not in f})
        if step.expect_removed_ids is not None:
            f["expect_removed_ids"] = list(step.expect_removed_ids)
        if step.options:
            f["options"] = dict(step.options)
        return {"forget": f}
    if isinstance(step, LockStep):
        return {"lock": {"pid": int(step.pid) if step.pid.isdigit() else step.pid, "age": duration(step.age)}}
    if isinstance(step, StateStep):
        return {"state": {"file": step.file, "text": step.text}}
    if isinstance(step, FaultStep):
        if step.model is not None:
            return {"fault": {"model": step.model, "match": step.match, "times": step.times}}
        return {"fault": {"io": step.io, "match": step.match, "times": step.times}}
    assert isinstance(step, CheckStep)
    c: dict[str, Any] = {}
    for key in ("facts_present", "facts_absent", "files_present", "files_absent", "index_contains",
                "loaded_index_contains"):
        if getattr(step, key):
            c[key] = list(getattr(step, key))
    for key in ("index_within_limits", "max_entries_per_fact", "index_lines"):
        if getattr(step, key) is not None:
            c[key] = getattr(step, key)
    if step.no_stray_files:
        c["no_stray_files"] = True
    if step.only_files is not None:
        c["only_files"] = list(step.only_files)
    if step.index_order:
        c["index_order"] = list(step.index_order)
    if step.entries:
        c["entries"] = [{k: v for k, v in (("record", e.record), ("summary", e.summary), ("why", e.why),
                                           ("how_to_apply", e.how_to_apply)) if v} for e in step.entries]
    if step.lock_held is not None:
        c["lock_held"] = step.lock_held
    if step.system:
        c["system"] = dict(step.system)
    return {"check": c}


def _turn(t: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {t.kind: t.text}
    if t.tool_calls:
        out["tool_calls"] = [{"name": c.name, c.key: dict(c.input)} if c.input or c.key == "arguments"
                             else {"name": c.name} for c in t.tool_calls]
    if t.tool_results:
        out["tool_results"] = [{"content": r.content, "is_error": r.is_error} for r in t.tool_results]
    return out


def _outcome(o: Outcome, prefix: str, count_key: str) -> dict[str, Any]:
    """The outcome keys of a dream, recall or forget step (``expect_strategy`` …, and the step's count key)."""
    fields = ((f"{prefix}strategy", o.strategy), (f"{prefix}fallback", o.fallback),
              (f"{prefix}touched", list(o.touched) if o.touched is not None else None),
              (count_key, o.count if count_key else None), (f"{prefix}event", dict(o.event) or None),
              (f"{prefix}model_shown", list(o.model_shown) or None), (f"{prefix}model_hidden", list(o.model_hidden) or None),
              (f"{prefix}model_params", _params(o)), (f"{prefix}details", dict(o.details) or None),
              (f"{prefix}warnings", list(o.warnings) if o.warnings is not None else None))
    return {k: v for k, v in fields if v is not None}


def _params(o: Outcome) -> dict[str, Any] | None:
    """``model_params`` as written: the parameters of every request, or a mapping of purpose to parameters."""
    return dict(o.model_params) or {k: dict(v) for k, v in o.model_params_by.items()} or None


def scenario_to_dict(s: Scenario) -> dict[str, Any]:
    """The scenario as plain data in the v1 layout (key order as in DESIGN §2)."""
    out: dict[str, Any] = {"id": s.id, "description": s.description, "tags": list(s.tags),
                           "clock": s.clock.astimezone(UTC).isoformat().replace("+00:00", "Z")}
    if s.design:
        out["design"] = s.design
    if s.systems:
        out["systems"] = list(s.systems)
    if s.variant:
        out["variant"] = s.variant
    if s.strategies:
        out["strategies"] = list(s.strategies)
    if s.strategy_overrides:
        out["strategy_overrides"] = {str(i): v for i, v in sorted(s.strategy_overrides.items())}
    if s.scripted_model is not None:
        out["scripted_model"] = [_reply(r) for r in s.scripted_model]
    out["facts"] = {f.id: {"type": f.type, "match": list(f.match)} for f in s.facts.values()}
    if s.memories:
        mems = []
        for m in s.memories:
            item: dict[str, Any] = {"path": m.path}
            item.update({"name": m.name, "description": m.description, "type": m.type, "body": m.body})
            if m.raw is not None:  # the raw text is the file; the other fields are kept so the scenario reads back equal
                item = {"path": m.path, "raw": m.raw, **{k: v for k, v in item.items() if k != "path" and v and
                                                         (k, v) != ("type", "user")}}
            if m.raw_pad is not None:
                item["raw_pad"] = m.raw_pad
            if m.facts:
                item["facts"] = list(m.facts)
            if m.age:
                item["age"] = duration(m.age)
            if m.system:
                item["system"] = dict(m.system)
            mems.append(item)
        out["memories"] = mems
    out["steps"] = [_step(step) for step in s.steps]
    return out


class _Dumper(yaml.SafeDumper):
    """Strings the loader reads as YAML 1.2 does (``_yaml_lines.py``) go back so that it reads them unchanged: one
    holding NEL, U+2028 or U+2029 double-quoted (PyYAML then escapes them, where a plain or block scalar would take
    them for line breaks and indent the next line), one YAML 1.2 reads as a number (``1e0``) quoted."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if any(ch in data for ch in "\x85\u2028\u2029"):
        return dumper.represent_scalar(STR_TAG, data, style='"')
    if number_tag(STR_TAG, data) != STR_TAG:
        return dumper.represent_scalar(STR_TAG, data, style="'")
    return dumper.represent_str(data)


_Dumper.add_representer(str, _str)


def dump_yaml(data: dict[str, Any]) -> str:
    """Scenario data as YAML, keys in the given order."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def scenario_to_yaml(s: Scenario) -> str:
    """YAML text that ``load_scenario`` reads back to an equal scenario."""
    return dump_yaml(scenario_to_dict(s))


def _reply(reply: Any) -> Any:
    """A long reply ending in spaces goes back as ``{answer, pad_to}`` (it loads as the same text), so a reply at a
    size cap round-trips without megabytes of YAML."""
    if isinstance(reply, str) and len(reply) > 65_536 and reply.endswith(" "):
        return {"answer": reply.rstrip(" "), "pad_to": len(reply)}
    return reply
