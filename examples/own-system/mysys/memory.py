"""My memory system, as memharness sees it: a keyword store in a dict whose recall asks a chat model for extra
search words. The model is reached with the `openai` client at the base URL the harness gives
(MEMHARNESS_MODEL_BASE_URL): memharness replays those calls from proxy.jsonl, or records them (--record)."""

import os
import re

from openai import OpenAI

from harness.system import DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult

STOP = {"the", "a", "an", "and", "or", "to", "of", "in", "on", "for", "with", "is", "are", "was", "it", "this",
        "that", "i", "me", "my", "we", "our", "you", "your", "what", "how", "do", "does", "about", "forget"}
MODEL = os.environ.get("MYSYS_MODEL", "qwen2.5-coder-0.5b-instruct")  # part of every recorded request's key
EXPAND = os.environ.get("MYSYS_EXPAND", "1") != "0"                   # MYSYS_EXPAND=0: keywords only, no model


def words(text):
    return {w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()) if len(w) > 2 and w not in STOP}


class MyMemory:
    name = "mysys"
    recall_limit = 5
    strategies = frozenset({"heuristic"})  # no model path of the harness's: model-strategy runs are skipped
    capabilities = frozenset()             # no dream, no files, no locks: those steps are skipped, with the reason

    def __init__(self, base_url):
        self.records = {}                  # id -> MemoryRecord
        self.turns = {}                    # session id -> [Turn]
        self.client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)

    def expand(self, query):
        """Ask the model for search keywords: a short, deterministic request (temperature 0, no date, no ids)."""
        reply = self.client.chat.completions.create(
            model=MODEL, temperature=0, max_tokens=24,
            messages=[{"role": "system", "content": "Reply with 3 to 6 search keywords, comma-separated, nothing else."},
                      {"role": "user", "content": query}])
        return words(reply.choices[0].message.content or "")

    def seed(self, memory, *, mtime):
        self.records[memory.path] = MemoryRecord(memory.path, memory.type, memory.name or memory.path, memory.body,
                                                 description=memory.description, updated_at=mtime)

    def finish_seeding(self, *, now):
        pass

    def add_turns(self, session_id, turns, *, now):
        self.turns.setdefault(session_id, []).extend(turns)

    def extract(self, session_id, *, now, strategy, queued_behind=False):
        written = []
        for turn in self.turns.pop(session_id, []):
            if turn.kind == "user" and ("always" in turn.text.lower() or "prefer" in turn.text.lower()):
                rid = f"user/{len(self.records)}.md"
                self.records[rid] = MemoryRecord(rid, "user", turn.text[:60], turn.text, updated_at=now)
                written.append(rid)
        return ExtractResult("completed", "heuristic", written=tuple(written))

    def dream(self, session_id, *, now, strategy, force=False):
        return DreamResult("noop", "heuristic")

    def recall(self, query, *, now, limit, excluded, strategy):
        wanted = words(query) | (self.expand(query) if EXPAND else set())
        scored = sorted(((len(wanted & words(f"{r.title} {r.description} {r.text}")), rid)
                         for rid, r in self.records.items() if rid not in excluded), reverse=True)
        chosen = [(s, rid) for s, rid in scored if s > 0][: limit or self.recall_limit]
        return RecallResult(selected=tuple(rid for _, rid in chosen), strategy="heuristic" if chosen else "none",
                            scores=tuple(float(s) for s, _ in chosen))

    def forget(self, query, *, now, strategy):
        wanted = words(query)
        gone = [rid for rid, r in self.records.items() if wanted and wanted <= words(f"{r.title} {r.description} {r.text}")]
        for rid in gone:
            del self.records[rid]
        return ForgetResult(removed=tuple(gone), strategy="heuristic")

    def documents(self):
        return list(self.records.values())


def factory(workdir, clock, model, events):
    return MyMemory(base_url=os.environ["MEMHARNESS_MODEL_BASE_URL"])


factory.model_proxy = True  # memharness starts its model proxy and sets MEMHARNESS_MODEL_BASE_URL before calling me
