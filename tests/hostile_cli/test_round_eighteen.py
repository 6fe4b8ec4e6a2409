"""Round 18: the gaps round 17's blind hostile-input probe left open ("hostile input: located errors, never
silence"). Each section is one class; each test draws its cases.

1. ``MEMHARNESS_DEBUG=0`` (``false``, ``no``) turned the traceback ON: the variable was tested for truthiness of
   its string. Now one parser (``harness._envflag``) reads every on/off variable (``MEMHARNESS_DEBUG``, the
   OpenTelemetry capture-content switch, which read any unknown value as off in silence): ``1/true/yes/on`` on,
   ``0/false/no/off``/empty off, anything else one line naming the variable.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# 1. on/off environment variables ------------------------------------------------------------------------------------

def _spelled(words: tuple[str, ...]) -> st.SearchStrategy[str]:
    """One of ``words`` in any case, with spaces or tabs around it."""
    pad = st.text(" \t", max_size=2)
    word = st.sampled_from(words).flatmap(
        lambda w: st.tuples(*(st.sampled_from(sorted({c.lower(), c.upper()})) for c in w)).map("".join))
    return st.tuples(pad, word, pad).map("".join)


OFF_VALUES = _spelled(("0", "false", "no", "off")) | st.text(" \t", max_size=3)
ON_VALUES = _spelled(("1", "true", "yes", "on"))
NEITHER = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda v: v.strip().lower() not in ("0", "false", "no", "off", "", "1", "true", "yes", "on"))


def _broken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``memharness schema`` fail as a bug of ours would."""
    import harness.cli._commands as commands

    def boom(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(commands, "cmd_schema", boom)


@SETTINGS
@given(value=OFF_VALUES)
def test_debug_off_values_keep_the_one_line_error(value: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _broken(monkeypatch)
    o = cli(["schema"], capsys, environ={"MEMHARNESS_DEBUG": value})
    assert o.code == 2, o.err
    assert o.err.startswith("memharness: internal error: RuntimeError: a bug"), o.err
    assert len(o.err.splitlines()) == 1


@SETTINGS
@given(value=ON_VALUES)
def test_debug_on_values_show_the_traceback(value: str, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _broken(monkeypatch)
    with pytest.raises(RuntimeError, match="a bug"):
        cli(["schema"], capsys, environ={"MEMHARNESS_DEBUG": value})


@SETTINGS
@given(value=NEITHER, name=st.sampled_from(["MEMHARNESS_DEBUG", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]))
def test_an_on_off_variable_that_is_neither_is_one_line(value: str, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["schema"], capsys, environ={name: value})
    assert_one_line_error(o, mentions=(f"environment variable {name}: expected 1, true",))


@pytest.mark.parametrize(("value", "on"), [("1", True), ("On", True), (" yes", True), ("true", True),
                                           ("0", False), ("off", False), ("", False), ("FALSE", False)])
def test_capture_content_reads_the_same_words(value: str, on: bool) -> None:
    from harness._envflag import env_flag
    from harness.telemetry import semconv as sc

    assert env_flag({sc.CAPTURE_ENV: value}, sc.CAPTURE_ENV) is on
