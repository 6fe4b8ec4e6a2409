"""A stateful test: the file store and its in-memory twin agree under any sequence of operations."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from memory_core.clock import FixedClock
from memory_core.files.scan import scan
from memory_core.files.store import LOCK_KEY, FileStore, InMemoryStore, Store

keys = st.sampled_from(["user/a.md", "user/b.md", "feedback/c.md", "d.md", "MEMORY.md", "x/y/z.md", LOCK_KEY])
texts = st.sampled_from(
    ["---\ntype: user\nname: n\n---\nbody", "---\r\ntype: user\r\n---\r\nx", "line\r\nwith crlf"]
)


class StoresAgree(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.clock = FixedClock(datetime(2026, 4, 1, tzinfo=UTC))
        self.stores: list[Store] = [InMemoryStore(self.clock), FileStore(self.tmp / "memory", self.clock)]

    def teardown(self) -> None:
        shutil.rmtree(self.tmp)

    @rule(key=keys, text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60) | texts)
    def write(self, key: str, text: str) -> None:
        for s in self.stores:
            s.write(key, text)

    @rule(key=keys, text=st.text(max_size=10, alphabet="abc"))
    def create(self, key: str, text: str) -> None:
        assert len({s.create(key, text) for s in self.stores}) == 1

    @rule(key=keys)
    def delete(self, key: str) -> None:
        assert len({s.delete(key) for s in self.stores}) == 1

    @rule(minutes=st.integers(0, 10_000))
    def tick(self, minutes: int) -> None:
        self.clock.advance(timedelta(minutes=minutes))

    @invariant()
    def agree(self) -> None:
        listings = [s.list() for s in self.stores]
        assert listings[0] == listings[1]
        for key in [*listings[0], LOCK_KEY]:
            stats = [s.stat(key) for s in self.stores]
            assert (stats[0] is None) == (stats[1] is None)
            if stats[0] is not None and stats[1] is not None:
                assert self.stores[0].read(key) == self.stores[1].read(key)
                assert abs(stats[0].mtime_ms - stats[1].mtime_ms) < 0.01
                assert stats[0].size == stats[1].size
        scans = [scan(s) for s in self.stores]
        assert [d.relative_path for d in scans[0].docs] == [d.relative_path for d in scans[1].docs]


TestStoresAgree = StoresAgree.TestCase
