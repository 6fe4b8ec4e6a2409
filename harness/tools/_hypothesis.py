"""Public Hypothesis strategies for memory testing: topic files (valid and hostile), stores, and conversations
with planted facts that come out as v1 scenarios (so they replay and score like hand-written ones).

    from harness.strategies import conversations, topic_texts
    @given(conversations())
    def test_my_system(scenario): ...
"""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from hypothesis import strategies as st

from harness.scenario import (
    AdvanceStep,
    CheckStep,
    DreamStep,
    Fact,
    ForgetStep,
    RecallStep,
    Scenario,
    SeedMemory,
    SessionStep,
    Step,
    Turn,
)
from memory_core.files.entries import Entry, render_entries
from memory_core.files.topic import MEMORY_TYPES, render_topic

# Statement templates state each type the way the heuristic extractor (spec §5.5) keeps and classifies it. Note:
# project wording with only "service"/"repo"/"stack" is classified as project but never kept (the keep list lacks
# those words) — the planted-fact property found that; these templates carry a kept keyword.
# Code words: lower-case, ≥ 5 letters, none a keyword of the extractor or recall type lists, none a substring of
# another (so a fact's match phrase identifies it alone).
__all__ = ["CLOCK", "CODEWORDS", "DISTRACTORS", "STATEMENTS", "conversations", "entries", "hostile_model_replies",
           "memory_stores", "planted_facts", "seeded_stores", "topic_texts"]

CODEWORDS: Final = (
    "zorblat", "quintex", "mavrick", "plonder", "vexilla", "snorkel", "grumbo", "thistle", "kazoomba", "wumpus",
    "fjordix", "brambly", "cobwebz", "dervish", "ejector", "flumph", "gazebo", "hobnail", "inkwell", "jubilee",
)
STATEMENTS: Final[dict[str, tuple[str, ...]]] = {
    "user": ("I prefer {w} for quick scripts", "I like using {w} in my editor setup", "my favorite terminal trick is {w}",
             "we prefer {w} over the alternatives"),
    "feedback": ("always run {w} before pushing", "never commit {w} artifacts to git", "please avoid {w} in code reviews",
                 "always format output with {w} style"),
    "project": ("the {w} release is planned for next quarter", "the {w} service deadline is the end of March",
                "the {w} repository freeze starts after the incident review", "the {w} project has a hard deadline"),
    "reference": ("the {w} dashboard lives at grafana.internal/d/{w}", "the {w} runbook is at wiki.internal/{w}",
                  "tickets for {w} go to jira project {w}", "docs for {w} are at https://docs.internal/{w}"),
}
DISTRACTORS: Final = (
    "thanks, that looks good", "can you run the tests?", "let's look at this today", "ok", "hmm, interesting",
    "what does this function return?", "nice work", "I will check it now",
)
CLOCK: Final = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_GENERATED: Final = Path("<generated>")


# ---- topic files and entries --------------------------------------------------------------------------------
_words = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=10)
_phrase = st.lists(_words, min_size=1, max_size=8).map(" ".join)


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    """A well-formed entry: a plain summary line, optional why / how-to-apply."""
    summary = "e" + draw(_phrase)
    return Entry(summary, draw(st.none() | _phrase), draw(st.none() | _phrase))


@st.composite
def topic_texts(draw: st.DrawFn, *, hostile: bool = False) -> str:
    """A topic file's text; with ``hostile=True`` also CRLF, odd Unicode, huge lines and broken frontmatter."""
    kind = draw(st.sampled_from(MEMORY_TYPES))
    name = draw(_phrase)
    description = draw(_phrase)
    body = render_entries(draw(st.lists(entries(), max_size=4)))
    valid = render_topic(name=name, description=description, kind=kind, body=body)
    if not hostile:
        return valid
    return draw(st.sampled_from([
        valid,
        valid.replace("\n", "\r\n"),
        valid.replace(f"type: {kind}", f"type: {kind.upper()}"),
        valid.replace("---\n", "", 1),
        f"---\nname: {name}\ndescription: a: b: {description}\ntype: {kind}\n---\n{body}\n",
        f"---\nname:\ndescription: {description}\ntype: {kind}\n---\n{body}\n",
        f"---\nname: {'x' * 5000}\ndescription: {'é😀' * 400}\ntype: {kind}\n---\n{'y' * 20000}\n",
        f"---\nname: \u202e{name}\u200b\ndescription: \x0b{description}\ntype: {kind}\n---\n**Why:** {body}\n",
        "",
    ]))


@st.composite
def memory_stores(draw: st.DrawFn, *, hostile: bool = False, max_files: int = 12) -> dict[str, str]:
    """Relative path → file text for a whole memory directory."""
    n = draw(st.integers(0, max_files))
    out = {}
    for i in range(n):
        kind = draw(st.sampled_from(MEMORY_TYPES))
        out[f"{kind}/m{i}.md"] = draw(topic_texts(hostile=hostile))
    return out


# ---- conversations with planted facts ---------------------------------------------------------------------
@st.composite
def planted_facts(draw: st.DrawFn, *, min_facts: int = 1, max_facts: int = 4) -> list[tuple[Fact, str]]:
    """Facts of varied types with unique code words, each with one statement that states it."""
    words = draw(st.lists(st.sampled_from(CODEWORDS), min_size=min_facts, max_size=max_facts, unique=True))
    out = []
    for w in words:
        kind = draw(st.sampled_from(MEMORY_TYPES))
        template = draw(st.sampled_from(STATEMENTS[kind]))
        out.append((Fact(w, kind, (w,)), template.format(w=w)))
    return out


@st.composite
def conversations(draw: st.DrawFn, *, min_facts: int = 1, max_facts: int = 4, paraphrases: bool = True,
                  forget: bool = True, dream: bool = True) -> Scenario:
    """A scenario: sessions that state facts (with distractors, paraphrases and clock advances), then a recall
    probe per fact, optionally a forget request and a dream; every fact carries its gold match phrase. The forget
    claims the removal of a planted fact (``expect_removed``): a system that never stored that fact fails it ("never
    stored … proves nothing"); pass ``forget=False``, or keep the claim to stored facts as the property suite does
    (``harness/tools/_properties.py``, ``_claims_only_stored``), for a system whose extraction may skip it."""
    facts = draw(planted_facts(min_facts=min_facts, max_facts=max_facts))
    statements: list[str] = []
    for fact, statement in facts:
        statements.append(statement)
        if paraphrases and draw(st.booleans()):
            other = draw(st.sampled_from(STATEMENTS[fact.type])).format(w=fact.id)
            statements.append(other)
    statements += draw(st.lists(st.sampled_from(DISTRACTORS), max_size=3))
    order = draw(st.permutations(statements))
    n_sessions = draw(st.integers(1, min(3, len(order))))
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(order) - 1)), min_size=n_sessions - 1,
                                max_size=n_sessions - 1)))
    chunks = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True) if order[a:b]]
    steps: list[Step] = []
    for i, chunk in enumerate(chunks):
        steps.append(SessionStep(f"s{i + 1}", (*(Turn("user", t) for t in chunk), Turn("assistant", "ok"))))
        steps.append(AdvanceStep(timedelta(hours=draw(st.integers(1, 72)))))
    for fact, _ in facts:
        steps.append(RecallStep(f"what do you know about {fact.id}", (fact.id,)))
    if dream and draw(st.booleans()):
        steps.append(DreamStep(force=True))
    if forget and draw(st.booleans()):
        gone = draw(st.sampled_from([f for f, _ in facts]))
        steps.append(ForgetStep(gone.id, (gone.id,)))
        steps.append(RecallStep(f"what do you know about {gone.id}", (), forbid=(gone.id,)))
    steps.append(CheckStep(index_within_limits=True, no_stray_files=True))
    fact_map = {f.id: f for f, _ in facts}
    return Scenario(id="generated", path=_GENERATED, description="generated conversation with planted facts",
                    tags=("generated",), clock=CLOCK, facts=fact_map, memories=(), steps=tuple(steps))


@st.composite
def seeded_stores(draw: st.DrawFn, *, max_facts: int = 5) -> Scenario:
    """A scenario whose memories are seeded directly: one doc per fact, some duplicated (same first entry, other
    why text) in older files, so dream has something to merge."""
    facts = draw(planted_facts(min_facts=1, max_facts=max_facts))
    memories = []
    for n, (fact, statement) in enumerate(facts):
        body = render_entries([Entry(statement, draw(st.none() | _phrase))])
        memories.append(SeedMemory(f"{fact.type}/{fact.id}.md", fact.type, fact.id.title(), statement, body, (fact.id,),
                                   timedelta(hours=n)))
        if draw(st.booleans()):
            dup = render_entries([Entry(statement.upper(), draw(_phrase))])
            memories.append(SeedMemory(f"{fact.type}/{fact.id}-old.md", fact.type, fact.id.title(), statement, dup, (),
                                       timedelta(days=3, hours=n)))
    return Scenario(id="generated-store", path=_GENERATED, description="generated store with planted facts",
                    tags=("generated",), clock=CLOCK, facts={f.id: f for f, _ in facts}, memories=tuple(memories),
                    steps=(CheckStep(index_within_limits=True),))


@st.composite
def hostile_model_replies(draw: st.DrawFn) -> tuple[object, ...]:
    """Replies a hostile or broken model might give to extract, dream, recall and forget side-queries."""
    evil_path = st.sampled_from(["../x.md", "../../etc/passwd", "/tmp/escape.md", "user/../../x.md", "..\\x.md",
                                 "user/ok.md\x00.md", "~/.ssh/id_rsa", "user/" + "a" * 300 + ".md"])
    reply = st.one_of(
        st.builds(lambda p, s: {"patches": [{"topic": p, "summary": s}]}, st.sampled_from([*MEMORY_TYPES, "../user"]),
                  st.sampled_from(["../../escape written summary", "/etc/passwd is the summary now", "x" * 40])),
        st.builds(lambda p: {"operations": [{"op": "delete", "id": p}]}, evil_path),
        st.builds(lambda p: {"operations": [{"op": "rewrite", "id": p, "summary": "pwned"}]}, evil_path),
        st.builds(lambda p: {"selected_memories": [p]}, evil_path),
        st.builds(lambda p: {"selectedCandidateIds": [p]}, evil_path),
        st.sampled_from(["not json", '{"patches": "nope"}', "{}", '{"error": "x"}']),
    )
    return tuple(draw(st.lists(reply, min_size=1, max_size=12)))

