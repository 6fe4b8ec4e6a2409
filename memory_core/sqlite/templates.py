"""The SQLite system's prompt templates (``prompts/*.j2``), versioned like ``memory_core.prompts``."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any, Final

import jinja2

from memory_core.prompts import RenderedPrompt

PROMPT_DIR: Final = Path(__file__).parent / "prompts"


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(PROMPT_DIR), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def prompt_version(name: str) -> str:
    """``sqlite/<name>@<first 12 hex of sha256(template)>``."""
    source = (PROMPT_DIR / f"{name}.j2").read_bytes()
    return f"sqlite/{name}@{hashlib.sha256(source).hexdigest()[:12]}"


def render(name: str, **context: Any) -> RenderedPrompt:
    """Render ``prompts/<name>.j2``."""
    text = _environment().get_template(f"{name}.j2").render(**context)
    return RenderedPrompt(text.rstrip("\n"), prompt_version(name))


def all_prompt_versions() -> dict[str, str]:
    """Every template's current version, by ``sqlite/<name>``."""
    return {f"sqlite/{p.stem}": prompt_version(p.stem) for p in sorted(PROMPT_DIR.glob("*.j2"))}
