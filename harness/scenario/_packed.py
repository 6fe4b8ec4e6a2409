"""A loaded scenario held as its pickle (compressed) until it is replayed (``memharness run``): a large suite's
scenarios are the largest thing a run holds (~6 KB each as objects, ~1.3 KB as a pickle, about half that
compressed), and each is needed whole only while it replays. The fields a run reads to plan itself (id, tags,
strategies, systems, design, variant, scripted replies, model faults) are kept beside the pickle; any other field
is read from a fresh copy."""

from __future__ import annotations

import pickle
import zlib
from typing import Any, cast

from harness.scenario._types import FaultStep, Scenario

_PLAN = ("id", "tags", "strategies", "systems", "design", "variant", "scripted_model")


class PackedScenario:
    """A :class:`Scenario` as its pickle and the fields that plan a run; :func:`unpacked` gives it back whole."""

    __slots__ = (*_PLAN, "model_faults", "_blob")

    def __init__(self, scenario: Scenario) -> None:
        for name in _PLAN:
            object.__setattr__(self, name, getattr(scenario, name))
        self.model_faults = any(isinstance(s, FaultStep) and s.model is not None for s in scenario.steps)
        self._blob = zlib.compress(pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL), 1)  # ~0.45 of the pickle

    def unpack(self) -> Scenario:
        return cast(Scenario, pickle.loads(zlib.decompress(self._blob)))

    def __getattr__(self, name: str) -> Any:  # a field not kept beside the pickle (a slot never misses here)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.unpack(), name)

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (tuple(getattr(self, n) for n in self.__slots__),)


def _restore(state: tuple[Any, ...]) -> PackedScenario:
    packed = PackedScenario.__new__(PackedScenario)
    for name, value in zip(PackedScenario.__slots__, state, strict=True):
        object.__setattr__(packed, name, value)
    return packed


def pack(scenario: Scenario) -> Scenario:
    """``scenario`` held as its pickle; it reads as a :class:`Scenario` (each field not kept beside the pickle from a
    fresh copy), and the replay takes it back whole (:func:`unpacked`)."""
    return cast(Scenario, PackedScenario(scenario))


def unpacked(scenario: Scenario) -> Scenario:
    """The whole scenario, whether ``scenario`` is one or was packed."""
    return scenario.unpack() if isinstance(scenario, PackedScenario) else scenario


def model_faults(scenario: Scenario) -> bool:
    """Whether a step of ``scenario`` faults the model, read beside the pickle when it is packed."""
    if isinstance(scenario, PackedScenario):
        return scenario.model_faults
    return any(isinstance(s, FaultStep) and s.model is not None for s in scenario.steps)
