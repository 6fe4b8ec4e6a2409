"""Scenario format v1 (DESIGN §2): records for facts, seeded memories and steps."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

TurnKind = Literal["user", "assistant", "tool_write"]


@dataclass(frozen=True, slots=True)
class Fact:
    """A gold fact planted in the conversation."""

    id: str
    type: str
    match: tuple[str, ...]
    """Phrases that must all appear (case-insensitive) for a doc or entry to cover the fact."""


@dataclass(frozen=True, slots=True)
class SeedMemory:
    """A topic file present before step 1."""

    path: str
    type: str = "user"
    name: str = ""
    description: str = ""
    body: str = ""
    facts: tuple[str, ...] = ()
    age: timedelta = timedelta(0)
    raw: str | None = None
    """Exact file text (for malformed or CRLF files); overrides name/description/type/body."""
    raw_pad: int | None = None
    """With ``raw``: the file is ``raw`` followed by filler lines up to exactly this many UTF-8 bytes (a file at a
    size cap without a megabyte of YAML)."""
    system: dict[str, str | int | float | bool] = field(default_factory=dict)
    """System-specific seed fields passed through untouched (e.g. the SQLite memory's importance or duration)."""
    source: tuple[int, int] = field(default=(0, 1), compare=False, repr=False)
    """Where the file wrote it: its ``memories[]`` index and the line of its ``system:`` fields (else of the entry),
    so a field the system refuses is located (``repeat`` copies share their entry's)."""


def raw_text(memory: SeedMemory) -> str | None:
    """The file text a ``raw`` memory seeds: ``raw``, padded to ``raw_pad`` bytes with lines of ``x`` (79 + newline)."""
    if memory.raw is None or memory.raw_pad is None:
        return memory.raw
    missing = memory.raw_pad - len(memory.raw.encode("utf-8"))
    line = "x" * 79 + "\n"
    return memory.raw + line * (missing // len(line)) + "x" * (missing % len(line))


@dataclass(frozen=True, slots=True)
class Turn:
    kind: TurnKind
    text: str
    tool_calls: tuple[ToolCallSpec, ...] = ()
    """Tools the turn called (``name`` and its ``input`` parameters), in order: what a system may show its
    extraction model as tool context (the SQLite spec §3.3)."""
    tool_results: tuple[ToolResultSpec, ...] = ()
    """What those tools returned (``content``, ``is_error``)."""


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    input: dict[str, Scalar] = field(default_factory=dict)
    key: Literal["input", "arguments"] = "input"
    """Which key carries the parameters in the turn as a system receives it (providers differ)."""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, self.key: dict(self.input)}


@dataclass(frozen=True, slots=True)
class ToolResultSpec:
    content: str
    is_error: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"content": self.content, "is_error": self.is_error}


Scalar = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an operation's result must say beyond status and reason (every field optional)."""

    strategy: str | None = None
    """The strategy that actually ran (``none`` | ``heuristic`` | ``model`` | a ranked one)."""
    fallback: str | None = None
    """The fallback reason (``none``: the model path must not have fallen back)."""
    touched: tuple[str, ...] | None = None
    """The exact set of topics (types) written."""
    count: int | None = None
    """extract: records written; dream: entries deduped; forget: ids removed."""
    event: dict[str, Scalar] = field(default_factory=dict)
    """Fields the operation's event must carry (``name``, ``status``, ``skipped_reason``, ``fallback_reason``…)."""
    model_shown: tuple[str, ...] = ()
    """Phrases the model's request during this step must contain (each in some request; no request fails)."""
    model_hidden: tuple[str, ...] = ()
    """Phrases no model request during this step may contain."""
    model_params: dict[str, Scalar] = field(default_factory=dict)
    """Parameters every model request of this step must carry (``timeout_s``, ``max_tokens``, ``temperature``,
    ``purpose``); no request fails it."""
    model_params_by: dict[str, dict[str, Scalar]] = field(default_factory=dict)
    """``model_params`` per purpose: every model request of this step has one of these purposes and carries its
    parameters, and each purpose is requested at least once (the form ``{purpose: {max_tokens: …}}``)."""
    details: dict[str, Scalar] = field(default_factory=dict)
    """System-specific outcome fields the result must report with these values (an unreported name fails)."""
    warnings: tuple[str, ...] | None = None
    """Phrases that must each appear in some warning of the result; ``()``: the result carries no warning."""

    def stated(self) -> bool:
        return any(v is not None for v in (self.strategy, self.fallback, self.touched, self.count, self.warnings)) or \
            bool(self.event or self.model_shown or self.model_hidden or self.details or self.model_params
                 or self.model_params_by)


@dataclass(frozen=True, slots=True)
class SessionStep:
    session: str
    turns: tuple[Turn, ...]
    extract: bool = True
    expect_status: str | None = None
    expect_reason: str | None = None
    queued_behind: str = ""
    """Non-empty: the label of the in-flight extraction this request arrives behind (a trailing request, spec
    §5.2). ``queued_behind: true`` is a label of its own; steps sharing a label queue behind the same extraction."""
    outcome: Outcome = Outcome()
    opens_queue: bool = False
    """The first step of its queue group: an extraction is in flight from just before this step's request."""
    closes_queue: bool = False
    """The last step of its queue group: the in-flight extraction finishes after this step's request and the
    trailing extraction(s) run."""
    expect_trailing: TrailingExpect | None = None
    """What the trailing run(s) must report when the group closes (only on the closing step)."""


@dataclass(frozen=True, slots=True)
class TrailingExpect:
    """The trailing extractions that run when a queue group's in-flight extraction finishes (spec §5.2)."""

    runs: int | None = None
    """How many trailing extractions ran (the spec: at most one; later requests supersede the queued one)."""
    status: str | None = None
    """Status of the last trailing run."""
    sessions: tuple[str, ...] | None = None
    """The sessions whose requests ran as trailing extractions, in order."""
    outcome: Outcome = Outcome()
    """Strategy, fallback, touched topics, records written (``count``) and event of the last trailing run."""


@dataclass(frozen=True, slots=True)
class AdvanceStep:
    delta: timedelta


@dataclass(frozen=True, slots=True)
class DreamStep:
    force: bool = False
    expect_status: str | None = None
    expect_reason: str | None = None
    outcome: Outcome = Outcome()


@dataclass(frozen=True, slots=True)
class RecallStep:
    query: str
    expect: tuple[str, ...] = ()
    k: int | None = None
    """The most memories recall may return, also the nDCG cutoff. None: the system's declared ``recall_limit``
    (and the system chooses its own limit). Stated: the harness asks for this limit and checks it."""
    require: dict[str, float] = field(default_factory=dict)
    """Per-probe minimums (``precision``, ``recall``, ``f1``, ``mrr``, ``ndcg``, ``abstention``) for every strategy."""
    require_by: dict[str, dict[str, float]] = field(default_factory=dict)
    """Minimums for one strategy only: ``require: {model: {precision: 0.5}}``."""
    measure: bool = False
    """A deliberate measurement that asserts nothing (``validate --strict`` accepts a probe only with this or an
    assertion that can fail)."""
    exclude_surfaced: bool = False
    """Exclude docs surfaced by earlier recall steps of this scenario (spec §7.1)."""
    prompt_contains: tuple[str, ...] = ()
    prompt_excludes: tuple[str, ...] = ()
    """Texts the prompt block must not contain (a truncated tail, a caveat that must not be there)."""
    strategy: str | None = None
    expect_selected: tuple[str, ...] | None = None
    """The exact ranked selection (relative paths), for parity checks against spec §7.3."""
    options: dict[str, Scalar] = field(default_factory=dict)
    """System-specific recall switches (capability ``recall_options``), e.g. the SQLite system's ``path``."""
    expect_strategy: str | None = None
    """The strategy that must have produced the answer (``none`` | ``heuristic`` | ``model``)."""
    expect_fallback: str | None = None
    """The model fallback reason that must be reported (``timeout``, ``invalid_json`` …)."""
    forbid: tuple[str, ...] = ()
    """Facts no selected memory may cover (e.g. facts forgotten earlier)."""
    expect_covered: tuple[str, ...] | None = None
    """The exact set of expected facts the selection must cover (metamorphic checks)."""
    outcome: Outcome = Outcome()

    def requirements(self, strategy: str) -> dict[str, float]:
        """The minimums that apply when ``strategy`` runs this probe."""
        return {**self.require, **self.require_by.get(strategy, {})}

    def assertions(self) -> list[str]:
        """What this probe states that can fail (empty: it asserts nothing)."""
        out = [f"require {k}" for k, v in self.require.items() if v > 0]
        out += [f"require {s}.{k}" for s, req in self.require_by.items() for k, v in req.items() if v > 0]
        for name in ("expect_selected", "expect_covered", "expect_strategy", "expect_fallback"):
            if getattr(self, name) is not None:
                out.append(name)
        out += ["forbid"] * bool(self.forbid) + ["prompt_contains"] * bool(self.prompt_contains)
        out += ["prompt_excludes"] * bool(self.prompt_excludes) + ["expect_event"] * bool(self.outcome.event)
        out += ["expect_model_shown"] * bool(self.outcome.model_shown + self.outcome.model_hidden)
        out += ["expect_details"] * bool(self.outcome.details) + ["expect_model_params"] * bool(
            self.outcome.model_params or self.outcome.model_params_by)
        return out


@dataclass(frozen=True, slots=True)
class ForgetStep:
    query: str
    expect_removed: tuple[str, ...] = ()
    strategy: str | None = None
    expect_strategy: str | None = None
    expect_fallback: str | None = None
    outcome: Outcome = Outcome()
    expect_removed_ids: tuple[str, ...] | None = None
    """The exact ids the system reports removed, in its order (the reference: ``path`` or ``path:i``, spec §8.1)."""
    options: dict[str, Scalar] = field(default_factory=dict)
    """System-specific forget switches (capability ``forget_options``), e.g. the SQLite system's ``max_delete``."""


@dataclass(frozen=True, slots=True)
class CheckStep:
    facts_present: tuple[str, ...] = ()
    facts_absent: tuple[str, ...] = ()
    index_within_limits: bool | None = None
    max_entries_per_fact: int | None = None
    files_present: tuple[str, ...] = ()
    files_absent: tuple[str, ...] = ()
    index_contains: tuple[str, ...] = ()
    index_lines: int | None = None
    no_stray_files: bool = False
    """No file may exist outside the memory root and its state files."""
    loaded_index_contains: tuple[str, ...] = ()
    """Texts the index must contain as loaded into the system prompt (load-time truncation, spec §4.3)."""
    system: dict[str, str | int | float | bool] = field(default_factory=dict)
    """System-specific checks by name (capability ``system_checks``; e.g. ``fts_integrity: true``)."""
    only_files: tuple[str, ...] | None = None
    """The exact set of record ids (files) in the store: nothing else, wherever it landed."""
    index_order: tuple[str, ...] = ()
    """Record ids whose index lines must appear in this order."""
    entries: tuple[EntryExpect, ...] = ()
    """Entries that must exist, field by field."""
    lock_held: bool | None = None
    """Whether a consolidation lock is held now (capability ``locks``)."""


@dataclass(frozen=True, slots=True)
class EntryExpect:
    """An entry of record ``record`` whose fields contain these texts (case-insensitive; empty: not checked)."""

    record: str
    summary: str = ""
    why: str = ""
    how_to_apply: str = ""


@dataclass(frozen=True, slots=True)
class FaultStep:
    """Inject a fault into what follows (extension): a model transport error, or an I/O fault in the store."""

    model: str | None = None
    """``timeout`` | ``connection`` | ``rate_limit`` | ``server_error`` | ``malformed``: the next model calls fail
    at the transport, beneath the model adapter, so the adapter's own error mapping runs."""
    io: str | None = None
    """``write_error`` (writes to matching files fail) | ``vanish`` (matching files disappear between scan and
    read): capability ``io_faults``."""
    match: str = "*"
    """A glob over record ids / store keys the I/O fault applies to."""
    times: int = 1
    """How many calls or file operations fail."""


@dataclass(frozen=True, slots=True)
class LockStep:
    """Plant a consolidation lock (extension): held by a live process (this one), a dead PID, a given number
    (digits, written verbatim), or none; aged."""

    pid: str = "live"
    """``live`` | ``dead`` | ``none`` | the digits of a PID."""
    age: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class StateStep:
    """Overwrite a state file beside the memories (extension; capability ``state_files``): ``meta`` or ``cursor``."""

    file: Literal["meta", "cursor"]
    text: str


Step = SessionStep | AdvanceStep | DreamStep | RecallStep | ForgetStep | CheckStep | LockStep | FaultStep | StateStep


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    path: Path
    description: str
    tags: tuple[str, ...]
    clock: datetime
    facts: dict[str, Fact]
    memories: tuple[SeedMemory, ...]
    steps: tuple[Step, ...]
    step_lines: tuple[int, ...] = ()
    """YAML line of each step, for messages."""
    strategy_overrides: dict[int, str] = field(default_factory=dict)
    strategies: tuple[str, ...] = ()
    """Run only these strategies (empty: every strategy of the run)."""
    systems: tuple[str, ...] = ()
    """Run only against these systems (by the name a system declares); empty: any system."""
    design: str = ""
    """The specification the scenario tests (``qwen-file``, ``s1-sqlite``): it runs against every system that
    declares that ``design``, whatever its name; empty: portable, any system."""
    variant: str = ""
    """The design's variant the system is built in (``s1-sqlite``: a quirk set of spec §7, e.g. ``seed`` or
    ``fixed+q3_cjk_unsegmented``); a system that offers no variants skips the scenario. Empty: the system as given."""
    scripted_model: tuple[Any, ...] | None = None
    """Replies of a scripted model used instead of the cassette for the ``model`` strategy (fallback tests)."""
    field_lines: dict[str, int] = field(default_factory=dict)
    """The YAML line of each key of a mapping passed to the system untouched (``steps[2].check.system.sql``,
    ``memories[0].system.via``, ``steps[1].recall.options.path``), for messages."""

    @property
    def digest(self) -> str:
        """A short hash of the scenario content (reported as ``memory.scenario.hash``)."""
        payload = json.dumps(
            {"facts": {k: asdict(v) for k, v in self.facts.items()}, "memories": [_content(m) for m in self.memories],
             "steps": [repr(s) for s in self.steps], "clock": self.clock.astimezone(UTC).isoformat()},
            sort_keys=True, default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _content(memory: SeedMemory) -> dict[str, Any]:
    """A seeded memory's fields for the digest: what it seeds, not where the file wrote it (``source``)."""
    return {k: v for k, v in asdict(memory).items() if k != "source"}
