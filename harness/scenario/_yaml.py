"""Bounded YAML reading with ``file:line: field: what was expected`` errors (used by the scenario loader).

``read_bounded`` reads a regular file only (never a FIFO, a device or a directory: it cannot hang), at most
``MAX_FILE_BYTES + 1`` bytes. ``compose_bounded`` builds the node graph iteratively from libyaml's event stream
(``CSafeLoader`` when available): nesting depth and the alias-expanded node count are checked as events arrive,
so neither a 1,000-deep document nor an alias bomb can recurse or blow up. ``NodeReader`` then constructs each
scalar with PyYAML's safe constructor directly (no per-node serialise + re-parse) and turns every constructor
failure (``!!int abc``, ``2026-02-30``, a 100,000-digit integer, a python tag) into a located error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml
from yaml.constructor import SafeConstructor

from harness.errors import ScenarioError, one_line
from harness.scenario import _limits as lim
from harness.scenario import _yaml_lines as v12  # where YAML 1.1 and YAML 1.2 read a file otherwise
from harness.scenario._encoding import decode_utf8 as decode_utf8  # re-exported: other readers import it from here
from harness.scenario._encoding import nul_problem
from harness.scenario._encoding import read_regular as read_regular

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml missing: the pure-Python parser is also non-recursive
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

T = TypeVar("T")
MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_SCALAR_ERRORS: Final = (ValueError, TypeError, OverflowError, ArithmeticError, LookupError, AttributeError,
                          yaml.YAMLError)
"""What a safe tag's constructor raises on a value it cannot read (``!!bool maybe``: KeyError; ``!!timestamp junk``:
AttributeError): each a located one-line error, never an internal one."""


def read_bounded(path: Path) -> str:
    """The text of a scenario file: a regular UTF-8 file of at most ``MAX_FILE_BYTES`` and ``MAX_LINE_CHARS``."""
    # CR LF and CR are line breaks as LF is (YAML reads them so, editors too): split on "\n" only, a CR-only file was
    text = decode_utf8(read_regular(path, limit=lim.MAX_FILE_BYTES).replace(b"\r\n", b"\n").replace(b"\r", b"\n"), path)
    if nul := nul_problem(text):  # named as such, not YAML's "unacceptable character #x0000"
        raise ScenarioError(f"{one_line(str(path))}:{nul[0]}: file: {nul[1]}")
    for n, line_text in enumerate(text.split("\n"), 1):  # one line, over the length limit (round 14)
        if len(line_text) > lim.MAX_LINE_CHARS:
            raise ScenarioError(f"{one_line(str(path))}:{n}: file: line is {len(line_text)} characters; "
                                f"the limit is {lim.MAX_LINE_CHARS}")
    return text


def compose_bounded(text: str, path: Path) -> yaml.Node | None:
    """The single document of ``text`` as a node graph, within ``MAX_DEPTH`` and ``MAX_NODES`` (aliases expanded)."""
    where = one_line(str(path))
    source = text
    text, back = v12.breaks_as_text(text)  # NEL, U+2028, U+2029 are text, as in YAML 1.2 (_yaml_lines.py)
    loader = _Loader(text)
    anchors: dict[str, tuple[yaml.Node, int]] = {}
    open_anchors: set[str] = set()
    # each frame: [node, anchor, expanded size, pending mapping key]
    stack: list[list[Any]] = []
    total = 0
    root: yaml.Node | None = None
    documents = 0
    resolved: dict[tuple[str, Any], str] = {}

    def add(node: yaml.Node, size: int, mark: Any, new: int) -> None:
        nonlocal total, root
        total += new
        if total > lim.MAX_NODES:
            raise ScenarioError(f"{where}:{mark.line + 1}: yaml: more than {lim.MAX_NODES} nodes once aliases "
                                "are expanded (an alias bomb?)")
        if not stack:
            root = node
            return
        frame = stack[-1]
        frame[2] += size
        parent = frame[0]
        if isinstance(parent, yaml.SequenceNode):
            parent.value.append(node)
        elif frame[3] is None:
            frame[3] = node
        else:
            parent.value.append((frame[3], node))
            frame[3] = None

    try:
        while True:
            event: Any = loader.get_event()
            start: Any = event.start_mark
            end: Any = event.end_mark
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, (yaml.StreamStartEvent, yaml.DocumentEndEvent)):
                continue
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ScenarioError(f"{where}:{start.line + 1}: yaml: expected a single document")
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    raise ScenarioError(f"{where}:{start.line + 1}: yaml: recursive alias *{event.anchor}")
                if event.anchor not in anchors:
                    raise ScenarioError(f"{where}:{start.line + 1}: yaml: undefined alias *{event.anchor}")
                node, size = anchors[event.anchor]
                add(node, size, start, size)
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None and not event.implicit[0]:  # quoted: always a string, skip the resolver
                    tag = v12.STR_TAG
                elif tag is None or tag == "!":
                    key = (event.value, event.implicit)
                    tag = resolved.get(key)
                    if tag is None:
                        tag = resolved[key] = v12.number_tag(loader.resolve(  # type: ignore[no-untyped-call]
                            yaml.ScalarNode, event.value, event.implicit), event.value)
                value = event.value.translate(back) if back else event.value
                lim.check_tag(event.tag, "text", where, start.line + 1, value)
                node = yaml.ScalarNode(tag, value, start, end, style=event.style)
                if event.tag not in (None, "!", v12.STR_TAG):  # NodeReader.mapping refuses it on a key (round 16:
                    node.written_tag = event.tag  # type: ignore[attr-defined]  # `!!binary dream:` read as `dream`)
                if event.anchor is not None:
                    anchors[event.anchor] = (node, 1)
                add(node, 1, start, 1)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(stack) >= lim.MAX_DEPTH:
                    raise ScenarioError(f"{where}:{start.line + 1}: yaml: nested deeper than the limit "
                                        f"of {lim.MAX_DEPTH} levels")
                kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(  # type: ignore[no-untyped-call]
                        kind, None, event.implicit)
                lim.check_tag(event.tag, "a list" if kind is yaml.SequenceNode else "a mapping", where, start.line + 1)
                node = kind(tag, [], start, end, flow_style=event.flow_style)
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
                stack.append([node, event.anchor, 1, None])
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                node, anchor, size, _ = stack.pop()
                node.end_mark = end
                if anchor is not None:
                    open_anchors.discard(anchor)
                    anchors[anchor] = (node, size)
                add(node, size, start, 1)  # its children were counted as they arrived
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ScenarioError(f"{where}:{line}: yaml: {one_line(str(exc.problem or exc.context))}") from None
    except yaml.YAMLError as exc:  # ReaderError (unacceptable character) …
        raise ScenarioError(f"{where}:{v12.error_line(source, exc)}: yaml: {one_line(str(exc).splitlines()[0])}") \
            from None
    finally:
        dispose = getattr(loader, "dispose", None)
        if callable(dispose):
            dispose()
    return root


class NodeReader:
    """Typed reads of YAML nodes; every failure names the file, the node's line and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._where = one_line(str(path))
        self._ctor = SafeConstructor()
        self.design = ""
        """The scenario's ``design`` (set by the loader): a ``touched`` list names its memory kinds."""
        self.lines: dict[str, int] = {}
        """The line of each key of a mapping passed to the system untouched (``memories[0].system.via``): a value
        the system refuses is located at its key, not at the step (round 18)."""

    def fail(self, node: yaml.Node | None, field: str, expected: str) -> ScenarioError:
        line = node.start_mark.line + 1 if node is not None else 1
        # a field is built from keys the file chose: keep it short and colon-free so the line stays parseable
        shown = v12.visible(one_line(field if len(field) <= 200 else field[:200] + "…")).replace(":", "\\x3a") or "''"
        return ScenarioError(f"{self._where}:{line}: {shown}: {one_line(expected)}")

    def construct(self, node: yaml.Node, field: str, *, deep: bool = False) -> Any:
        """The Python value of ``node`` (safe tags only); a bad tag or value is a located error."""
        if isinstance(node, yaml.ScalarNode) and node.tag == v12.STR_TAG:
            return node.value
        if isinstance(node, yaml.ScalarNode) and node.tag == v12.AMBIGUOUS_TAG:
            raise self.fail(node, field, v12.ambiguous(node.value))
        try:
            return self._ctor.construct_object(node, deep=deep)
        except _SCALAR_ERRORS as exc:
            problem = exc.problem if isinstance(exc, yaml.MarkedYAMLError) and exc.problem else \
                f"not a {v12.tag_name(node.tag)} value" if isinstance(exc, LookupError | AttributeError) else str(exc)
            raise self.fail(node, field, f"invalid {v12.tag_name(node.tag)} value {node_text(node)!r:.60} "
                                         f"({problem})") from None

    def mapping(self, node: yaml.Node, field: str, allowed: Iterable[str] | None) -> dict[str, yaml.Node]:
        """The entries of a mapping with plain string keys; ``allowed=None`` takes any key."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field, f"expected a mapping, got {_kind(node)}")
        if len(node.value) > lim.MAX_LIST_ITEMS:
            raise self.fail(node, field, f"{len(node.value)} entries; the limit is {lim.MAX_LIST_ITEMS}")
        out: dict[str, yaml.Node] = {}
        allowed_set = set(allowed) if allowed is not None else None
        for key_node, value in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, field or "key", f"expected a plain key, got {_kind(key_node)} as a key")
            key = key_node.value
            here = f"{field}.{key}" if field else key
            if (written := getattr(key_node, "written_tag", None)) is not None:
                raise self.fail(key_node, here, f"tag {one_line(v12.tag_name(written))[:60]} on a key (a key is plain "
                                                "text: write it without a tag, or !!str)")
            if key_node.tag == MERGE_TAG:  # never merged: read as a literal key '<<', it failed later, unlocated
                raise self.fail(key_node, here, "merge keys (<<) are not read; write the keys out")
            if allowed_set is not None and key not in allowed_set:
                raise self.fail(key_node, here, f"unknown key; expected one of {', '.join(sorted(allowed_set))}")
            if key in out:
                raise self.fail(key_node, here, "duplicate key")
            out[key] = value
        return out

    def scalar(self, node: yaml.Node, field: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field, f"expected a scalar, got {_kind(node)}")
        return self.construct(node, field)

    def string(self, node: yaml.Node, field: str, *, choices: Iterable[str] | None = None) -> str:
        value = node.value if node.tag == v12.AMBIGUOUS_TAG else self.scalar(node, field)  # `no`, 0x1F: as written
        if not isinstance(value, str):
            raise self.fail(node, field, f"expected a string, got {value!r:.60}")
        options = tuple(choices) if choices is not None else None
        if options is not None and value not in options:
            raise self.fail(node, field, f"expected one of {', '.join(options)}, got {value!r:.60}")
        return value

    def text(self, node: yaml.Node, field: str) -> str:
        ambiguous_number = isinstance(node, yaml.ScalarNode) and node.tag == v12.AMBIGUOUS_TAG  # 0x1F, no: as written
        value = node.value if ambiguous_number else self.scalar(node, field)
        if isinstance(value, bool | bytes | list | dict | set | tuple) or value is None:  # !!omap 3 reads as []
            raise self.fail(node, field, f"expected text, got {v12.tag_name(node.tag)} {value!r:.60}")
        out = value if isinstance(value, str) else \
            node.value if isinstance(node, yaml.ScalarNode) else str(value)  # a number or a date: as written (3.10)
        if len(out) > lim.MAX_TEXT_CHARS:
            raise self.fail(node, field, f"text is {len(out)} characters; the limit is {lim.MAX_TEXT_CHARS}")
        bad = lim.bad_char(out)
        if bad:
            raise self.fail(node, field, f"{bad} in the text")
        return out

    def name(self, node: yaml.Node, field: str) -> str:
        """An identifier: a bounded, non-empty, single-line string."""
        value = self.text(node, field)
        problem = lim.name_problem(value)
        if problem:
            raise self.fail(node, field, problem)
        return value

    def boolean(self, node: yaml.Node, field: str) -> bool:
        value = self.scalar(node, field)
        if not isinstance(value, bool):
            raise self.fail(node, field, f"expected true or false, got {value!r:.60}")
        return value

    def integer(self, node: yaml.Node, field: str, *, minimum: int = 0, maximum: int = lim.MAX_INTEGER) -> int:
        value = self.scalar(node, field)
        if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
            raise self.fail(node, field, f"expected an integer from {minimum} to {maximum}, got {value!r:.60}")
        return value

    def number(self, node: yaml.Node, field: str) -> float:
        value = self.scalar(node, field)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise self.fail(node, field, f"expected a number from 0 to 1, got {value!r:.60}")
        return float(value)

    def seq(self, node: yaml.Node, field: str, item: Callable[[yaml.Node, str], T],
            limit: int = lim.MAX_LIST_ITEMS) -> list[T]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, f"expected a list, got {_kind(node)}")
        if len(node.value) > limit:
            raise self.fail(node, field, f"{len(node.value)} items; the limit is {limit}")
        return [item(child, f"{field}[{i}]") for i, child in enumerate(node.value)]

    def strings(self, node: yaml.Node, field: str) -> tuple[str, ...]:
        return tuple(self.seq(node, field, self.text))

    def phrases(self, node: yaml.Node, field: str) -> tuple[str, ...]:
        """Texts a check looks for in another text: an empty or blank one is in every text (or in none), so the
        check it makes could never fail (blind probe, round 17: ``prompt_contains: [""]`` passed ``--strict``)."""
        def phrase(child: yaml.Node, here: str) -> str:
            value = self.text(child, here)
            if not value.strip():
                raise self.fail(child, here, f"expected a non-empty phrase, got {value!r:.60}: a blank phrase "
                                             "makes a check that could never fail (or never pass)")
            return value
        return tuple(self.seq(node, field, phrase))

    def duration(self, node: yaml.Node, field: str) -> timedelta:
        raw = self.scalar(node, field)
        result = lim.duration(raw) if isinstance(raw, str) else f"expected a duration like 30s, 10m, 25h or 3d, " \
                                                                   f"got {raw!r:.60}"
        if isinstance(result, str):
            raise self.fail(node, field, result)
        return result

    def fact_ids(self, node: yaml.Node, field: str, facts: Mapping[str, object]) -> tuple[str, ...]:
        ids = self.strings(node, field)
        for i, fid in enumerate(ids):
            if fid not in facts:
                child = node.value[i] if isinstance(node, yaml.SequenceNode) else node
                raise self.fail(child, f"{field}[{i}]", f"unknown fact id {fid!r:.60}; declared: "
                                                        f"{', '.join(list(facts)[:20]) or 'none'}")
        return ids

    def memory_path(self, node: yaml.Node, field: str, path: str) -> None:
        """Refuse a path the replay could not create as a topic file inside the memory root."""
        problem = lim.memory_path_problem(path)
        if problem:
            raise self.fail(node, field, f"expected a relative .md path inside the memory root: {problem}")

    def instant(self, node: yaml.Node, field: str, moment: datetime, what: str) -> None:
        """Refuse an instant outside the supported clock range."""
        problem = lim.instant_problem(moment)
        if problem:
            raise self.fail(node, field, f"{what} would be {problem}")

    def clock(self, node: yaml.Node, field: str) -> datetime:
        """An ISO timestamp (naive means UTC) inside the supported clock range."""
        raw = self.scalar(node, field)
        if isinstance(raw, datetime):
            moment = raw
        elif isinstance(raw, date):
            moment = datetime(raw.year, raw.month, raw.day, tzinfo=UTC)
        else:
            try:
                moment = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
            except ValueError:
                raise self.fail(node, field, f"expected an ISO timestamp like 2026-03-02T09:00:00Z, "
                                             f"got {raw!r:.60}") from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        try:
            problem = lim.instant_problem(moment)
        except OverflowError:  # an offset that moves 0001-01-01 or 9999-12-31 out of datetime's range
            problem = f"{raw!s:.60} is outside the supported range"
        if problem:
            raise self.fail(node, field, problem)
        return moment

    def json_value(self, node: yaml.Node, field: str) -> Any:
        """A JSON-compatible value (str keys; text, finite numbers, bool, null, lists, objects), located errors.
        Depth and alias expansion are already bounded by ``compose_bounded``, so the recursion is too."""
        if isinstance(node, yaml.SequenceNode):
            return [self.json_value(child, f"{field}[{i}]") for i, child in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key, child in self.mapping(node, field, None).items():
                problem = lim.bad_char(key)
                if problem:
                    raise self.fail(node, f"{field}.{key}", f"{problem} in a key")
                out[key] = self.json_value(child, f"{field}.{key}")
            return out
        value = self.scalar(node, field)
        if isinstance(value, str):
            return self.text(node, field)
        if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
            return value
        raise self.fail(node, field, f"expected a JSON value, got {value!r:.60}")


def node_text(node: yaml.Node) -> str:
    return node.value if isinstance(node, yaml.ScalarNode) else _kind(node)


def _kind(node: yaml.Node) -> str:
    return "a mapping" if isinstance(node, yaml.MappingNode) else "a list" if isinstance(node, yaml.SequenceNode) \
        else repr(node.value[:60])
