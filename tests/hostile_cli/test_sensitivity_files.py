"""``memharness sensitivity``'s own input files, the spec-mutant catalogue (``--catalogue``) and the triage file
(``--equivalents``), generated (hostile probe, round 12).

On the old code ``mutant = [1, 2]`` ended in ``internal error: AttributeError`` and ``outside = 5`` in
``TypeError`` (26 of 3,500 generated documents), and a FIFO named as either file held the command for ever. Every
generated document must now load or be one ``<file>:<line>: …`` line (HarnessError), and a FIFO, a directory or
bytes that are not UTF-8 are refused at once.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.tools._equivalent import load_triage, split_equivalent
from harness.tools._generated import generated_mutants
from harness.tools._mutants import load_catalogue, resolve_target
from tests.helpers import toml_value

TARGET = resolve_target("memory_core")



FILES = st.sampled_from(["recall.py", "sqlite/store.py", "__init__.py", "../harness/cli/__init__.py", "nope.py",
                         "sqlite", "", "x\x00y", ".", "sqlite/../recall.py"])
SCALAR = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=8), FILES,
                   st.dates())
VALUE = st.recursive(SCALAR, lambda c: st.one_of(st.lists(c, max_size=3),
                                                 st.dictionaries(st.text(max_size=4), c, max_size=3)), max_leaves=6)
GOOD = {"name": st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True), "file": FILES,
        "find": st.sampled_from(["return", "def ", "limit", "\x00", ""]),
        "pattern": st.sampled_from(["(", "^def", "\\1", "return"]),
        "replace": st.sampled_from(["", "\\1", "\\g<9>", "x", "\x00", "((("]),
        "rule": st.text(max_size=5), "subsets": st.one_of(VALUE, st.lists(st.text(max_size=3), max_size=2)),
        "module": FILES, "within": st.one_of(VALUE, st.lists(st.sampled_from(["recall", "1a"]), max_size=2)),
        "when": st.sampled_from(["(", "limit"]), "before": FILES, "after": FILES, "reason": st.text(max_size=5),
        "unreachable": st.one_of(st.booleans(), VALUE), "operator": VALUE}
ENTRY = st.one_of(st.dictionaries(st.sampled_from([*GOOD, "bogus"]), VALUE, max_size=6),
                  st.fixed_dictionaries({}, optional=GOOD))
KEY = st.sampled_from(["mutant", "equivalent", "outside"])


def _tables(key: str, entries: list[dict[str, object]]) -> str:
    return "".join(f"[[{key}]]\n" + "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in e.items()) for e in entries)


DOCUMENT = st.one_of(st.builds(_tables, KEY, st.lists(ENTRY, max_size=3)),
                     st.builds(lambda k, v: f"{k} = {toml_value(v)}\n", st.one_of(KEY, st.just("x")), VALUE),
                     st.builds(lambda k, v, e: f"{k} = {toml_value(v)}\n" + _tables("outside", e), KEY, VALUE,
                               st.lists(ENTRY, max_size=2)))
LOCATED = re.compile(r"^\S*f\.toml:\d+: \S")


def _load(path: Path, catalogue: bool) -> None:
    if catalogue:
        load_catalogue(path, TARGET)
        return
    triage = load_triage(path)
    generated_mutants(TARGET, 0, seed=0, outside=triage.outside)
    split_equivalent([], list(triage.equivalents), lambda rel: TARGET.module_path(rel).read_text(encoding="utf-8"))


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(DOCUMENT, st.booleans())
def test_every_generated_file_loads_or_is_one_located_line(tmp_path_factory: pytest.TempPathFactory, text: str,
                                                          catalogue: bool) -> None:
    path = tmp_path_factory.mktemp("toml") / "f.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        _load(path, catalogue)
    except HarnessError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert LOCATED.match(message), message


@pytest.mark.parametrize("catalogue", [True, False])
@pytest.mark.parametrize("kind", ["fifo", "directory", "latin-1", "utf-16"])
def test_a_file_that_is_no_utf8_text_is_refused_at_once(tmp_path: Path, catalogue: bool, kind: str) -> None:
    path = tmp_path / "f.toml"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: reading it blocked for ever
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes('[[mutant]]\nname = "é"\n'.encode(kind))
    start = time.monotonic()
    with pytest.raises(HarnessError, match=r"f\.toml:\d+: file: "):
        _load(path, catalogue)
    assert time.monotonic() - start < 5
