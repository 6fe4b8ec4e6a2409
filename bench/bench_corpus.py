"""Deterministic synthetic memories for the benchmarks: English-like topic files of about 4 KB each."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core.clock import FixedClock
from memory_core.files.entries import Entry, render_entries
from memory_core.files.formats import to_ms
from memory_core.files.store import FileStore, InMemoryStore, Store
from memory_core.files.topic import MEMORY_TYPES, MemoryType, TopicDoc, render_topic

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
WORDS = """
the be to of and a in that have it for not on with he as you do at this but his by from they we say her she or an
will my one all would there their what so up out if about who get which go me when make can like time no just him
know take people into year your good some could them see other than then now look only come its over think also
back after use two how our work first well way even new want because any these give day most us deploy review
terse grafana freeze python vim oncall budget release lint docker postgres pagerduty squash sign commit cache index
memory latency dashboard incident runbook ticket wiki deadline project repository service environment stack prefer
always never avoid respond format style concise detailed reply summary rollback migration schema query table column
kubernetes cluster node pod helm chart terraform module variable secret vault token auth login session cookie header
request response timeout retry backoff queue worker cron schedule batch stream kafka topic partition offset consumer
producer broker metric alert threshold page escalation owner team backend frontend mobile android ios browser css
html javascript typescript react component state hook effect render test fixture mock assert coverage flaky suite
pipeline build artifact registry image container volume mount network proxy gateway ingress certificate domain dns
monday tuesday wednesday thursday friday weekend morning evening quarter sprint roadmap milestone launch customer
invoice billing payment refund subscription plan tier quota limit usage report export import backup restore replica
""".split()  # noqa: SIM905 (a word list reads better as text)
WEIGHTS = [1.0 / (i + 1) ** 0.8 for i in range(len(WORDS))]
QUERIES = (
    "who is oncall for the postgres release freeze", "how do we deploy the kubernetes cluster with helm",
    "prefer terse replies without summary", "grafana latency dashboard for the billing service",
    "incident runbook for kafka consumer lag", "what was the deadline for the mobile launch",
    "avoid mocking the database in tests", "backup and restore of the replica",
    "xylophone quantum zebra", "refund policy for subscription tier", "ticket for the flaky test suite",
    "cert renewal for the ingress domain", "release", "how should I format commit messages",
    "vault secret rotation token", "schedule cron batch worker retries",
)


def _sentence(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, WEIGHTS, k=n)
    return " ".join(words).capitalize() + "."


def topic_text(rng: random.Random, i: int, *, size: int = 4000) -> tuple[str, str]:
    """(relative path, file text) of the i-th synthetic topic file."""
    kind = MEMORY_TYPES[i % 4]
    entries: list[Entry] = []
    while len(render_entries(entries)) < size - 300:
        entries.append(Entry(_sentence(rng, 12), _sentence(rng, 9), _sentence(rng, 7) if rng.random() < 0.5 else None))
    name = " ".join(rng.choices(WORDS, WEIGHTS, k=3)).title()
    text = render_topic(name=name, description=_sentence(rng, 10), kind=kind, body=render_entries(entries))
    return f"{kind}/topic-{i:05d}.md", text


def build_store(root: Path, files: int, *, seed: int = 7) -> FileStore:
    """A ``FileStore`` with ``files`` topic files, mtimes one minute apart (most recent = highest index)."""
    rng = random.Random(seed)
    store = FileStore(root, FixedClock(NOW))
    base = to_ms(NOW - timedelta(days=30))
    for i in range(files):
        key, text = topic_text(rng, i)
        store.write(key, text)
        store.set_mtime(key, base + i * 60_000.0)
    return store


def dedupe_docs(entries: int, *, seed: int = 11) -> list[TopicDoc]:
    """Docs of about 4 entries each, ``entries`` in all; about 10% of docs repeat an earlier doc's first summary,
    and about 10% of entries repeat one in the same doc."""
    rng = random.Random(seed)
    docs: list[TopicDoc] = []
    firsts: list[tuple[MemoryType, str]] = []
    for i in range(max(1, entries // 4)):
        kind: MemoryType = MEMORY_TYPES[i % 4]
        items = [Entry(f"fact {i}-{j}: {_sentence(rng, 6)}", _sentence(rng, 4)) for j in range(4)]
        if firsts and rng.random() < 0.1:
            kind, first = rng.choice(firsts)
            items[0] = Entry(first.upper() if rng.random() < 0.5 else first, _sentence(rng, 3))
        if rng.random() < 0.4:
            items[3] = Entry(items[1].summary, _sentence(rng, 3))
        firsts.append((kind, items[0].summary))
        docs.append(TopicDoc(kind, f"{kind}/d{i:05d}.md", f"Doc {i}", "", render_entries(items), float(i)))
    return docs


def memory_store() -> Store:
    """An empty in-memory store on the benchmark clock."""
    return InMemoryStore(FixedClock(NOW))
