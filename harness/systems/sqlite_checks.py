"""The SQLite adapter's ``check: {system: {...}}`` keys (spec §4.6, §4.7, §5.5 and the FTS index), one function each."""

from __future__ import annotations

import contextlib
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Final

from harness.systems.sqlite import (
    INJECTED_MAX_CHARS,
    MEMORY_MD_ITEM_CHARS,
    MEMORY_MD_ITEMS_PER_TYPE,
    RECALL_LIMIT,
    SqliteSystem,
)


def _text_check(source: Callable[[SqliteSystem], str], label: str, *, present: bool) -> Callable[..., str | None]:
    def check(system: SqliteSystem, expected: object) -> str | None:
        text = source(system)
        if (str(expected) in text) == present:
            return None
        return f"{label} {'does not contain' if present else 'contains'} {expected!r} ({len(text)} chars: {text[:80]!r}…)"
    return check


def _fts_integrity(system: SqliteSystem, expected: object) -> str | None:
    problem = system.mem.fts_integrity()
    if (problem is None) == bool(expected):
        return None
    return f"FTS5 integrity-check: {problem}" if problem else "FTS5 integrity-check passed, expected it to fail"


def _within_caps(system: SqliteSystem, expected: object) -> str | None:
    """MEMORY.md per spec §5.5/§4.7: ≤ 1500 item characters, ≤ 5 items per section, injected ≤ 900 characters."""
    text, injected = system.mem.index_text(), system.mem.injected_index()
    items = [line for line in text.splitlines() if line.startswith("- ")]
    per_section = [len(s.split("\n- ")) - 1 for s in text.split("\n## ")[1:]]
    problems = [f"{sum(len(x) for x in items)} item chars > {MEMORY_MD_ITEM_CHARS}"] * \
        (sum(len(x) for x in items) > MEMORY_MD_ITEM_CHARS)
    most = max(per_section, default=0)  # round 20b: max() of no section raised (an index without a "## " header)
    problems += [f"a section has {most} items > {MEMORY_MD_ITEMS_PER_TYPE}"] * (most > MEMORY_MD_ITEMS_PER_TYPE)
    problems += [f"injected {len(injected)} chars > {INJECTED_MAX_CHARS}"] * (len(injected) > INJECTED_MAX_CHARS)
    if (not problems) == bool(expected):
        return None
    return "; ".join(problems) or "MEMORY.md is within the spec's caps, expected it not to be"


def _count(source: Callable[[SqliteSystem], int], label: str) -> Callable[..., str | None]:
    def check(system: SqliteSystem, expected: object) -> str | None:
        n = source(system)
        return None if n == expected else f"{label}: {n}, expected {expected}"
    return check


def _no_episode_hits(system: SqliteSystem, expected: object) -> str | None:
    """Episodes recalled for the query alone (no recent messages appended to the enhanced query, spec §4.2)."""
    result = system.mem.recall(str(expected), RECALL_LIMIT, recent_messages=[])
    hits = [c for c in result.items if c.source_type == "episode"]
    return None if not hits else f"{len(hits)} episode(s) recalled for {expected!r}: {hits[0].content[:60]!r}"


def _trace_query(expected: object) -> tuple[str, str] | None:
    keyword, sep, want = str(expected).partition(" => ")
    return (keyword, want) if sep and keyword.strip() else None


def _trace_parts(expected: object) -> tuple[str, str]:
    """KEYWORD and what follows ``=>``; the form was checked before any check runs (:func:`expected_problem`)."""
    query = _trace_query(expected)
    assert query is not None, expected
    return query


def _traces(system: SqliteSystem, expected: object) -> str | None:
    """``traces: "KEYWORD => N"``: search_conversation_traces (spec §4.6 source 1) finds N turns for KEYWORD."""
    keyword, want = _trace_parts(expected)
    n = len(system.mem.search_traces(keyword))
    return None if str(n) == want.strip() else f"trace search for {keyword!r}: {n} turn(s), expected {want.strip()}"


def _newest_turn(system: SqliteSystem, expected: object, name: str, *, present: bool) -> str | None:
    """``NAME: "KEYWORD => TEXT"``: the newest turn trace search returns for KEYWORD contains TEXT (``present``) or
    does not (the other side of a cut: spec §4.6 returns ``content[:500]``)."""
    keyword, text = _trace_parts(expected)
    rows = system.mem.search_traces(keyword)
    if not rows:
        return f"trace search for {keyword!r} found nothing, expected a newest turn {'with' if present else 'without'} " \
               f"{text!r}"
    content = str(rows[0]["content"])
    if (text in content) == present:
        return None
    return f"the newest turn for {keyword!r} is {content[:80]!r}, expected it to contain {text!r}" if present else \
        f"the newest turn for {keyword!r} contains {text!r}"


def _traces_newest(system: SqliteSystem, expected: object) -> str | None:
    return _newest_turn(system, expected, "traces_newest", present=True)


def _traces_newest_lacks(system: SqliteSystem, expected: object) -> str | None:
    return _newest_turn(system, expected, "traces_newest_lacks", present=False)


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


_FILE_ACTIONS: Final = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH})
"""What PRAGMA query_only lets through yet touches other files: ATTACH (which VACUUM INTO also performs)."""


def _read_only(action: int, *_args: object) -> int:
    return sqlite3.SQLITE_DENY if action in _FILE_ACTIONS else sqlite3.SQLITE_OK


SQL_CHECK_SECONDS: Final = 10.0
"""How long one ``sql`` check may run: SQLite's own loop cannot be cut by the per-operation timeout's signal (the
shipped systems replay in-process), so the query is interrupted from inside (a recursive CTE that never ends)."""
SQL_CHECK_BYTES: Final = 10_000_000
"""The largest string or blob one ``sql`` check may build (``SQLITE_LIMIT_LENGTH``): ``zeroblob(1e9)`` is refused."""


def _sql(system: SqliteSystem, expected: object) -> str | None:
    """``sql: "SELECT … => EXPECTED"``: a read-only query over the system's database; its rows, columns joined by
    `` | `` and rows by ``; `` (NULL for NULL), must equal EXPECTED (empty: no rows). At most ``SQL_CHECK_SECONDS``
    and ``SQL_CHECK_BYTES`` a value."""
    query, _, want = str(expected).rpartition(" => ")  # the form was checked before (expected_problem)
    uri = "file:" + urllib.parse.quote(str(system.mem.db.path)) + "?mode=ro"
    deadline = time.monotonic() + SQL_CHECK_SECONDS
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            conn.execute("PRAGMA query_only=1")
            conn.set_authorizer(_read_only)  # also refuses ATTACH / VACUUM INTO, which create files
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQL_CHECK_BYTES)
            conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)  # non-zero: interrupt
            rows = conn.execute(query).fetchmany(100_001)
    except sqlite3.Error as exc:
        if time.monotonic() > deadline:
            return f"sql: the query did not finish within {SQL_CHECK_SECONDS:g} s: {query.strip()[:200]!r}"
        return f"sql: {type(exc).__name__}: {exc} in {query.strip()!r}"
    if len(rows) > 100_000:
        return f"sql: the query returned more than 100,000 rows: {query.strip()[:200]!r}"
    got = "; ".join(" | ".join(_cell(v) for v in row) for row in rows)
    return None if got == want.strip() else f"sql {query.strip()!r} gave {got[:300]!r}, expected {want.strip()!r}"


CHECKS: Final[dict[str, tuple[Callable[[SqliteSystem, Any], str | None], type]]] = {
    "fts_integrity": (_fts_integrity, bool),
    "index_contains": (_text_check(lambda s: s.mem.index_text(), "MEMORY.md", present=True), str),
    "index_lacks": (_text_check(lambda s: s.mem.index_text(), "MEMORY.md", present=False), str),
    "injected_index_contains": (_text_check(lambda s: s.mem.injected_index(), "the injected MEMORY.md", present=True), str),
    "injected_index_lacks": (_text_check(lambda s: s.mem.injected_index(), "the injected MEMORY.md", present=False), str),
    "profile_contains": (_text_check(lambda s: s.mem.user_profile_text(), "USER.md", present=True), str),
    "index_within_limits": (_within_caps, bool),
    "episodes": (_count(lambda s: s.mem.episode_count(), "episodes"), int),
    "memories": (_count(lambda s: len(s.mem.documents()), "memory rows"), int),
    "queue_open": (_count(lambda s: s.mem.queue_count("pending") + s.mem.queue_count("processing"), "open queue rows"), int),
    "no_episode_hits": (_no_episode_hits, str),
    "traces": (_traces, str),
    "traces_newest": (_traces_newest, str),
    "traces_newest_lacks": (_traces_newest_lacks, str),
    "sql": (_sql, str),
}
"""Each check by name: what it runs, and what its expected value must be (a wrong one is the scenario's error)."""


_PHRASE_CHECKS: Final = frozenset({"index_contains", "index_lacks", "injected_index_contains", "injected_index_lacks",
                                   "profile_contains", "no_episode_hits", "traces_newest", "traces_newest_lacks"})
"""The checks whose value (or whose TEXT after ``=>``) is looked for in a text: a blank one is refused."""


def expected_problem(name: str, expected: object) -> str | None:
    """Why ``expected`` cannot be the value of check ``name`` ('yes' for a true/false check, 2.5 for a count), or
    None."""
    kind = CHECKS[name][1] if name in CHECKS else str
    if kind is bool and not isinstance(expected, bool):
        return f"expected true or false, got {expected!r:.60}"
    if kind is int and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 0):
        return f"expected a count (an integer from 0), got {expected!r:.60}"
    if kind is str and not isinstance(expected, str):
        return f"expected text, got {expected!r:.60}"
    if name in ("traces", "traces_newest", "traces_newest_lacks") and (query := _trace_query(expected)) is None:
        return f"expected 'KEYWORD => {'N' if name == 'traces' else 'TEXT'}', got {expected!r:.60}"
    looked_for = (_trace_query(expected) or ("", ""))[1] if name.startswith("traces") else str(expected)
    if name in _PHRASE_CHECKS and not looked_for.strip():  # round 17: "" is in every text
        return f"expected a non-blank phrase, got {expected!r:.60}: a blank one makes a check that could never fail " \
               "(or never pass)"
    if name == "traces" and not (query and query[1].strip().isdigit()):
        return f"expected 'KEYWORD => N' with N a count, got {expected!r:.60}"
    if name == "sql" and not str(expected).rpartition(" => ")[0].strip():
        return f"expected 'SELECT … => EXPECTED', got {expected!r:.60}"
    return None

