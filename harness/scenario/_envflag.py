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


CAPTURE_MODES: Final = {"span_only": True, "span_and_event": True, "no_content": False, "event_only": False}
"""The content-capture variable is shared with OpenTelemetry's GenAI instrumentation, whose utilities read it as a
mode: the harness puts content on spans (and on the events it records with them), so a mode with spans is on, and
``EVENT_ONLY`` is off here (less content than asked, never more)."""


def parse_flag(value: str | None, name: str = "") -> bool | None:
    """``value`` of variable ``name`` read as on (True) or off (False); None for a value that is neither (unset is
    off). The content-capture variable also takes OpenTelemetry's GenAI modes (``CAPTURE_MODES``, any case)."""
    word = (value or "").strip().lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    if name == FLAG_VARIABLES[1]:
        return CAPTURE_MODES.get(word)
    return None


def expected(name: str) -> str:
    """What ``name`` takes, for its one-line error."""
    return EXPECTED + (", or SPAN_ONLY, SPAN_AND_EVENT (on), NO_CONTENT, EVENT_ONLY (off)"
                       if name == FLAG_VARIABLES[1] else "")


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether ``name`` is on in ``environ``; a value that is neither on nor off is off here (refused earlier)."""
    return parse_flag(environ.get(name), name) is True
