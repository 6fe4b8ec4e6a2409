"""LoCoMo (Maharana et al., ACL 2024) as a retrieval benchmark: load, repair evidence, evaluate rankers, import.

The data file is read from where it lies (``../shared/datasets/locomo/locomo10.json`` or a path given); it is
never copied into this repository (CC BY-NC 4.0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from harness.errors import Duplicate, HarnessError, one_line, unique_members, unreadable_json
from harness.scenario._yaml import read_regular
from memory_core.files.topic import TopicDoc

CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SPLIT: Final = re.compile(r"[;,\s]+")
_DIA: Final = re.compile(r"^D(\d+):(\d+)$")
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", re.ASCII)
"""A ``sample_id`` or ``dia_id``: it becomes a file name (``conv-26-turns.yaml``, ``turns/D1-3.md``), so no path
separator, no ``..``, no control or non-ASCII character, at most 64 characters (LoCoMo's are ``conv-26``, ``D1:3``)."""
_TEXT_CHARS: Final = 100_000
"""A turn's speaker, text or caption, and a question, at most this many characters (LoCoMo's longest turn: ~900)."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    when: datetime | None

    @property
    def document(self) -> str:
        """``{speaker}: {text}`` plus `` [image: {caption}]`` (the calibration's document text)."""
        return f"{self.speaker}: {self.text}" + (f" [image: {self.caption}]" if self.caption else "")


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class Observation:
    text: str
    speaker: str
    session: int
    provenance: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    observations: list[Observation] = field(default_factory=list)
    dropped_evidence: list[str] = field(default_factory=list)


def parse_when(text: str | None) -> datetime | None:
    """``1:56 pm on 8 May, 2023`` → aware UTC datetime (None when missing or unparsable)."""
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def repair_evidence(raw: Sequence[Any], known: set[str]) -> tuple[tuple[str, ...], list[str]]:
    """Split multi-id strings, repair ``D:11:26`` → ``D11:26`` and ``D30:05`` → ``D30:5``, drop what does not
    resolve to a turn. Returns (ids in first-seen order, dropped ids)."""
    ids: list[str] = []
    dropped: list[str] = []
    for item in raw:
        for part in _SPLIT.split(str(item)):
            if not part:
                continue
            fixed = part.replace("D:", "D", 1) if part.startswith("D:") else part
            m = _DIA.match(fixed)
            if m:
                fixed = f"D{int(m.group(1))}:{int(m.group(2))}"
            if fixed in known:
                if fixed not in ids:
                    ids.append(fixed)
            else:
                dropped.append(part)
    return tuple(ids), dropped


def _sessions(conv: Mapping[str, Any]) -> Iterator[tuple[int, list[Mapping[str, Any]], datetime | None]]:
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    for n in numbers:
        yield n, conv[f"session_{n}"], parse_when(conv.get(f"session_{n}_date_time"))


def load_locomo(path: Path) -> list[Conversation]:
    """Parse the dataset; a malformed file raises ``HarnessError`` naming the file and the sample."""
    if not path.exists():
        raise HarnessError(f"{path}: no such file (how to get LoCoMo: docs/locomo.md)")
    try:  # regular files only (a FIFO would block), bounded
        data = json.loads(text := read_regular(path, limit=200 * 1024 * 1024, error=HarnessError).decode("utf-8"),
                          object_pairs_hook=unique_members)  # round 20: a member written twice kept the last
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 ({exc.reason})") from None
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such file (LoCoMo lives in ../shared/datasets/locomo/locomo10.json)") from None
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except (RecursionError, ValueError) as exc:
        what = "file: invalid JSON" if isinstance(exc, Duplicate) else "invalid JSON"  # located: file, line, field
        raise HarnessError(unreadable_json(path, text, what, exc)) from None
    if not isinstance(data, list):
        raise HarnessError(f"{path}: expected a JSON list of LoCoMo samples")
    out: list[Conversation] = []
    seen: dict[str, int] = {}
    for n, sample in enumerate(data):
        try:
            if not isinstance(sample, Mapping):
                raise _Bad(f"expected an object, got {type(sample).__name__}")
            conv = _parse_sample(sample)
        except _Bad as exc:
            raise HarnessError(f"{path}: sample {n}: {exc}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise HarnessError(f"{path}: sample {n}: malformed LoCoMo record ({type(exc).__name__}: "
                               f"{one_line(str(exc))[:200]})") from None
        key = conv.sample_id.casefold()  # round 17: conv-1 and Conv-1 are one file on macOS and Windows
        if key in seen:
            raise HarnessError(f"{path}: sample {n}: sample_id: {conv.sample_id!r} again (also sample {seen[key]}; "
                               "file names that differ only in case are one file on macOS and Windows)")
        seen[key] = n
        out.append(conv)
    return out


class _Bad(ValueError):
    """A LoCoMo record that parses but cannot be used: the message names the field."""


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value.replace(":", "-")):
        raise _Bad(f"{field}: expected 1-64 ASCII letters, digits, '.', '_', '-' or ':' (a file name), got "
                   f"{one_line(repr(value))[:80]}")
    return value


def _text(value: Any, field: str, *, optional: bool = False) -> str:
    if optional and value is None:
        return ""
    if not isinstance(value, str) or len(value) > _TEXT_CHARS:
        what = f"{len(value):,} characters" if isinstance(value, str) else type(value).__name__
        raise _Bad(f"{field}: expected a string of at most {_TEXT_CHARS:,} characters, got {what}")
    return value


def _parse_sample(sample: Mapping[str, Any]) -> Conversation:
    """One LoCoMo sample: turns with their session dates, questions with repaired evidence, observations."""
    conv = sample["conversation"]
    sample_id = _name(sample["sample_id"], "sample_id")
    turns = [Turn(_name(t["dia_id"], f"session_{n}[{i}].dia_id"), _text(t["speaker"], f"session_{n}[{i}].speaker"),
                  _text(t.get("text", ""), f"session_{n}[{i}].text"),
                  _text(t.get("blip_caption"), f"session_{n}[{i}].blip_caption", optional=True) or None, n, when)
             for n, session, when in _sessions(conv) for i, t in enumerate(session)]
    if not turns:
        raise _Bad("conversation: no session holds a turn")
    files: set[str] = set()
    for t in turns:  # two turns, one memory file (turns/<fact id>.md): one would replace the other (in any case, round 17)
        name = _fact_id(t.dia_id).casefold()
        if name in files:
            raise _Bad(f"session_{t.session}: dia_id {t.dia_id!r} again (file names that differ only in case are one "
                       "file on macOS and Windows)")
        files.add(name)
    known = {t.dia_id for t in turns}
    c = Conversation(sample_id, turns, [])
    for i, qa in enumerate(sample.get("qa", [])):
        if not isinstance(qa, Mapping):
            raise _Bad(f"qa[{i}]: expected an object, got {type(qa).__name__}")
        evidence, dropped = repair_evidence(qa.get("evidence", []), known)
        c.dropped_evidence += dropped
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        category = qa["category"]
        if type(category) is not int or category not in CATEGORIES:
            raise _Bad(f"qa[{i}].category: expected one of {', '.join(map(str, CATEGORIES))}, got {category!r}")
        c.questions.append(Question(_text(qa["question"], f"qa[{i}].question"), category, evidence, str(answer)))
    for key, by_speaker in sample.get("observation", {}).items():
        n = int(key.split("_")[1])
        for speaker, facts in by_speaker.items():
            for fact in facts:
                text, prov = fact[0], fact[1] if len(fact) > 1 else []
                ids, _ = repair_evidence(prov if isinstance(prov, list) else [prov], known)
                c.observations.append(Observation(text, speaker, n, ids))
    return c


def turn_docs(conv: Conversation) -> list[TopicDoc]:
    """Each dialog turn as a memory document (provenance = its ``dia_id`` in the path)."""
    return [TopicDoc("user", f"turns/{t.dia_id.replace(':', '-')}.md", t.speaker, "", t.document,
                     t.when.timestamp() * 1000 if t.when else 0.0) for t in conv.turns]


def observation_docs(conv: Conversation) -> tuple[list[TopicDoc], dict[str, tuple[str, ...]]]:
    """LoCoMo's generated observations as documents, with the turns each one cites."""
    docs, prov = [], {}
    for i, o in enumerate(conv.observations):
        path = f"observations/s{o.session}-{i:04d}.md"
        docs.append(TopicDoc("user", path, o.speaker, "", f"{o.speaker}: {o.text}"))
        prov[path] = o.provenance
    return docs, prov


def dia_of(doc: TopicDoc) -> str:
    """The ``dia_id`` a turn document stands for."""
    return doc.relative_path.removeprefix("turns/").removesuffix(".md").replace("-", ":")


def _fact_id(dia: str) -> str:
    return dia.replace(":", "-")


def to_scenarios(conversations: Sequence[Conversation], *, mode: str = "turns", k: int = 10) -> list[dict[str, Any]]:
    """One v1 scenario (as plain data) per conversation: sessions on their real timestamps, the turns (or
    observations) as seeded memories with provenance, and one recall probe per question (gold = evidence turns)."""
    out = []
    for conv in conversations:
        times = [t.when for t in conv.turns if t.when]
        end = (max(times) if times else datetime(2023, 1, 1, tzinfo=UTC)).replace(hour=23, minute=59)
        gold = {d for q in conv.questions for d in q.evidence}
        facts = {_fact_id(d): {"type": "user", "match": [f"[{d}]"]} for d in sorted(gold)}
        memories: list[dict[str, Any]] = []
        if mode == "turns":
            for t in conv.turns:
                item: dict[str, Any] = {"path": f"turns/{_fact_id(t.dia_id)}.md", "name": t.speaker,
                                        "description": f"[{t.dia_id}] session {t.session}", "type": "user",
                                        "body": t.document}
                if t.dia_id in gold:
                    item["facts"] = [_fact_id(t.dia_id)]
                if t.when:
                    item["age"] = f"{max(0, int((end - t.when).total_seconds()))}s"
                memories.append(item)
        else:
            for i, o in enumerate(conv.observations):
                cited = [d for d in o.provenance if d in gold]
                item = {"path": f"observations/s{o.session}-{i:04d}.md", "name": o.speaker,
                        "description": " ".join(f"[{d}]" for d in o.provenance) or "(no provenance)", "type": "user",
                        "body": o.text}
                if cited:
                    item["facts"] = [_fact_id(d) for d in cited]
                memories.append(item)
        steps: list[dict[str, Any]] = []
        sessions = sorted({t.session for t in conv.turns})
        start = min(times) if times else end
        current = start
        for n in sessions:
            turns = [t for t in conv.turns if t.session == n]
            when = next((t.when for t in turns if t.when), None)
            if when and when > current:
                steps.append({"advance": f"{int((when - current).total_seconds())}s"})
                current = when
            steps.append({"session": f"session-{n}", "extract": False,
                          "turns": [{"user" if i % 2 == 0 else "assistant": t.document} for i, t in enumerate(turns)]})
        if end > current:
            steps.append({"advance": f"{int((end - current).total_seconds())}s"})
        for q in conv.questions:
            if q.evidence:
                steps.append({"recall": {"query": q.question, "expect": [_fact_id(d) for d in q.evidence], "k": k}})
        out.append({
            "id": f"locomo/{conv.sample_id}-{mode}",
            "description": f"LoCoMo {conv.sample_id} ({mode}): {len(conv.questions)} questions, gold = evidence turns",
            "tags": ["locomo", mode], "strategies": ["heuristic", "bm25", "embedding", "hybrid"],
            "clock": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "facts": facts, "memories": memories, "steps": steps,
        })
    return out
