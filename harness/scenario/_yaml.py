"""Typed reads of YAML nodes with ``file:line: field: what was expected`` errors (used by the scenario loader)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml

from harness.errors import ScenarioError

_DURATION: Final = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
T = TypeVar("T")


class NodeReader:
    """Typed reads of YAML nodes; every failure names the file, the node's line and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, node: yaml.Node | None, field: str, expected: str) -> ScenarioError:
        line = node.start_mark.line + 1 if node is not None else 1
        return ScenarioError(f"{self.path}:{line}: {field}: {expected}")

    def mapping(self, node: yaml.Node, field: str, allowed: Iterable[str]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field, f"expected a mapping, got {_kind(node)}")
        out: dict[str, yaml.Node] = {}
        allowed_set = set(allowed)
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key not in allowed_set:
                raise self.fail(key_node, f"{field}.{key}" if field else str(key),
                                f"unknown key; expected one of {', '.join(sorted(allowed_set))}")
            if key in out:
                raise self.fail(key_node, f"{field}.{key}" if field else key, "duplicate key")
            out[key] = value
        return out

    def scalar(self, node: yaml.Node, field: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field, f"expected a scalar, got {_kind(node)}")
        return yaml.safe_load(yaml.serialize(node))

    def string(self, node: yaml.Node, field: str, *, choices: Iterable[str] | None = None) -> str:
        value = self.scalar(node, field)
        if not isinstance(value, str):
            raise self.fail(node, field, f"expected a string, got {value!r}")
        options = tuple(choices) if choices is not None else None
        if options is not None and value not in options:
            raise self.fail(node, field, f"expected one of {', '.join(options)}, got {value!r}")
        return value

    def text(self, node: yaml.Node, field: str) -> str:
        value = self.scalar(node, field)
        if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
            raise self.fail(node, field, f"expected text, got {value!r}")
        return str(value)

    def boolean(self, node: yaml.Node, field: str) -> bool:
        value = self.scalar(node, field)
        if not isinstance(value, bool):
            raise self.fail(node, field, f"expected true or false, got {value!r}")
        return value

    def integer(self, node: yaml.Node, field: str, *, minimum: int = 0) -> int:
        value = self.scalar(node, field)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(node, field, f"expected an integer ≥ {minimum}, got {value!r}")
        return value

    def number(self, node: yaml.Node, field: str) -> float:
        value = self.scalar(node, field)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise self.fail(node, field, f"expected a number from 0 to 1, got {value!r}")
        return float(value)

    def seq(self, node: yaml.Node, field: str, item: Callable[[yaml.Node, str], T]) -> list[T]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, f"expected a list, got {_kind(node)}")
        return [item(child, f"{field}[{i}]") for i, child in enumerate(node.value)]

    def strings(self, node: yaml.Node, field: str) -> tuple[str, ...]:
        return tuple(self.seq(node, field, self.text))

    def duration(self, node: yaml.Node, field: str) -> timedelta:
        raw = self.scalar(node, field)
        m = _DURATION.match(str(raw)) if isinstance(raw, str) else None
        if m is None:
            raise self.fail(node, field, f"expected a duration like 30s, 10m, 25h or 3d, got {raw!r}")
        return timedelta(**{_UNITS[m.group(2)]: float(m.group(1))})

    def fact_ids(self, node: yaml.Node, field: str, facts: Mapping[str, object]) -> tuple[str, ...]:
        ids = self.strings(node, field)
        for i, fid in enumerate(ids):
            if fid not in facts:
                child = node.value[i] if isinstance(node, yaml.SequenceNode) else node
                raise self.fail(child, f"{field}[{i}]", f"unknown fact id {fid!r}; declared: {', '.join(facts) or 'none'}")
        return ids


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(node.value)
