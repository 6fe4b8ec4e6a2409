"""Episode generation (spec §3.8): one model call over the last 20 turns, or the deterministic fallback."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from memory_core.errors import ModelError
from memory_core.model import Message, Model, ModelRequest
from memory_core.sqlite.db import Database
from memory_core.sqlite.tables import save_episode
from memory_core.sqlite.templates import render

EPISODE_PURPOSE: Final = "sqlite-memory-episode"
EPISODE_TIMEOUT_S: Final = 30.0
EPISODE_SCHEMA: Final = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}
OUTCOMES: Final = ("success", "partial", "failed", "ongoing")
_WIN_PATH: Final = re.compile(r"[A-Za-z]:\\[^\s]+")
_FILE: Final = re.compile(r"(?<![\w.-])[\w.-]+\.(?:py|js|ts|md|json|yaml|toml|sh)\b", re.IGNORECASE)
"""fix (hostile probe, round 11): without the lookbehind, a long run of word characters, dots or dashes (40 KB of
``x.x.x.``: 59 s of CPU in extract) was rescanned from each of its characters; a match only ever starts where a run
does (as ``retrieval._EPISODE_FILE``), so the lookbehind changes no result."""
_KEY_PARAMS: Final = ("command", "path", "query", "url", "filename")


def _tool_calls(turn: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = turn.get("tool_calls")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return []
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []  # fix: JSON '5' raised


def action_nodes(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call's key params (≤ 200 characters each)."""
    nodes = []
    for turn in turns:
        for call in _tool_calls(turn):
            params = call.get("input") or call.get("arguments") or {}
            keys = {k: str(params[k])[:200] for k in _KEY_PARAMS if isinstance(params, Mapping) and k in params}
            nodes.append({"tool_name": str(call.get("name", "")), "key_params": keys})
    return nodes


def fallback_episode(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """No model or no summary: "对话涉及: " + the first 3 user contents, goal = first turn, entities by regex (≤ 20)."""
    users = [str(t.get("content") or "")[:100] for t in turns if t.get("role") == "user"][:3]
    summary = "对话涉及: " + "; ".join(users) if users else f"共 {len(turns)} 轮对话"
    text = "\n".join(str(t.get("content") or "") for t in turns)
    entities = list(dict.fromkeys([*_WIN_PATH.findall(text), *_FILE.findall(text)]))[:20]
    goal = str(turns[0].get("content") or "")[:100] if turns else ""
    return {"summary": summary, "goal": goal, "outcome": "completed", "entities": entities, "tools_used": []}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ask(model: Model, turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    shown = [{"role": t.get("role", ""), "content": str(t.get("content") or "")[:300], "tools": len(_tool_calls(t))}
             for t in list(turns)[-20:]]
    prompt = render("episode_user", turns=shown)
    request = ModelRequest(EPISODE_PURPOSE, (Message("user", prompt.text),), EPISODE_SCHEMA, EPISODE_TIMEOUT_S,
                           prompt.version, max_tokens=512)
    data = model.query(request).data
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ModelError("episode reply has no summary", reason="schema")
    outcome, goal = data.get("outcome"), data.get("goal")
    return {  # fix: a list or object goal was stored as its Python repr; it is no goal
        "summary": summary.strip()[:2000], "goal": str(goal or "")[:500] if isinstance(goal, str | int | float) else "",
        "outcome": outcome if outcome in OUTCOMES else "completed",
        # fix: a non-list (``"entities": true``) raised TypeError out of the session end; it is no entity at all
        "entities": [str(e) for e in _listed(data.get("entities")) if isinstance(e, str | int | float)][:20],
        "tools_used": [str(t) for t in _listed(data.get("tools_used")) if isinstance(t, str)][:20],
    }


def generate_episode(db: Database, model: Model | None, turns: Sequence[Mapping[str, Any]], session_id: str,
                     source: str) -> tuple[str, str, str | None]:
    """Generate and save an episode; returns (episode id, strategy, fallback reason)."""
    strategy, reason = "heuristic", None
    if model is not None:
        try:
            body = _ask(model, turns)
            strategy = "model"
        except ModelError as exc:
            body, reason = fallback_episode(turns), exc.reason
    else:
        body = fallback_episode(turns)
    nodes = action_nodes(turns)
    body["tools_used"] = sorted({*body["tools_used"], *(n["tool_name"] for n in nodes if n["tool_name"])})
    stamps = [str(t["timestamp"]) for t in turns if t.get("timestamp")] or [db.now()]
    episode_id = save_episode(db, {**body, "session_id": session_id, "started_at": min(stamps), "ended_at": max(stamps),
                                   "action_nodes": nodes, "source": source})
    return episode_id, strategy, reason
