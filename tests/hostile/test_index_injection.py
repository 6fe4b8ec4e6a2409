"""Index safety (issues 14, 23): whatever the name, description, file name or model summary, ``MEMORY.md`` holds
exactly one line per topic file, each with one link, and that link stays inside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.files.extract import ExtractRequest, run_extract
from memory_core.files.history import ChatMessage
from memory_core.files.index import build_index, index_line, rebuild_index
from memory_core.files.scan import scan
from memory_core.files.store import INDEX_KEY, FileStore, InMemoryStore
from memory_core.files.topic import TopicDoc
from memory_core.model import ScriptedModel
from tests.conftest import T0
from tests.helpers import examples
from tests.hostile.checks import index_targets

ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=60)
NASTY = st.sampled_from([
    "Prefers x\n- [Injected](../../etc/passwd) \u2014 forged", "a\rb", "a\x85- [x](/etc)", "a\u2028b\u2029c",
    "x](../../etc/passwd)", "[", "]", "# heading", "```code```", "<a href='http://evil'>x</a>", "\\", "x\\",
    "javascript:alert(1)", "//evil.example/x", "\u202eevil", "\ud800", "\x00\x07\x1b[31m", "\x0b\x0c\x1c\x1d\x1e",
])
TEXT = st.one_of(NASTY, ANY_TEXT, st.lists(st.one_of(NASTY, ANY_TEXT), max_size=4).map("".join))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT, TEXT), min_size=1, max_size=8))
def test_any_doc_fields_give_one_safe_line_each(fields: list[tuple[str, str, str]]) -> None:
    docs = [TopicDoc("user", f"{i}/{path}", title, desc, "b") for i, (title, desc, path) in enumerate(fields)]
    text = build_index(docs).text
    targets = index_targets(text, docs=len(docs))
    assert [t.split("/", 1)[0] for t in targets] == [str(i) for i in range(len(docs))]


FILE_NAME = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="/\\\x00"),
                    min_size=1, max_size=40).filter(lambda n: len(n.encode()) <= 200 and n not in (".", ".."))


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT, FILE_NAME), min_size=1, max_size=5, unique_by=lambda f: f[2]))
def test_files_on_disk_with_any_frontmatter_and_name(tmp_path_factory: pytest.TempPathFactory,
                                                     fields: list[tuple[str, str, str]]) -> None:
    root = tmp_path_factory.mktemp("m") / "memory"
    store = FileStore(root, FixedClock(T0))
    for name, desc, file_name in fields:
        meta = yaml.safe_dump({"name": name, "description": desc, "type": "user"}, allow_unicode=False)
        store.write(f"user/{file_name}.md", f"---\n{meta.strip()}\n---\n\nfact\n")
    rebuild_index(store)
    docs = scan(store).docs
    targets = index_targets(store.read(INDEX_KEY), docs=len(docs))
    assert sorted(targets) == sorted(d.relative_path for d in docs)  # every link names its own file


@pytest.mark.parametrize("raw", [
    b"a\nb.md", b"a\r- [x](..%2F..%2Fetc%2Fpasswd).md", "a\u2028b.md".encode(), b"x](..\\..\\y).md", b"\xff\xfe.md",
    b"java\x85script:x.md",
])
def test_hostile_file_names(tmp_path: Path, raw: bytes) -> None:
    root = tmp_path / "memory"
    (root / "user").mkdir(parents=True)
    store = FileStore(root, FixedClock(T0))
    (root / "user").joinpath(os.fsdecode(raw)).write_bytes(b"---\nname: n\ndescription: d\ntype: user\n---\n\nf\n")
    store.write("user/ok.md", "---\nname: ok\ndescription: d\ntype: user\n---\n\nf\n")
    rebuild_index(store)
    index_targets(store.read(INDEX_KEY), docs=len(scan(store).docs))


@settings(max_examples=examples(60), deadline=None)
@given(TEXT)
def test_model_summaries_cannot_forge_index_lines(summary: str) -> None:
    store = InMemoryStore(FixedClock(T0))
    model = ScriptedModel.of([{"patches": [{"topic": "user", "summary": summary + " and more words"},
                                           {"topic": "project", "summary": "The release freeze is on Friday"}]}])
    out = run_extract(store, ExtractRequest("s", (ChatMessage("user", "I prefer terse answers"),)),
                      now=T0, root="/r", model=model)
    assert out.status == "completed"
    docs = scan(store).docs
    assert sorted(index_targets(store.read(INDEX_KEY), docs=len(docs))) == sorted(d.relative_path for d in docs)


def test_the_issue_example_is_one_line() -> None:
    line = index_line(TopicDoc("user", "user/x.md", "Prefers x\n- [Injected](../../etc/passwd) \u2014 forged", "d", "b"))
    assert "\n" not in line
    assert line.count("](") == 1
    assert line.startswith("- [Prefers x - (Injected)")
