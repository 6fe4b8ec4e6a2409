"""Prompt templates are files (a system's ``prompts/*.j2``); each render reports the template's version hash.

A system names its own template directory (``prompt_dir``); the default is the file system's,
``memory_core/files/prompts``. The SQLite system keeps its templates in ``memory_core/sqlite/prompts`` and
versions them as ``sqlite/<name>@…`` (``memory_core.sqlite.templates``), returning this module's ``RenderedPrompt``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import jinja2

PROMPT_DIR: Final = Path(__file__).parent / "files/prompts"
"""The file system's templates (the default ``prompt_dir``)."""


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """Rendered text and the version of the template it came from."""

    text: str
    version: str
    """``<template name>@<first 12 hex of sha256(template source)>``."""


@cache
def _environment(prompt_dir: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(prompt_dir),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def prompt_version(name: str, prompt_dir: Path = PROMPT_DIR) -> str:
    """The version hash of template ``name`` (in ``prompt_dir``) as it is on disk now."""
    source = (prompt_dir / f"{name}.j2").read_bytes()
    return f"{name}@{hashlib.sha256(source).hexdigest()[:12]}"


def render_prompt(name: str, prompt_dir: Path = PROMPT_DIR, **context: Any) -> RenderedPrompt:
    """Render ``<prompt_dir>/<name>.j2`` with ``context``."""
    text = _environment(prompt_dir).get_template(f"{name}.j2").render(**context)
    return RenderedPrompt(text.rstrip("\n"), prompt_version(name, prompt_dir))


def all_prompt_versions(prompt_dir: Path = PROMPT_DIR) -> dict[str, str]:
    """Every template's current version in ``prompt_dir``, by name (for reports and cassette status)."""
    return {p.stem: prompt_version(p.stem, prompt_dir) for p in sorted(prompt_dir.glob("*.j2"))}
