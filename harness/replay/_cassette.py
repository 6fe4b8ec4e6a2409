"""Record/replay cassettes for every model call: one human-diffable JSONL file per cassette directory.

Key = sha256 of the canonical JSON of model + purpose + messages + schema + parameters. Replay returns the
recorded text, usage and latency exactly, then parses and validates it like a live answer (so a recorded invalid
answer reproduces the same fallback); a recorded provider error (timeout …) is raised again as the same
``ModelError``. An unrecorded call in replay mode raises ``CassetteMiss`` naming the scenario, step, purpose,
prompt version and key.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import CassetteMiss, HarnessError, one_line, unique_members, unreadable_json, unwritable
from harness.replay._entry_members import ENTRY, ERROR, RESPONSE, request_problem, unknown_member
from harness.replay._jsonl import strict_json
from harness.replay._models import ProbeContext
from harness.scenario._limits import MAX_RUN_FILE_BYTES
from harness.scenario._toml import key_line, parse_toml
from harness.scenario._yaml import decode_utf8, read_regular
from memory_core.errors import ModelError
from memory_core.litellm_model import LiteLLMModel
from memory_core.model import Model, ModelReply, ModelRequest, parse_json_lenient, validate_schema
from memory_core.prompts import all_prompt_versions
from memory_core.sqlite.templates import all_prompt_versions as sqlite_prompt_versions

CASSETTE_FILE: Final = "cassette.jsonl"
SETS_FILE: Final = "sets.toml"
UNRECORDED: Final = "unrecorded model call"
"""In every replay miss's message (a cassette's and the model proxy's): how `conformance` tells the cassettes' gap
from the system's fault."""
Mode = Literal["replay", "record", "live"]


def nearest_cassettes(start: Path, stop: Path | None = None) -> Path | None:
    """The nearest ``cassettes/`` at or above ``start`` (a scenario file or folder) that holds a set or a shelf of
    sets (``cassette.jsonl``, ``cassette-meta.json`` or ``sets.toml``), up to ``stop`` when ``start`` is under it.
    One rule for ``memharness run``, ``memharness record`` and the pytest plugin."""
    here = (start if start.is_dir() else start.parent).resolve()
    end = stop.resolve() if stop is not None else None
    while True:
        candidate = here / "cassettes"
        if any((candidate / name).is_file() for name in (CASSETTE_FILE, "cassette-meta.json", SETS_FILE)):
            return candidate
        if here == end or here.parent == here:
            return None
        here = here.parent


def resolve_set(directory: Path, name: str | None = None) -> Path:
    """The cassette set a directory means. A directory holding ``sets.toml`` (``default = "DIR"`` and
    ``[alias] short = "DIR"``) is a shelf of sets, one per subdirectory: ``name`` (a subdirectory or an alias)
    picks one, else its default. Any other directory is a set of its own (``name`` must then be None)."""
    shelf = directory / SETS_FILE
    if not shelf.is_file():
        if name is not None:
            raise HarnessError(f"{directory}: no {SETS_FILE} here, so there is no cassette set named {name!r}")
        return directory
    sets = parse_toml(shelf, text := _read_text(shelf))
    aliases, chosen = sets.get("alias", {}), name if name is not None else sets.get("default")
    where = f"{shelf}:{key_line(text, 'default')}: default" if name is None else f"--set: {shelf}"  # round 12: lines
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise HarnessError(f"{shelf}:{key_line(text, 'alias')}: alias: expected an [alias] table of strings")
    if not isinstance(chosen, str):
        raise HarnessError(f"{where}: expected default = \"DIR\" (a set of this shelf)")
    target = str(aliases.get(chosen, chosen))
    if "/" in target or target in ("", ".", "..") or not (directory / target).is_dir():
        known = sorted({*aliases, *(p.name for p in directory.iterdir() if (p / CASSETTE_FILE).is_file())})
        raise HarnessError(f"{where}: no cassette set {chosen!r} (known: {', '.join(known) or 'none'})")
    return directory / target


def request_key(model: str, request: ModelRequest) -> str:
    """The cassette key of a request."""
    payload = {
        "model": model, "purpose": request.purpose,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "schema": request.schema, "temperature": request.temperature, "max_tokens": request.max_tokens,
    }
    if request.grammar is not None:
        payload["grammar"] = request.grammar
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class Cassette:
    """The entries of one cassette directory, appended to as they are recorded."""

    directory: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, directory: Path) -> Cassette:
        """Load ``<directory>/cassette.jsonl`` (missing → empty). Every line must be one entry whose fields replay
        can use: anything else (truncated JSON, bytes that are not UTF-8, an empty line, a value or field of the
        wrong type, a missing field) is one ``<file>:<line>: <field>: malformed cassette entry (…)`` error."""
        cassette = cls(resolve_set(directory))
        path = cassette.directory / CASSETTE_FILE
        lines: dict[str, int] = {}
        if path.exists() or path.is_symlink():
            for n, line in enumerate(recording_lines(path), 1):
                entry, problem = _parse_entry(line)
                if problem is not None:
                    where, what = problem
                    raise HarnessError(f"{one_line(str(path))}:{n}: {where}: malformed cassette entry ({what})")
                if (first := lines.setdefault(entry["key"], n)) != n:  # round 14: the last was replayed unsaid
                    raise HarnessError(f"{one_line(str(path))}:{n}: key: {entry['key'][:16]}… is also on line {first}; "
                                       "a cassette holds one entry per call (which to replay is not the file's to leave open)")
                cassette.entries[entry["key"]] = entry
        return cassette

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: dict[str, Any]) -> None:
        """Store an entry and append it to the file."""
        append_entry(self.entries, self._lock, self.directory / CASSETTE_FILE, entry)

    def stale(self) -> Iterator[tuple[dict[str, Any], list[str]]]:
        """Entries recorded with a prompt template version that no longer matches the templates on disk."""
        current = {**all_prompt_versions(), **sqlite_prompt_versions()}  # both reference systems' templates
        for entry in self.entries.values():
            changed = []
            for part in str(entry.get("prompt_version", "")).split("+"):
                name = part.split("@", 1)[0]
                if name and current.get(name) != part:
                    changed.append(f"{part} -> {current.get(name, 'template removed')}")
            if changed:
                yield entry, changed


@dataclass
class CassetteModel:
    """A ``Model`` that replays, records or passes calls through a cassette."""

    cassette: Cassette
    model_name: str
    mode: Mode = "replay"
    inner: Model | None = None
    context: ProbeContext = field(default_factory=ProbeContext)
    adapter: LiteLLMModel | None = None
    """When set, replay goes through this litellm adapter with the recorded response as ``mock_response``."""

    @property
    def name(self) -> str:
        return self.model_name

    def query(self, request: ModelRequest) -> ModelReply:
        key = request_key(self.model_name, request)
        entry = self.cassette.entries.get(key)
        if entry is not None and self.mode != "live":
            return self._replay(entry, request)
        if self.mode == "replay" or self.inner is None:
            raise CassetteMiss(
                f"{UNRECORDED} in {self.context.scenario or '?'} step {self.context.step} "
                f"(purpose {request.purpose}, prompt {request.prompt_version}, key {key[:16]}): "
                f"{self.why_stale(request)}; record it with `memharness record` (the set {self.cassette.directory})"
            )
        base = {"key": key, "model": self.model_name, "purpose": request.purpose,
                "prompt_version": request.prompt_version, "scenario": self.context.scenario, "step": self.context.step,
                "request": {"messages": [{"role": m.role, "content": m.content} for m in request.messages],
                            "schema": request.schema, "grammar": request.grammar, "temperature": request.temperature,
                            "max_tokens": request.max_tokens}}
        try:
            reply = self.inner.query(request)
        except ModelError as exc:
            if self.mode == "record":
                self.cassette.append({**base, "error": {"reason": exc.reason, "message": str(exc)}})
            raise
        if self.mode == "record":
            self.cassette.append({**base, "response": {"text": reply.text, "model": reply.model,
                                                       "input_tokens": reply.input_tokens,
                                                       "output_tokens": reply.output_tokens,
                                                       "latency_ms": round(reply.latency_ms, 3),
                                                       "cost_usd": reply.cost_usd}})
        return reply

    def why_stale(self, request: ModelRequest) -> str:
        """Why this call has no recording: what differs from the entry recorded at the same scenario, step and
        purpose (template version, model, parameters, or what the model is shown), or that none was recorded."""
        def same(a: str, b: str) -> bool:  # a scenario's id depends on the suite root the run was given
            return a == b or a.endswith("/" + b) or b.endswith("/" + a)

        old = [e for e in self.cassette.entries.values() if e.get("step") == self.context.step
               and e.get("purpose") == request.purpose and same(str(e.get("scenario")), self.context.scenario)]
        if not old:
            return "never recorded here"
        e = old[-1]
        req = e.get("request") or {}
        if e.get("model") != self.model_name:
            return f"stale: recorded with model {e.get('model')}, this run asks {self.model_name}"
        if e.get("prompt_version") != request.prompt_version:
            return f"stale: template changed ({e.get('prompt_version')} -> {request.prompt_version})"
        params = [f"{k} {req.get(k)!r} -> {v!r}" for k, v in (("temperature", request.temperature),
                  ("max_tokens", request.max_tokens), ("schema", request.schema)) if req.get(k) != v]
        if params:
            return "stale: parameters changed (" + "; ".join(params) + ")"
        return "stale: same template and parameters, but what the model is shown changed (the memories or the query)"

    def _replay(self, entry: dict[str, Any], request: ModelRequest) -> ModelReply:
        if "error" in entry:
            raise ModelError(entry["error"]["message"], reason=entry["error"]["reason"])
        r = entry["response"]
        if self.adapter is not None:
            mock = {"id": f"cassette-{entry['key'][:12]}", "object": "chat.completion", "model": r["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": r["text"]}}],
                    "usage": {"prompt_tokens": r["input_tokens"], "completion_tokens": r["output_tokens"],
                              "total_tokens": r["input_tokens"] + r["output_tokens"]}}
            reply = self.adapter.query(request, mock_response=mock)
            return ModelReply(reply.data, reply.text, reply.model, reply.input_tokens, reply.output_tokens,
                              r["latency_ms"], replayed=True, cost_usd=r.get("cost_usd"))
        data = parse_json_lenient(r["text"])
        validate_schema(data, request.schema)
        return ModelReply(data, r["text"], r["model"], r["input_tokens"], r["output_tokens"], r["latency_ms"],
                          replayed=True, cost_usd=r.get("cost_usd"))


_KEY: Final = re.compile(r"[0-9a-f]{64}")
MAX_TOKENS: Final = 2**53
"""Token counts of a cassette entry: integers from 0 below 2**53 (exact as a float in every summary)."""
_TEXT_FIELDS: Final = ("model", "purpose", "prompt_version", "scenario")


def append_entry(entries: dict[str, dict[str, Any]], lock: threading.Lock, path: Path, entry: dict[str, Any]) -> None:
    """Keep a recorded entry by its key and append it to ``path`` (one JSON line, fsync'd: a recording is paid for
    in minutes, so an interrupt keeps every answer so far); an entry already kept is not written twice."""
    with lock:
        if entry["key"] in entries:
            return
        entries[entry["key"]] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def _kind(value: object) -> str:
    """A JSON value's kind, as the error names it (a number as itself, when short)."""
    if isinstance(value, float) or (type(value) is int and abs(value) < 10**15):
        return repr(value)
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _parse_entry(line: str) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """One cassette line as an entry, or ``(field, what is wrong)``: the fields replay reads are all checked here,
    so a loaded cassette never fails later with a KeyError or a TypeError."""
    entry, problem = strict_json(line, holder="a cassette", constants=True)
    if problem is not None:
        return {}, ("line", problem)
    if not isinstance(entry, dict):
        return {}, ("line", f"expected a JSON object, got {_kind(entry)}")
    key = entry.get("key")
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        return {}, ("key", "missing" if "key" not in entry else f"expected 64 lowercase hex digits, got {_kind(key)}")
    for name in _TEXT_FIELDS:  # each a string when present (null included: the recorder never writes one)
        if name in entry and not isinstance(entry[name], str):
            return {}, (name, f"expected a string, got {_kind(entry[name])}")
    if entry.get("step") is not None and (type(entry["step"]) is not int):
        return {}, ("step", f"expected an integer, got {_kind(entry['step'])}")
    if (shape := unknown_member(entry, ENTRY, "") or request_problem(entry.get("request"))) is not None:
        return {}, shape  # round 20: unknown members and a request of the wrong types loaded in silence
    if "error" in entry and "response" in entry:  # which one replay would answer with is not the file's to leave open
        return {}, ("response", "an entry holds a response or an error, not both")
    if "error" in entry:
        return entry, _check_fields(entry["error"], "error", {"reason": str, "message": str})
    if "response" not in entry:
        return {}, ("response", "missing (an entry holds a response or an error)")
    return entry, _check_fields(entry["response"], "response", {"text": str, "model": str, "input_tokens": int,
                                                               "output_tokens": int, "latency_ms": float})


def _check_fields(block: object, name: str, fields: dict[str, type]) -> tuple[str, str] | None:
    """``block`` is an object holding each of ``fields`` with its type (and an optional ``cost_usd``)."""
    if not isinstance(block, dict):
        return name, f"expected an object, got {_kind(block)}"
    if (unknown := unknown_member(block, RESPONSE if name == "response" else ERROR, name)) is not None:
        return unknown
    for field_name, want in {**fields, **({"cost_usd": float} if "cost_usd" in block else {})}.items():
        where = f"{name}.{field_name}"
        if field_name not in block:
            return where, "missing"
        value = block[field_name]
        if field_name == "cost_usd" and value is None:
            continue
        if want is str and not isinstance(value, str):
            return where, f"expected a string, got {_kind(value)}"
        if want is int and (type(value) is not int or not 0 <= value < MAX_TOKENS):
            return where, f"expected an integer from 0 below 2**53, got {_kind(value)}"
        if want is float and (type(value) not in (int, float) or not math.isfinite(value) or value < 0):
            return where, f"expected a finite number >= 0, got {_kind(value)}"
    return None


def recording_lines(path: Path) -> list[str]:
    """The lines of a recording file (a cassette, the model proxy's): read as ``_read_text`` does, split on ``\\n``
    only (not splitlines(): U+2028 may be in a reply), without the newline that ends the last line."""
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _read_text(path: Path) -> str:
    """A cassette file: regular (a FIFO or device never blocks), at most ``MAX_RUN_FILE_BYTES``, UTF-8."""
    return decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)


def read_meta(directory: Path) -> dict[str, Any]:
    """``cassette-meta.json``: which model and settings recorded this cassette."""
    path = resolve_set(directory) / "cassette-meta.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(text := _read_text(path), object_pairs_hook=unique_members)
    except json.JSONDecodeError as exc:  # every error names its line (round 12)
        raise HarnessError(f"{path}:{exc.lineno}: file: invalid JSON ({exc.msg})") from None
    except (RecursionError, ValueError) as exc:
        raise HarnessError(unreadable_json(path, text, "file: invalid JSON", exc)) from None
    if not isinstance(data, dict):  # never read as "no cassette-meta.json"
        raise HarnessError(f"{path}:1: file: expected a JSON object (model, api_base, timeout_scale, …), got "
                           f"{type(data).__name__}")
    for key, kinds, wanted in _META_TYPES:
        value = data.get(key)
        bad = value is not None and (not isinstance(value, kinds) or isinstance(value, bool))
        if isinstance(value, str) and (not value.strip() or not value.isprintable()):  # round 19: an ESC in the
            bad = True  # model's name reached summary.md raw and made junit.xml ill-formed (stale: "… asks <model>")
        if bad or (key == "timeout_scale" and isinstance(value, (int, float)) and not 0 < value < 1e6):
            line = next((n for n, t in enumerate(text.split("\n"), 1) if re.match(rf'\s*[{{,]?\s*"{key}"\s*:', t)), 1)
            raise HarnessError(f"{path}:{line}: {key}: expected {wanted}, got "
                               f"{one_line(json.dumps(value))[:60]}")
    return data


_META_TYPES: Final = (("model", (str,), "a litellm model string (one printable line)"),
                      ("api_base", (str,), "a URL (one printable line)"),
                      ("timeout_scale", (int, float), "a number above 0"), ("weights", (str,), "one printable line of text"))
"""The fields of ``cassette-meta.json`` the harness reads, with their JSON types (null: not given)."""


@dataclass(frozen=True)
class ModelSpec:
    """How the ``model`` strategy reaches a model."""

    cassettes: Path
    mode: Mode = "replay"
    model: str | None = None
    api_base: str | None = None
    timeout_scale: float = 1.0
    shelf: Path | None = None
    """The directory of cassette sets (``sets.toml``) that ``model:SET`` strategies pick from."""

    def __post_init__(self) -> None:  # fix (round 11): each scenario failed, blamed on the system (PermissionError)
        if self.mode == "record" and (locked := unwritable(self.cassettes / CASSETTE_FILE)) is not None:
            raise HarnessError(f"{one_line(str(self.cassettes))}: --record: {one_line(str(locked))} is not writable")

    def for_set(self, name: str | None) -> ModelSpec:
        """This spec for strategy ``model:NAME`` (NAME a set of the shelf, or an alias), or itself for ``model``."""
        if not name:
            return self
        target = resolve_set(self.shelf or self.cassettes, name)
        meta = read_meta(target)  # recording or calling live: the set's own endpoint and timeouts, unless given
        scale = self.timeout_scale if self.timeout_scale != 1.0 else float(meta.get("timeout_scale") or 1.0)
        return replace(self, cassettes=target, model=None, api_base=self.api_base or meta.get("api_base"),
                       timeout_scale=scale)

    def resolved_model(self) -> str:
        """``--model``, else the model named in the cassette's metadata."""
        name = self.model or read_meta(self.cassettes).get("model")
        if not name and (meta := resolve_set(self.cassettes) / "cassette-meta.json").exists():  # round 19: it said
            line = next((n for n, t in enumerate(_read_text(meta).split("\n"), 1) if '"model"' in t), 1)
            raise HarnessError(f"{meta}:{line}: model: missing (null or absent); name the set's model here, or pass "
                               "--model MODEL")  # "no cassette-meta.json" of a file that is there, naming no line
        if not name:
            raise HarnessError(f"no model named: pass --model MODEL (no cassette-meta.json in {self.cassettes})")
        return str(name)
