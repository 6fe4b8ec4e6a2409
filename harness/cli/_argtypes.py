"""Argument types for the ``memharness`` parser: numbers with bounds, refused in one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def bounded(convert: Callable[[str], float], ok: Callable[[float], bool], expected: str) -> Callable[[str], Any]:
    """An argparse type: ``convert`` the text, accept it when ``ok``; otherwise one line, "expected <what>"."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):  # a comparison with nan is False: nan and out-of-range values are refused alike
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


def path(text: str) -> Any:
    """An argparse type for a path: ``pathlib.Path``, imported at the first use so ``--help`` never pays for it."""
    from pathlib import Path

    return Path(text)
