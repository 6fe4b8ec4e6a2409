"""The system factory a run replays: a shipped system's name (``reference``, ``sqlite``, ``sqlite:seed``) or
``module:attr`` of the user's own."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from harness.errors import HarnessError
from harness.system import SystemFactory
from harness.systems import SYSTEMS
from harness.systems.files import factory_for


def shipped(spec: str | None) -> bool:
    """Whether ``--system spec`` names a system this package ships (trusted to run in the harness's own process)."""
    return spec is None or spec.partition(":")[0] in SYSTEMS


def load_factory(spec: str | None, *, typed: str | None = None) -> SystemFactory:
    """The system factory: a built-in name (``reference``, ``sqlite``, ``sqlite:seed``) or ``module:attr`` of your
    own (default: the reference core). ``typed``: what the user wrote, when not ``spec`` (``all``), for the errors."""
    if not spec:
        return factory_for()
    name, _, variant = spec.partition(":")
    if name in SYSTEMS:
        target = _import(SYSTEMS[name], f"{typed}: the {spec} system" if typed else spec)
        if SYSTEMS[name].endswith(":factory_for"):
            try:
                return target(variant)  # type: ignore[no-any-return]
            except ValueError as exc:
                raise HarnessError(f"--system {spec}: {exc}") from None
        if variant:
            raise HarnessError(f"--system {spec}: {name} has no variants")
        return target  # type: ignore[no-any-return]
    return _checked(_import(spec, spec), spec)


def _checked(factory: Any, spec: str) -> SystemFactory:
    """A factory must be callable as ``factory(workdir, clock, model, events)``."""
    import inspect

    try:
        inspect.signature(factory).bind(None, None, None, None)
    except (TypeError, ValueError):
        raise HarnessError(f"--system {spec}: expected a factory(workdir, clock, model, events) -> MemorySystem, "
                           f"got {type(factory).__name__} {getattr(factory, '__name__', '')}".rstrip()) from None
    return factory  # type: ignore[no-any-return]


def _import(target: str, spec: str) -> Any:
    module, _, attr = target.partition(":")
    if os.getcwd() not in sys.path:  # `--system pkg.mod:factory` names a module of the current project, as `python -m`
        sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(module), attr or "factory")
    except Exception as exc:
        raise HarnessError(f"--system {spec}: cannot import ({exc})") from None
    return factory
