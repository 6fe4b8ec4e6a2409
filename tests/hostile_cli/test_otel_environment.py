"""OpenTelemetry variables with values the SDK misreads (issue 33, round 12; left from round 11).

Before: ``OTEL_RESOURCE_ATTRIBUTES`` with a pair that is no ``key=value`` printed the SDK's own unlocated
``Invalid key value resource attribute pair`` (twice) and its values were not percent-decoded; a malformed OTLP
header pair was dropped without a word; ``OTEL_TRACES_SAMPLER=always_off`` (or any sampler that drops spans) left
``traces.jsonl`` empty, unsaid, and an unknown one printed ``Couldn't recognize sampler``; ``OTEL_SDK_DISABLED=true``
emptied ``traces.jsonl`` unsaid. Now a malformed pair is one line naming the variable (exit 2, before any work); the
resource carries the decoded pairs; any sampler is ignored with one warning line (the run keeps every span); a
disabled SDK is said. The values are generated; the SDK reads the process environment, so each is set there too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"
SDK_WORDS = ("Invalid key value", "invalid attribute key", "Couldn't recognize", "Could not convert")


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         env: dict[str, str]) -> tuple[int, str, Path]:
    out = tmp_path / f"run-{os.urandom(6).hex()}"
    capsys.readouterr()
    with monkeypatch.context() as scoped:  # this example's variables only, none left from the one before
        for name in [n for n in os.environ if n.startswith("OTEL_")]:
            scoped.delenv(name)
        for name, value in env.items():
            scoped.setenv(name, value)
        code = main(["run", str(SCENARIO), "--strategy", "heuristic", "--system", "reference", "--no-gates",
                     "--out", str(out)], environ={**env, "MEMHARNESS_HISTORY": str(tmp_path / "h.sqlite")})
    return code, capsys.readouterr().err, out


def _expected_pairs(raw: str) -> dict[str, str] | None:
    """The oracle, written from the specification's format, not from the code: None when malformed."""
    pairs = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            return None
        pairs[key.strip()] = unquote(value.strip())
    return pairs


_PLAIN: list[Path] = []
"""A run with no OpenTelemetry variable set (made once): how many spans a run makes."""

pair_text = st.text(st.sampled_from("ab=,% 2C%41.-_"), max_size=16)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=pair_text.filter(str.strip))
def test_resource_attributes_are_read_decoded_or_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, raw: str) -> None:
    caplog.clear()
    code, err, out = _run(tmp_path, monkeypatch, capsys, {"OTEL_RESOURCE_ATTRIBUTES": raw})
    err += caplog.text  # the SDK's warnings are log records (stderr outside pytest)
    assert not any(word in err for word in SDK_WORDS), err
    expected = _expected_pairs(raw)
    if expected is None:
        assert code == 2, err
        assert err.count("\n") == 1, err  # caplog holds nothing: refused before any work
        assert err.startswith("memharness: environment variable OTEL_RESOURCE_ATTRIBUTES: "), err
        return
    assert code == 0, err
    line = json.loads((out / "traces.jsonl").read_text(encoding="utf-8").split("\n")[0])
    attributes = {a["key"]: a["value"].get("stringValue") for a in line["resourceSpans"][0]["resource"]["attributes"]}
    for key, value in expected.items():
        assert attributes.get(key) == value, (key, value, attributes)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=pair_text.filter(str.strip), signal=st.sampled_from(["", "TRACES_"]))
def test_otlp_headers_that_are_no_pairs_are_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raw: str,
        signal: str) -> None:
    name = f"OTEL_EXPORTER_OTLP_{signal}HEADERS"
    code, err, _ = _run(tmp_path, monkeypatch, capsys, {name: raw})
    if _expected_pairs(raw) is None:
        assert code == 2, err
        assert err.startswith(f"memharness: environment variable {name}: "), err
        assert err.count("\n") == 1, err
    else:
        assert code == 0, err


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sampler=st.one_of(st.sampled_from(["always_off", "traceidratio", "parentbased_always_off", "always_on",
                                          "ALWAYS_ON", "parentbased_always_on"]),
                         st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)),
       disabled=st.booleans())
def test_no_sampler_drops_the_runs_spans_and_a_disabled_sdk_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, sampler: str, disabled: bool) -> None:
    env = {"OTEL_TRACES_SAMPLER": sampler, "OTEL_TRACES_SAMPLER_ARG": "0"}
    if disabled:
        env["OTEL_SDK_DISABLED"] = "true"
    caplog.clear()
    code, err, out = _run(tmp_path, monkeypatch, capsys, env)
    err += caplog.text  # the warnings are log records (stderr outside pytest)
    assert code == 0, err
    assert not any(word in err for word in SDK_WORDS), err
    spans = (out / "traces.jsonl").read_text(encoding="utf-8")
    if disabled:
        assert "OTEL_SDK_DISABLED=true: no spans are recorded" in err
        assert spans == ""
        return
    if not _PLAIN:
        _PLAIN.append(_run(tmp_path / "plain", monkeypatch, capsys, {})[2])
    plain = (_PLAIN[0] / "traces.jsonl").read_text(encoding="utf-8")
    assert spans.count('"spanId"') == plain.count('"spanId"') > 0, "a run keeps every span"
    recording = sampler.lower() in ("always_on", "parentbased_always_on")
    assert ("OTEL_TRACES_SAMPLER=" in err) is not recording, err


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.sampled_from(["true", "TRUE", " True ", "false", "False", "", "  ", "1", "0", "yes", "on"]),
                       st.text(max_size=8)))
def test_otel_sdk_disabled_is_true_false_or_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], value: str) -> None:
    """``OTEL_SDK_DISABLED``: true or false in any case (empty: unset), as the specification defines its booleans;
    any other value (``1``, ``yes``, ``bogus``) was read as false in silence and is refused in one line, exit 2."""
    if "\x00" in value:
        return  # no environment holds a NUL
    code, err, out = _run(tmp_path, monkeypatch, capsys, {"OTEL_SDK_DISABLED": value})
    word = value.strip().lower()
    if word not in ("true", "false", ""):
        assert code == 2, (code, err)
        (line,) = err.strip().splitlines()
        assert line.startswith("memharness: environment variable OTEL_SDK_DISABLED: expected true or false "
                               "(empty: unset), got "), err
        assert not out.exists()
        return
    assert code == 0, err
    spans = (out / "traces.jsonl").read_text(encoding="utf-8").strip()
    assert bool(spans) == (word != "true"), (value, spans[:200])
