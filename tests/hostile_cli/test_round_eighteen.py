"""Round 18: the gaps round 17's blind hostile-input probe left open ("hostile input: located errors, never
silence"). Each section is one class; each test draws its cases.

1. ``MEMHARNESS_DEBUG=0`` (``false``, ``no``) turned the traceback ON: the variable was tested for truthiness of
   its string. Now one parser (``harness._envflag``) reads every on/off variable (``MEMHARNESS_DEBUG``, the
   OpenTelemetry capture-content switch, which read any unknown value as off in silence): ``1/true/yes/on`` on,
   ``0/false/no/off``/empty off, anything else one line naming the variable.
2. ``MEMHARNESS_TRACE_URL`` was written into every report link unchecked: ``javascript:…``, a URL with no
   ``{trace_id}`` (every scenario linked to one page), ``{traceid}`` left verbatim. Now it is an http(s) URL
   template with a host holding ``{trace_id}`` and no other placeholder, or one line naming the variable.
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


# 2. MEMHARNESS_TRACE_URL --------------------------------------------------------------------------------------------

HOSTS = st.sampled_from(["phoenix.example", "127.0.0.1:6006", "[::1]:6006", "Trace.Example.org"])
PATHS = st.lists(st.text("abcxyz019-_.~%", min_size=1, max_size=6), max_size=3).map("/".join)


@st.composite
def _good_templates(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTPS"]))
    where = draw(st.sampled_from(["path", "query", "fragment"]))
    base = f"{scheme}://{draw(HOSTS)}/{draw(PATHS)}"
    return {"path": f"{base}/{{trace_id}}", "query": f"{base}?trace={{trace_id}}", "fragment": f"{base}#{{trace_id}}"}[where]


@st.composite
def _bad_templates(draw: st.DrawFn) -> str:
    good = draw(_good_templates())
    how = draw(st.sampled_from(["scheme", "no host", "space", "control", "no placeholder", "other placeholder",
                                "brace"]))
    if how == "scheme":
        return draw(st.sampled_from(["javascript:", "ftp:", "file:", "data:", "", "//", "mailto:"])) + \
            good.split(":", 1)[1].lstrip("/")
    if how == "no host":
        return draw(st.sampled_from(["http:///{trace_id}", "https://:80/{trace_id}", "http:{trace_id}"]))
    if how == "space":
        at = draw(st.integers(0, len(good)))
        return good[:at] + draw(st.sampled_from([" ", "\u00a0", "\u2003"])) + good[at:] + "x"
    if how == "control":
        at = draw(st.integers(1, len(good) - 1))
        return good[:at] + draw(st.sampled_from(["\n", "\x00", "\x7f", "\u202e"])) + good[at:]
    if how == "no placeholder":
        return good.replace("{trace_id}", draw(st.sampled_from(["", "trace_id", "{traceid}", "{ trace_id }", "$trace_id"])))
    if how == "other placeholder":
        return good + draw(st.sampled_from(["&run={run_id}", "/{}", "/{0}"]))
    return good + draw(st.sampled_from(["}", "{"]))


@SETTINGS
@given(template=_bad_templates())
def test_a_trace_url_that_is_not_an_http_template_is_one_line(template: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": template})
    assert_one_line_error(o, mentions=("environment variable MEMHARNESS_TRACE_URL: expected an http:// or https://",))


@SETTINGS
@given(template=_good_templates(), pad=st.text(" \t", max_size=2))
def test_an_http_trace_url_template_is_taken(template: str, pad: str, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli._report_cmds import trace_url

    o = cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": pad + template + pad})
    assert o.code == 0, o.err
    assert trace_url({"MEMHARNESS_TRACE_URL": pad + template + pad}) == template


@pytest.mark.parametrize("blank", ["", " ", "\t "])
def test_a_blank_trace_url_is_unset(blank: str, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli._report_cmds import trace_url

    assert cli(["schema"], capsys, environ={"MEMHARNESS_TRACE_URL": blank}).code == 0
    assert trace_url({"MEMHARNESS_TRACE_URL": blank}) is None
