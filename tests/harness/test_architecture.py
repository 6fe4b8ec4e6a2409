"""The pipeline's shape: stage packages whose imports point one way, small modules, a protocol a third party can
implement without the reference core."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.conftest import REPO, SCENARIOS

HARNESS = REPO / "harness"
STAGES = {"scenario": 0, "telemetry": 1, "systems": 2, "replay": 2, "evaluation": 3, "reporting": 4, "tools": 5, "cli": 6}
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


def test_the_import_walk_catches_a_backward_edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "harness"
    (fake / "scenario").mkdir(parents=True)
    (fake / "scenario" / "_x.py").write_text("from harness.reporting import write_run\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert backward_edges(fake) == ["harness/scenario/_x.py:1 imports harness.reporting (stage 4 > 0)"]


def test_harness_is_stage_packages_and_a_handful_of_modules() -> None:
    top = sorted(p.stem for p in HARNESS.glob("*.py"))
    assert set(top) <= set(TOP_LEVEL), top
    assert sorted(p.name for p in HARNESS.iterdir() if p.is_dir() and (p / "__init__.py").exists()) == sorted(STAGES)
    sizes = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in HARNESS.rglob("*.py")}
    assert max(sizes.values()) <= 400, max(sizes.items(), key=lambda kv: kv[1])


CORE = REPO / "memory_core"
SEAMS = {"__init__.py", "clock.py", "errors.py", "events.py", "model.py", "litellm_model.py", "prompts.py", "py.typed"}
SYSTEM_PACKAGES = {"files", "sqlite"}


def test_memory_core_root_is_the_seams_and_the_two_systems_side_by_side() -> None:
    root = {p.name for p in CORE.iterdir() if p.name != "__pycache__"}
    assert root == SEAMS | SYSTEM_PACKAGES, sorted(root ^ (SEAMS | SYSTEM_PACKAGES))
    for system in SYSTEM_PACKAGES:
        assert (CORE / system / "__init__.py").is_file()
        assert sorted((CORE / system / "prompts").glob("*.j2")), f"{system}: no prompt templates of its own"
        other = SYSTEM_PACKAGES - {system}
        modules = [m for p in (CORE / system).rglob("*.py") for _, m in _imports(p)]
        assert not [m for m in modules if m.split(".")[:2] in (["memory_core", o] for o in other)], system


def test_the_seams_import_neither_system() -> None:
    for name in SEAMS - {"py.typed"}:
        modules = [m for _, m in _imports(CORE / name)]
        assert not [m for m in modules if m.split(".")[:2] in (["memory_core", s] for s in SYSTEM_PACKAGES)], name


def private_harness_imports(path: Path) -> list[str]:
    """The private ``harness`` modules a file imports (a ``_name`` part anywhere in the dotted path)."""
    return [f"{path.relative_to(REPO)}:{line} imports {m}" for line, m in _imports(path)
            if m.split(".")[0] == "harness" and any(part.startswith("_") for part in m.split(".")[1:])]


def test_the_shipped_adapters_import_only_public_harness_modules() -> None:
    adapters = sorted((HARNESS / "systems").glob("*.py"))
    assert {p.stem for p in adapters} >= {"__init__", "files", "sqlite", "sqlite_checks", "faulty_store"}
    assert [edge for p in adapters for edge in private_harness_imports(p)] == []


def test_the_protocol_loads_no_adapter_until_asked() -> None:
    code = ("import sys, harness.system as s; print(sorted(m for m in sys.modules if m.startswith('harness.systems')));"
            " print(s.ReferenceSystem.__module__, s.reference_factory.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split("\n")[:2] == ["[]", "harness.systems.files harness.systems.files"]


def test_the_private_import_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "harness" / "systems" / "mine.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from harness.scenario._registry import RANKER_PLUGINS\nfrom harness.system import Capability\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert private_harness_imports(fake) == ["harness/systems/mine.py:1 imports harness.scenario._registry"]


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


@pytest.mark.parametrize("command", [["schema", "-o", "{tmp}/schema.json"], ["schema"]])
def test_a_command_that_only_writes_a_file_imports_no_evaluation(tmp_path: Path, command: list[str]) -> None:
    """Round 7 of the hostile probe: ``schema -o`` imported pandas, numpy and ``memory_core`` through
    ``harness.reporting`` (for ``atomic_write``), so under a memory limit (``ulimit -v``) it failed importing them.
    The reporting package now loads each name's module on first use."""
    argv = [part.format(tmp=tmp_path) for part in command]
    code = (f"import sys; from harness.cli import main; code = main({argv!r}); "
            "heavy = sorted(m for m in ('pandas', 'numpy', 'memory_core', 'harness.evaluation', 'harness.replay') "
            "if m in sys.modules); print(code, heavy, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stderr.strip().splitlines()[-1] == "0 []"
