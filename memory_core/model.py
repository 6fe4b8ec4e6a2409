"""The model seam: a structured JSON side-query protocol, lenient parsing, and the scripted in-memory twin.

Only ``memory_core.litellm_model`` talks to a provider; everything else sees ``Model``.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

from memory_core.errors import ModelError, ReplayAborted

_FENCE: Final = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)
MAX_ANSWER_CHARS: Final = 4_000_000
"""A model answer longer than this is refused (``invalid_json``) before parsing."""
MAX_ANSWER_DEPTH: Final = 64
"""Deeper JSON is refused (``invalid_json``) before ``json.loads`` can recurse."""
MAX_ANSWER_ITEMS: Final = 5_000
"""The most items any array of an answer may hold (``too_many``): a 2,000-patch answer is fine."""


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: str
    """``system`` | ``user`` | ``assistant``."""
    content: str


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """A structured side-query: messages plus the JSON schema the answer must satisfy."""

    purpose: str
    """``auto-memory-recall``, ``auto-memory-forget-selection``, ``auto-memory-extract``, ``auto-memory-dream``."""
    messages: tuple[Message, ...]
    schema: Mapping[str, Any]
    timeout_s: float
    prompt_version: str
    """Hash of the prompt template that produced ``messages`` (reported with every call)."""
    temperature: float = 0.0
    max_tokens: int = 512
    grammar: Mapping[str, Any] | None = None
    """A tighter JSON schema (e.g. an enum of known paths) an adapter may enforce with constrained decoding;
    the answer is still validated against ``schema`` and the spec's rules."""


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A parsed answer and what it cost."""

    data: Mapping[str, Any]
    """The parsed JSON object."""
    text: str
    """The raw text the model returned."""
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    replayed: bool = False
    """True when a cassette answered instead of the provider."""
    cost_usd: float | None = None
    """What the call cost, when litellm knows the model's price."""


class Model(Protocol):
    """Anything that answers structured side-queries."""

    @property
    def name(self) -> str:
        """The model identifier (a litellm provider string for the real adapter)."""
        ...

    def query(self, request: ModelRequest) -> ModelReply:
        """Answer ``request``; raise ``ModelError`` (with a ``reason``) on any failure."""
        ...


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest deeper than ``MAX_ANSWER_DEPTH`` (linear, no recursion)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_ANSWER_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _lone_surrogate(data: Any) -> bool:
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _loads(candidate: str) -> Any:
    if _too_deep(candidate):
        raise ModelError(f"model answer nests deeper than {MAX_ANSWER_DEPTH} levels", reason="invalid_json")
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError) as exc:  # 100,000-digit numbers, pathological input
        raise ModelError(f"model answer is not usable JSON: {type(exc).__name__}: {str(exc)[:80]}",
                         reason="invalid_json") from None


def parse_json_lenient(text: str) -> dict[str, Any]:
    """Parse a model's JSON leniently: code fences and leading prose are tolerated, then strict object check.

    Hostile answers are refused with ``ModelError(reason="invalid_json")`` in linear time: not a string, longer
    than ``MAX_ANSWER_CHARS``, nested deeper than ``MAX_ANSWER_DEPTH``, numbers Python refuses to convert, or
    strings holding lone surrogates.
    """
    if not isinstance(text, str):
        raise ModelError(f"model answer is not text: {type(text).__name__}", reason="invalid_json")
    if len(text) > MAX_ANSWER_CHARS:
        raise ModelError(f"model answer is {len(text)} characters, over {MAX_ANSWER_CHARS}", reason="invalid_json")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        data = _loads(candidate)
        if isinstance(data, dict):
            if _lone_surrogate(data):
                raise ModelError("model answer holds a lone surrogate", reason="invalid_json")
            return data
    raise ModelError(f"model answer is not a JSON object: {text[:120]!r}", reason="invalid_json")


def checked_data(reply: ModelReply, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The reply's data once validated here, whatever the ``Model`` implementation did: a JSON object, no lone
    surrogate, no nesting deeper than ``MAX_ANSWER_DEPTH``, arrays of at most ``MAX_ANSWER_ITEMS``, and the
    schema (``null`` where an array is required is a ``schema`` error). Every caller of ``Model.query`` uses it."""
    data = reply.data
    if not isinstance(data, Mapping):
        raise ModelError(f"model answer is a {type(data).__name__}, not a JSON object", reason="schema")
    if _lone_surrogate(dict(data)):
        raise ModelError("model answer holds a lone surrogate", reason="invalid_json")
    validate_schema(data, schema)
    return data


def validate_schema(data: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Check the subset of JSON Schema the side-queries use (object, required, arrays of strings, enums)."""
    for key in schema.get("required", ()):
        if key not in data:
            raise ModelError(f"Invalid side query response: missing required key {key!r}", reason="schema")
    props: Mapping[str, Any] = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        extra = sorted(set(data) - set(props))
        if extra:
            raise ModelError(f"Invalid side query response: unexpected keys {extra}", reason="schema")
    for key, spec in props.items():
        if key in data:
            _check_value(key, data[key], spec)


def _check_value(path: str, value: Any, spec: Mapping[str, Any]) -> None:
    kind = spec.get("type")
    expected = {"string": str, "array": list, "object": dict, "integer": int, "number": (int, float)}
    if kind in expected and not isinstance(value, expected[kind]):  # type: ignore[arg-type]
        raise ModelError(f"Invalid side query response: {path} must be {kind}", reason="schema")
    if kind == "array" and len(value) > MAX_ANSWER_ITEMS:
        raise ModelError(f"Invalid side query response: {path} has {len(value)} items, over {MAX_ANSWER_ITEMS}",
                         reason="too_many")
    if "enum" in spec and (not isinstance(value, str | int | float | bool | None) or value not in spec["enum"]):
        raise ModelError(f"Invalid side query response: {path} = {value!r} not in enum", reason="schema")
    if kind == "array" and "items" in spec:
        for i, item in enumerate(value):
            _check_value(f"{path}[{i}]", item, spec["items"])
    if kind == "object":
        validate_schema(value, spec)


T = TypeVar("T")


def fallback_reason(exc: BaseException) -> str:
    """The reason tag an exception from the model path is reported with.

    ``ModelError`` keeps its own; ``TimeoutError`` → ``timeout``; ``ConnectionError`` → ``connection``;
    ``RecursionError`` and ``UnicodeError`` (a deep or undecodable answer) → ``invalid_json``; anything else →
    ``exception``.
    """
    if isinstance(exc, ModelError):
        return exc.reason
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError):
        return "connection"
    if isinstance(exc, RecursionError | UnicodeError):
        return "invalid_json"
    return "exception"


def model_or_heuristic(model_path: Callable[[], T] | None, heuristic: Callable[[], T]) -> tuple[T, bool, str | None]:
    """Run the model path when there is one; on any exception run the heuristic instead (spec §7.2, §8.2).

    fix: spec §7.2 — upstream falls back only on its own validation errors; here any exception the model (or the
    processing of its answer) raises — ``RuntimeError``, ``TimeoutError``, ``ConnectionError``, ``KeyError``… —
    becomes the heuristic fallback, with the reason from ``fallback_reason``.

    Returns (value, whether the model's value was used, the fallback reason or None).
    """
    if model_path is not None:
        try:
            return model_path(), True, None
        except ReplayAborted:  # a harness without a recorded answer: the run must say so
            raise
        except Exception as exc:  # the promise is: no model failure escapes
            return heuristic(), False, fallback_reason(exc)
    return heuristic(), False, None


ScriptedReply = Mapping[str, Any] | str | Exception


@dataclass(slots=True)
class ScriptedModel:
    """The in-memory twin: replies from a queue, records every request; raises when the script runs out.

    A reply may be a dict (returned as parsed JSON), a string (parsed leniently, like a real model's text), or an
    exception (raised; ``ModelError`` passes through, anything else becomes ``ModelError(reason="provider")``).
    """

    replies: deque[ScriptedReply] = field(default_factory=deque)
    model_name: str = "scripted"
    calls: list[ModelRequest] = field(default_factory=list)
    tokens_per_call: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, replies: Iterable[ScriptedReply], *, model_name: str = "scripted") -> ScriptedModel:
        """A scripted model that answers with ``replies`` in order."""
        return cls(deque(replies), model_name)

    @property
    def name(self) -> str:
        """The scripted model's name."""
        return self.model_name

    def query(self, request: ModelRequest) -> ModelReply:
        """Pop the next reply, validate it against the request's schema and return it."""
        self.calls.append(request)
        if not self.replies:
            raise ModelError(f"scripted model has no reply left for purpose {request.purpose!r}", reason="script")
        reply = self.replies.popleft()
        if isinstance(reply, ModelError):
            raise reply
        if isinstance(reply, Exception):
            raise ModelError(f"{type(reply).__name__}: {reply}", reason="provider") from reply
        if isinstance(reply, Mapping) and _lone_surrogate(dict(reply)):
            raise ModelError("model answer holds a lone surrogate", reason="invalid_json")
        text = reply if isinstance(reply, str) else json.dumps(reply)
        data = parse_json_lenient(text)
        validate_schema(data, request.schema)
        return ModelReply(data, text, self.model_name, *self.tokens_per_call)
