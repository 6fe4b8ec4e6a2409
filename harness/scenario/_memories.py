"""The ``memories:`` list of a scenario: seeded files, ``repeat`` expanded, each path seeded once."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Final

import yaml

from harness.scenario import _limits as lim
from harness.scenario import _load_more as more
from harness.scenario._types import Fact, SeedMemory
from harness.scenario._yaml import NodeReader

TYPES: Final = ("user", "feedback", "project", "reference")
"""The memory types of the file-based system (qwen spec §2)."""

_MEMORY_KEYS: Final = ("path", "name", "description", "type", "body", "facts", "age", "raw", "raw_pad", "repeat",
                        "system")


def memories(ctx: NodeReader, node: yaml.Node, facts: dict[str, Fact], clock: datetime) -> list[SeedMemory]:
    if not isinstance(node, yaml.SequenceNode):
        raise ctx.fail(node, "memories", "expected a list of memories")
    out: list[SeedMemory] = []
    chars = 0
    dirs: dict[str, int] = {}
    first: dict[str, int] = {}  # path -> the memories[] entry that seeds it
    folded: dict[str, str] = {}  # casefolded path (and each directory of it) -> the path as first written
    for i, item in enumerate(node.value):
        f = ctx.mapping(item, f"memories[{i}]", _MEMORY_KEYS)
        if "path" not in f:
            raise ctx.fail(item, f"memories[{i}]", "expected a 'path'")
        path = ctx.text(f["path"], f"memories[{i}].path")
        ctx.memory_path(f["path"], f"memories[{i}].path", path.replace("{i}", "000"))
        kind = ctx.string(f["type"], f"memories[{i}].type", choices=TYPES) if "type" in f else "user"
        if "raw" not in f and "type" not in f:
            raise ctx.fail(item, f"memories[{i}]", "expected 'type' (or 'raw' file text)")
        if path in lim.RESERVED_BASENAMES and ("raw" not in f or "repeat" in f):
            raise ctx.fail(f["path"], f"memories[{i}].path", f"{path} can only be seeded once, as raw index text")
        seed = SeedMemory(
            path=path, type=kind,
            name=ctx.text(f["name"], f"memories[{i}].name") if "name" in f else "",
            description=ctx.text(f["description"], f"memories[{i}].description") if "description" in f else "",
            body=ctx.text(f["body"], f"memories[{i}].body") if "body" in f else "",
            facts=ctx.fact_ids(f["facts"], f"memories[{i}].facts", facts) if "facts" in f else (),
            age=ctx.duration(f["age"], f"memories[{i}].age") if "age" in f else timedelta(0),
            raw=ctx.text(f["raw"], f"memories[{i}].raw") if "raw" in f else None,
            raw_pad=ctx.integer(f["raw_pad"], f"memories[{i}].raw_pad", minimum=1, maximum=lim.MAX_RAW_PAD)
            if "raw_pad" in f else None,
            system=more.system_fields(ctx, f["system"], f"memories[{i}].system") if "system" in f else {},
            source=(i, f.get("system", item).start_mark.line + 1),
        )
        if seed.raw_pad is not None and (seed.raw is None or "repeat" in f
                                         or len(seed.raw.encode("utf-8")) > seed.raw_pad):
            raise ctx.fail(f["raw_pad"], f"memories[{i}].raw_pad", "expected a 'raw' text no longer than raw_pad bytes "
                                                                   "(and no 'repeat')")
        repeat = ctx.integer(f["repeat"], f"memories[{i}].repeat", minimum=1, maximum=lim.MAX_REPEAT) \
            if "repeat" in f else None
        if repeat is not None and "{i}" not in path:
            raise ctx.fail(f["path"], f"memories[{i}].path", "expected a '{i}' placeholder when 'repeat' is set")
        if len(out) + (repeat or 1) > lim.MAX_MEMORIES:
            raise ctx.fail(item, f"memories[{i}]", f"more than {lim.MAX_MEMORIES} seeded memories in total")
        expanded = [seed] if repeat is None else [dataclasses.replace(
            seed, path=path.replace("{i}", f"{n:03d}"), name=seed.name.replace("{i}", str(n)),
            description=seed.description.replace("{i}", str(n)), body=seed.body.replace("{i}", str(n)),
            age=seed.age + timedelta(seconds=n)) for n in range(repeat)]
        for m in expanded:
            where = f"memories[{i}].path"
            if repeat is not None:
                ctx.memory_path(f["path"], where, m.path)
            parts = m.path.split("/")
            for n in range(len(parts)):  # a file cannot also be a directory
                key = "/".join(parts[: n + 1])
                is_file = int(n == len(parts) - 1)
                if dirs.setdefault(key, is_file) != is_file:
                    raise ctx.fail(f["path"], where, f"{m.path!r:.80} makes {key!r:.80} both a file and a directory")
            # one file a path: a second would silently replace the first (SQLite queue rows, ``system: {queue: …}``,
            # name their session by the path, several a session; a repeated SQLite ``system.id`` is an update in
            # place, INSERT OR REPLACE, which scenarios pin on purpose)
            if "queue" not in m.system and first.setdefault(m.path, i) != i:
                raise ctx.fail(f["path"], where, f"{m.path!r:.80} is seeded twice (memories[{first[m.path]}] seeds it "
                                                 "too): one would silently replace the other")
            _same_but_case(ctx, f["path"], where, m.path, folded)
            chars += len(m.name) + len(m.description) + len(m.body) + len(m.raw or "")
            if chars > lim.MAX_SEED_CHARS:
                raise ctx.fail(item, f"memories[{i}]", f"more than {lim.MAX_SEED_CHARS} characters of seeded text")
            ctx.instant(f.get("age", item), f"memories[{i}].age", clock - m.age, "the memory's mtime")
        out += expanded
    return out


def _same_but_case(ctx: NodeReader, node: yaml.Node, where: str, path: str, folded: dict[str, str]) -> None:
    """Refuse a path (or a directory of it) that differs from one seeded before only in case: on a case-insensitive
    file system (macOS, Windows) ``user/Tabs.md`` and ``user/tabs.md`` are one file, so the scenario would seed one
    memory fewer there than on Linux (blind probe, round 17; paths are already refused when not portable)."""
    parts = path.split("/")
    for n in range(len(parts)):
        written = "/".join(parts[: n + 1])
        seen = folded.setdefault(written.casefold(), written)
        if seen != written:
            raise ctx.fail(node, where, f"{written!r:.80} and {seen!r:.80} differ only in case: one name on a "
                                        "case-insensitive file system (macOS, Windows)")
