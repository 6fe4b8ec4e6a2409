"""The members a cassette entry may hold, and the types of its recorded request (round 20: a member the recorder
never writes — a misspelt ``respnose``, a ``request.temprature`` — and a request whose contents were of the wrong
type — ``messages`` a string, a message's ``content`` a number, ``max_tokens`` text — loaded in silence; the request
is what ``why_stale`` compares a miss against, so a wrong one explained a miss with a wrong reason)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from harness.errors import one_line

ENTRY: Final = frozenset({"key", "model", "purpose", "prompt_version", "scenario", "step", "request", "response",
                          "error"})
REQUEST: Final = frozenset({"messages", "schema", "grammar", "temperature", "max_tokens"})
RESPONSE: Final = frozenset({"text", "model", "input_tokens", "output_tokens", "latency_ms", "cost_usd"})
ERROR: Final = frozenset({"reason", "message"})
MESSAGE: Final = frozenset({"role", "content"})
_PLAIN: Final = re.compile(r"[A-Za-z0-9_-]{1,40}")


def _shown(value: object) -> str:
    return one_line(json.dumps(value, ensure_ascii=False))[:40]


def unknown_member(block: dict[str, Any], known: frozenset[str], where: str) -> tuple[str, str] | None:
    """The first member of ``block`` not in ``known``, as ``(field, what)``: the field is ``where.name`` when the
    name is plain (else ``where``, the name shown quoted in the text, so a ':' in it never splits the line)."""
    for name in block:
        if name not in known:
            field = (f"{where}.{name}" if where else name) if _PLAIN.fullmatch(name) else (where or "line")
            return field, (f"unknown member {_shown(name)}; {where or 'an entry'} holds "
                           f"{', '.join(sorted(known))}")
    return None


def request_problem(request: object) -> tuple[str, str] | None:
    """What is wrong with a recorded ``request`` (an object, or null when not recorded), or None."""
    if request is None:
        return None
    if not isinstance(request, dict):
        return "request", f"expected an object, got {_shown(request)}"
    if (unknown := unknown_member(request, REQUEST, "request")) is not None:
        return unknown
    messages = request.get("messages", [])
    if not isinstance(messages, list):
        return "request.messages", f"expected a list of messages, got {_shown(messages)}"
    for i, message in enumerate(messages):
        where = f"request.messages[{i}]"
        if not isinstance(message, dict):
            return where, f"expected an object (role, content), got {_shown(message)}"
        if (unknown := unknown_member(message, MESSAGE, where)) is not None:
            return unknown
        for name in sorted(MESSAGE):
            if not isinstance(message.get(name), str):
                return f"{where}.{name}", "missing" if name not in message else \
                    f"expected a string, got {_shown(message[name])}"
    if "schema" in request and not isinstance(request["schema"], dict):
        return "request.schema", f"expected an object (a JSON schema), got {_shown(request['schema'])}"
    if request.get("grammar") is not None and not isinstance(request["grammar"], dict):
        return "request.grammar", f"expected an object (a JSON schema) or null, got {_shown(request['grammar'])}"
    if "temperature" in request:
        value = request["temperature"]
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            return "request.temperature", f"expected a finite number >= 0, got {_shown(value)}"
    if "max_tokens" in request:
        value = request["max_tokens"]
        if type(value) is not int or not 0 < value < 2**53:
            return "request.max_tokens", f"expected an integer from 1 below 2**53, got {_shown(value)}"
    return None
