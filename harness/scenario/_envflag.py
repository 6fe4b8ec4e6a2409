"""On/off environment variables, read one way everywhere: ``MEMHARNESS_DEBUG`` and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

``1``, ``true``, ``yes``, ``on`` (any case, spaces around ignored) mean on; ``0``, ``false``, ``no``, ``off``, and
a value that is empty or spaces only (as unset) mean off. Any other value is refused before any work, in one line
naming the variable (``check_environment``, ``harness/cli/_argtypes.py``): ``MEMHARNESS_DEBUG=0`` once turned the
traceback on, since the string ``"0"`` is true.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

ON: Final = ("1", "true", "yes", "on")
OFF: Final = ("0", "false", "no", "off", "")
FLAG_VARIABLES: Final = ("MEMHARNESS_DEBUG", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
EXPECTED: Final = "expected 1, true, yes or on, or 0, false, no or off (empty: off)"


def parse_flag(value: str | None) -> bool | None:
    """``value`` read as on (True) or off (False); None for a value that is neither (unset is off)."""
    word = (value or "").strip().lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    return None


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether ``name`` is on in ``environ``; a value that is neither on nor off is off here (refused earlier)."""
    return parse_flag(environ.get(name)) is True
