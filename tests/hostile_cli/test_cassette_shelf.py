"""A cassette shelf's ``sets.toml`` (``default = "DIR"``, ``[alias]``), generated (hostile probe, round 12): the
shelf resolves to one of its sets, or the refusal is one line naming the file and the line
(``sets.toml:<n>: default: …``; a ``--set NAME`` it lacks: ``--set: <shelf>: no cassette set …``). On the old
code each named the file but no line (``sets.toml: expected default = "DIR" and an [alias] table of strings``)."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay._cassette import Cassette, read_meta, resolve_set
from tests.helpers import toml_value

NAMES = st.sampled_from(["a", "b", "", ".", "..", "a/b", "/etc", "sets.toml", "ä", " a", "a\n", "link", "fifo", "file"])



VALUE = st.recursive(st.one_of(NAMES, st.integers(), st.booleans(), st.floats()),
                     lambda c: st.one_of(st.lists(c, max_size=2), st.dictionaries(NAMES, c, max_size=2)), max_leaves=4)
DOCUMENT = st.one_of(
    st.builds(lambda d, al: ("# shelf\n" if al else "") + (f"default = {toml_value(d)}\n" if d is not None else "")
              + ("[alias]\n" + "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in al.items()) if al is not None else ""),
              st.one_of(st.none(), NAMES, VALUE), st.one_of(st.none(), st.dictionaries(NAMES, st.one_of(NAMES, VALUE),
                                                                                       max_size=3))),
    st.builds(lambda k, v: f"{k} = {toml_value(v)}\n", st.sampled_from(["default", "alias"]), VALUE),
    st.text(max_size=30))
LOCATED = re.compile(r"^(\S*sets\.toml:\d+: [^:\n]+: |--set: \S*: )")


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(text=DOCUMENT, name=st.one_of(st.none(), NAMES))
def test_a_shelf_resolves_or_is_one_located_line(tmp_path_factory: pytest.TempPathFactory, text: str,
                                                 name: str | None) -> None:
    shelf = tmp_path_factory.mktemp("shelf")
    for sub in ("a", "b", "ä"):
        (shelf / sub).mkdir()
        (shelf / sub / "cassette.jsonl").write_text("")
    (shelf / "file").write_text("x")
    os.mkfifo(shelf / "fifo")
    os.symlink("/etc", shelf / "link")
    (shelf / "sets.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        chosen = resolve_set(shelf, name)
        read_meta(chosen)
        Cassette.open(chosen)
    except HarnessError as exc:
        message = str(exc)
        assert LOCATED.match(message), message
    else:
        assert chosen.parent == shelf  # a subdirectory (a set to record into may hold no cassette yet)
        assert chosen.is_dir()
    finally:
        shutil.rmtree(shelf)


META_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**7), st.floats(), st.text(max_size=5),
                       st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
META = st.one_of(st.dictionaries(st.sampled_from(["model", "api_base", "timeout_scale", "weights", "other"]), META_VALUE,
                                 max_size=4), META_VALUE)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(meta=META, indent=st.sampled_from([None, 1]))
def test_a_sets_metadata_is_read_or_one_located_line(tmp_path_factory: pytest.TempPathFactory, meta: object,
                                                     indent: int | None) -> None:
    """cassette-meta.json: a field of the wrong type named 'cassette-meta.json: timeout_scale: …' with no line."""
    directory = tmp_path_factory.mktemp("set")
    (directory / "cassette-meta.json").write_text(json.dumps(meta, indent=indent))
    try:
        read_meta(directory)
    except HarnessError as exc:
        message = str(exc)
        assert re.match(r"^\S*cassette-meta\.json:\d+: [^:\n]+: ", message), message
