"""Prompt templates are files (``prompts/*.j2``); each render reports the template's version hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import jinja2

PROMPT_DIR: Final = Path(__file__).parent / "prompts"


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """Rendered text and the version of the template it came from."""

    text: str
    version: str
    """``<template name>@<first 12 hex of sha256(template source)>``."""


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPT_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def prompt_version(name: str) -> str:
    """The version hash of template ``name`` as it is on disk now."""
    source = (PROMPT_DIR / f"{name}.j2").read_bytes()
    return f"{name}@{hashlib.sha256(source).hexdigest()[:12]}"


def render_prompt(name: str, **context: Any) -> RenderedPrompt:
    """Render ``prompts/<name>.j2`` with ``context``."""
    text = _environment().get_template(f"{name}.j2").render(**context)
    return RenderedPrompt(text.rstrip("\n"), prompt_version(name))


def all_prompt_versions() -> dict[str, str]:
    """Every template's current version, by name (for reports and cassette status)."""
    return {p.stem: prompt_version(p.stem) for p in sorted(PROMPT_DIR.glob("*.j2"))}
