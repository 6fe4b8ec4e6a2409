"""The pipeline's shape: stage packages whose imports point one way, small modules, a protocol a third party can
implement without the reference core."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.conftest import REPO, SCENARIOS

HARNESS = REPO / "harness"
STAGES = {"scenario": 0, "telemetry": 1, "replay": 2, "evaluation": 3, "reporting": 4, "tools": 5, "cli": 6}
TOP_LEVEL = {"__init__": -1, "errors": -1, "system": 2, "plugins": 3, "strategies": 5, "pytest_plugin": 7, "__main__": 7}


def _rank(module: str) -> int | None:
    """The stage of ``harness.x.y`` (None for non-harness modules)."""
    parts = module.split(".")
    if parts[0] != "harness":
        return None
    if len(parts) == 1:
        return -1
    if parts[1] in STAGES:
        return STAGES[parts[1]]
    return TOP_LEVEL.get(parts[1], -1)  # a name defined in harness/__init__ (e.g. __version__)


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if node.module == "harness"]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def backward_edges(root: Path = HARNESS) -> list[str]:
    edges = []
    for path in sorted(root.rglob("*.py")):
        mine = _rank(_module_name(path))
        assert mine is not None
        for line, target in _imports(path):
            theirs = _rank(target)
            if theirs is not None and theirs > mine and not target.startswith(_module_name(path)):
                edges.append(f"{path.relative_to(REPO)}:{line} imports {target} (stage {theirs} > {mine})")
    return edges


def test_no_import_from_a_later_stage_into_an_earlier_one() -> None:
    assert backward_edges() == []


def test_the_import_walk_catches_a_backward_edge(tmp_path: Path) -> None:
    fake = tmp_path / "harness"
    (fake / "scenario").mkdir(parents=True)
    (fake / "scenario" / "_x.py").write_text("from harness.reporting import write_run\n")
    import tests.harness.test_architecture as me

    original = me.REPO
    me.REPO = tmp_path
    try:
        assert backward_edges(fake) == ["harness/scenario/_x.py:1 imports harness.reporting (stage 4 > 0)"]
    finally:
        me.REPO = original


def test_harness_is_stage_packages_and_a_handful_of_modules() -> None:
    top = sorted(p.stem for p in HARNESS.glob("*.py"))
    assert set(top) <= set(TOP_LEVEL), top
    assert sorted(p.name for p in HARNESS.iterdir() if p.is_dir() and (p / "__init__.py").exists()) == sorted(STAGES)
    sizes = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in HARNESS.rglob("*.py")}
    assert max(sizes.values()) <= 400, max(sizes.items(), key=lambda kv: kv[1])


def test_the_example_system_imports_nothing_from_memory_core() -> None:
    source = REPO / "tests" / "example_system.py"
    modules = [m for _, m in _imports(source)]
    assert modules
    assert not [m for m in modules if m.split(".")[0] == "memory_core"]


@pytest.mark.parametrize("system", ["tests.example_system:factory", "reference"])
def test_portable_scenarios_pass_for_a_third_party_system_and_the_reference(system: str, tmp_path: Path) -> None:
    args = ["run", str(SCENARIOS), "--tag", "portable", "--strategy", "heuristic", "--no-gates", "--out", str(tmp_path)]
    assert main([*args, "--system", system], environ={}) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts = summary["strategies"]["heuristic"]["scenarios"]
    assert counts["total"] == counts["passed"] >= 9
    probes = [json.loads(line) for line in (tmp_path / "probes.jsonl").read_text().splitlines()]
    if system != "reference":  # what the example cannot do is skipped visibly, with the reason, never silently dropped
        skipped = [p for p in probes if p.get("skipped")]
        assert skipped
        assert all("capability" in p["skipped"] for p in skipped)
    else:
        assert not any(p.get("skipped") for p in probes)


def test_a_system_without_a_capability_skips_those_steps_visibly(tmp_path: Path) -> None:
    out = tmp_path / "run"
    text = (SCENARIOS / "dream" / "skip-locked-live.yaml").read_text()  # its steps, for a system of no design
    scenario = tmp_path / "skip-locked-live.yaml"
    scenario.write_text("\n".join(line for line in text.splitlines() if not line.startswith("design:")) + "\n")
    assert main(["run", str(scenario), "--system", "tests.example_system:factory",
                 "--no-gates", "--out", str(out)], environ={}) == 0
    rows = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    reasons = {p["kind"]: p["skipped"] for p in rows if p.get("skipped")}
    assert "locks" in reasons["check"]
    # the dream after the skipped lock step assumes the lock: skipped with it (issue 31), not run without it
    assert reasons["dream"].startswith("after step")
    assert "lock needs capability locks" in reasons["dream"]
    html = (out / "report.html").read_text()
    assert "needs capability locks" in html
