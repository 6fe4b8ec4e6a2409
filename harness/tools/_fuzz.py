"""``memharness fuzz``: run the property suite against a memory system; write each shrunk counterexample as a
regression scenario that ``memharness run`` reproduces."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, cast

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from harness.replay import ScenarioResult, SystemFactory, replay, scripted_model, system_name
from harness.reporting import atomic_write
from harness.scenario import Scenario, scenario_to_yaml
from harness.systems.files import reference_factory
from harness.telemetry import Telemetry
from harness.tools._properties import Property

PROFILES: Final = {
    "dev": {"max_examples": 50, "derandomize": False},
    "ci": {"max_examples": 200, "derandomize": True},
}
"""``memharness fuzz --profile``: dev explores (a new seed sequence each run unless --seed is given); ci is
derandomized so the same commit always checks the same examples."""


@dataclass
class PropertyOutcome:
    name: str
    description: str
    passed: bool
    examples: int
    seconds: float
    failure: str | None = None
    regression: str | None = None


@dataclass
class FuzzReport:
    system: str
    max_examples: int
    seed: int
    properties: list[PropertyOutcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.properties)

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "max_examples": self.max_examples, "seed": self.seed, "passed": self.passed,
                "properties": [asdict(p) for p in self.properties]}


def _quiet_telemetry() -> Telemetry:
    """Providers with no exporters: spans and metrics are created but go nowhere (fuzzing is about behaviour)."""
    return Telemetry(TracerProvider(), MeterProvider(), LoggerProvider())


class _Runner:
    def __init__(self, factory: SystemFactory, strategy: str) -> None:
        self.strategy, self.telemetry = strategy, _quiet_telemetry()
        self.system_name = ""
        """The name the fuzzed system declares: a regression scenario is written for that system."""

        def named(*args: Any) -> Any:
            system = factory(*args)
            self.system_name = system_name(system)
            return system

        self.factory = cast(SystemFactory, named)

    def __call__(self, scenario: Scenario) -> ScenarioResult:
        strategy = scenario.strategies[0] if scenario.strategies else self.strategy
        model = scripted_model(scenario.scripted_model) if scenario.scripted_model is not None else None
        return replay(scenario, strategy=strategy, telemetry=self.telemetry, model=model, system_factory=self.factory)


def run_property(prop: Property, *, factory: SystemFactory, max_examples: int, seed_value: int,
                 regressions: Path | None, database: Path | None, derandomize: bool = False) -> PropertyOutcome:
    """Run one property; on failure write the shrunk counterexample scenario under ``regressions``."""
    run = _Runner(factory, prop.strategy)
    last_failing: list[Scenario] = []
    count = [0]

    @settings(max_examples=max_examples, deadline=None, derandomize=derandomize, print_blob=False,
              database=DirectoryBasedExampleDatabase(str(database)) if database else None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
    @seed(seed_value)
    @given(prop.samples)
    def check(sample: Any) -> None:
        count[0] += 1
        scenario = prop.build(sample, run)
        result = run(scenario)
        if not result.passed:
            last_failing[:] = [scenario]
            raise AssertionError(result.error or result.failures[0])

    t0 = time.perf_counter()
    try:
        check()
    except AssertionError as exc:
        path = None
        if last_failing and regressions is not None:
            failing = last_failing[0]
            if run.system_name and not failing.systems:  # a property of the system it was found on, no other
                failing = replace(failing, systems=(run.system_name,))
            text = scenario_to_yaml(failing)
            digest = hashlib.sha256(text.encode()).hexdigest()[:8]
            target = regressions / f"{prop.name}-{digest}.yaml"
            atomic_write(target, text.replace("id: regressions/", f"id: regressions/{digest}-", 1))
            path = str(target)
        return PropertyOutcome(prop.name, prop.description, passed=False, examples=count[0],
                               seconds=time.perf_counter() - t0, failure=str(exc).splitlines()[0][:400], regression=path)
    return PropertyOutcome(prop.name, prop.description, passed=True, examples=count[0], seconds=time.perf_counter() - t0)


def fuzz(properties: Sequence[Property], *, factory: SystemFactory = reference_factory, system_name: str = "reference",
         max_examples: int = 200, seed_value: int = 0, regressions: Path | None = None,
         database: Path | None = None, derandomize: bool = False) -> FuzzReport:
    """Run every property and collect the outcomes."""
    report = FuzzReport(system_name, max_examples, seed_value)
    for prop in properties:
        report.properties.append(run_property(prop, factory=factory, max_examples=max_examples, seed_value=seed_value,
                                              regressions=regressions, database=database, derandomize=derandomize))
    return report
