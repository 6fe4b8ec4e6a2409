"""Library-generated mutants for ``memharness sensitivity --generated N``, made with cosmic-ray's operators.

cosmic-ray (optional extra ``mutation``) is used only as a mutant generator: its core operators walk a parso tree
(which keeps formatting, so line numbers stay exact) and ``cosmic_ray.mutating.mutate_code(source, operator,
occurrence)`` returns one mutated module text. Its own test runner, work database and distributors are not used:
the scenario suite is the oracle. Every (module, operator, occurrence) of the target is enumerated, and N of them
are sampled with a fixed seed, so the same N and seed always give the same mutants.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from harness.errors import HarnessError
from harness.tools._equivalent import Outside
from harness.tools._mutants import Mutant, Target, describe_change

INSTALL_HINT: Final = "install the mutation extra: pip install -e '.[mutation]' (cosmic-ray)"
# Operators that need arguments (VariableReplacer/Inserter) are not in the no-argument set below; NoOp is not a
# mutation. Everything else of cosmic-ray's core provider is used.
_SKIP: Final = frozenset({"NoOp"})


@dataclass(frozen=True, slots=True)
class Site:
    """One place a cosmic-ray operator can mutate: module, operator, occurrence index and its start line."""

    module: str
    operator: str
    occurrence: int
    line: int


def _cosmic_ray() -> tuple[Any, Any, Any, Any]:
    try:
        from cosmic_ray.ast import ast_nodes, get_ast
        from cosmic_ray.mutating import mutate_code
        from cosmic_ray.plugins import get_operator, operator_names
    except ImportError as exc:
        raise HarnessError(f"--generated needs cosmic-ray ({exc}); {INSTALL_HINT}") from None

    def operators() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for full in operator_names():
            provider, _, name = full.partition("/")
            cls = get_operator(full)
            if provider == "core" and name not in _SKIP and not cls.arguments():
                out[name] = cls()
        return out

    return operators, get_ast, ast_nodes, mutate_code


def _equivalent(tree: Any, ast_nodes: Any) -> set[int]:
    """Ids of nodes whose mutation cannot change behaviour: annotations (never evaluated under ``from __future__
    import annotations``) and the bare ``*``/``/`` markers of a parameter list (cosmic-ray reads them as operators)."""
    roots: list[Any] = []
    for node in ast_nodes(tree):
        if node.type == "tfpdef":
            roots += node.children[2:]
        elif node.type == "funcdef" and node.annotation is not None:
            roots.append(node.annotation)
        elif node.type == "annassign":
            roots.append(node.children[1])
        elif node.type == "operator" and node.value in ("*", "**", "/") and node.parent.type in ("parameters", "param"):
            roots.append(node)
    return {id(n) for root in roots for n in ast_nodes(root)}


def population_order(rel: str) -> tuple[str, str]:
    """The order sites are enumerated in, module by module: by path with a leading ``files/`` dropped — the order
    the file system's modules had when they were ``memory_core``'s root — so a seeded sample (CI's ``--seed 4711``
    subset, the triaged samples of docs/sensitivity.md) draws the same sites after the file system moved to
    ``memory_core/files``. The seeded draw depends on this order only, never on the paths themselves."""
    return rel.removeprefix("files/"), rel


def _sites(target: Target, operators: dict[str, Any], get_ast: Any, ast_nodes: Any,
           modules: Sequence[str] = (), outside: Sequence[Outside] = ()) -> Iterator[Site]:
    for rel in sorted(target.modules(), key=population_order):
        if modules and not any(fnmatch.fnmatchcase(rel, pattern) for pattern in modules):
            continue
        rules = [o for o in outside if fnmatch.fnmatchcase(rel, o.module)]
        if any(o.whole_module for o in rules):
            continue
        source = target.module_path(rel).read_text(encoding="utf-8")
        spans = [span for o in rules for span in o.spans(source)]
        tree = get_ast(source)
        nodes = list(ast_nodes(tree))
        skip = _equivalent(tree, ast_nodes)
        for name, op in operators.items():
            occurrence = 0
            for node in nodes:  # the same pre-order walk and count as cosmic-ray's MutationVisitor
                for (start_line, _), _end in op.mutation_positions(node):
                    if id(node) not in skip and not any(a <= start_line <= b for a, b in spans):
                        yield Site(rel, name, occurrence, int(start_line))
                    occurrence += 1


def generated_mutants(target: Target, count: int, *, seed: int, modules: Sequence[str] = (),
                      outside: Sequence[Outside] = ()) -> list[Mutant]:
    """``count`` mutants sampled (fixed ``seed``) from every cosmic-ray site in the target (or in its modules
    matching one of the ``modules`` globs, e.g. ``sqlite/*``; never in the code an ``outside`` rule leaves out: a
    whole module, its named functions or classes, or the branches it marks as never taken), in sample order.

    Annotations and parameter-list markers are not sites (equivalent mutants). Sites whose mutant does not compile,
    that the operator fails to mutate, or whose text equals the original, are skipped and replaced by the next
    sampled site, so the list has ``count`` mutants unless the target has fewer usable sites.
    """
    if count <= 0:
        return []
    operators, get_ast, ast_nodes, mutate_code = _cosmic_ray()
    ops = operators()
    sites = list(_sites(target, ops, get_ast, ast_nodes, modules, outside))
    if modules and not sites:
        raise HarnessError(f"--module {', '.join(modules)}: no module of {target.name} matches")
    order = random.Random(seed).sample(range(len(sites)), len(sites))
    sources: dict[str, str] = {}
    out: list[Mutant] = []
    for i in order:
        if len(out) == count:
            break
        site = sites[i]
        original = sources.setdefault(site.module, target.module_path(site.module).read_text(encoding="utf-8"))
        try:
            mutated = mutate_code(original, ops[site.operator], site.occurrence)
        except Exception:  # an operator that cannot handle this node (cosmic-ray 8.x ExceptionReplacer on
            continue  # `except (a.B, C)`): not a mutant, like one that does not compile; the next site replaces it
        if not mutated or mutated == original:
            continue
        try:
            compile(mutated, f"{target.name}/{site.module}", "exec")
        except (SyntaxError, ValueError):
            continue
        line, before, after = describe_change(original, mutated)
        stem = site.module.removesuffix(".py").replace("/", ".")
        name = f"gen-{stem}-{line}-{site.operator}-{site.occurrence}"
        out.append(Mutant(name, "generated", site.module, line, before, after, f"cosmic-ray {site.operator}", mutated))
    return out
