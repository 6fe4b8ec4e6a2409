"""The OpenTelemetry variables whose values the SDK would misread, warn about in its own unlocated words, or obey by
dropping the run's spans in silence (blind probe, round 12). Standard library only: ``check_environment`` runs it
before every command, ``--help`` included.

- ``OTEL_RESOURCE_ATTRIBUTES`` and the ``OTEL_EXPORTER_OTLP_*HEADERS`` variables are comma-separated ``key=value``
  pairs whose values are percent-encoded (the W3C Baggage format the specification names). A pair without ``=`` or
  with an empty key was dropped with the SDK's ``Invalid key value resource attribute pair`` (twice) or, for
  headers, without a word; now it is refused in one line naming the variable and the pair. Values are
  percent-decoded (resource attribute values were not: ``team=a%2Cb`` arrived as ``a%2Cb``).
- ``OTEL_TRACES_SAMPLER``: a run records every span (``traces.jsonl`` and the report's waterfall are outputs of the
  run), so any other sampler is ignored with one warning; ``always_off`` left ``traces.jsonl`` empty, unsaid.
- ``OTEL_SDK_DISABLED=true`` is obeyed (the user turned the SDK off) and said: no spans, an empty ``traces.jsonl``.
- ``OTEL_EXPORTER_OTLP[_TRACES|_METRICS|_LOGS]_PROTOCOL``: memharness exports OTLP over HTTP/protobuf only; another
  protocol is named in a warning instead of being ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import unquote

PAIR_VARIABLES: Final = ("OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                         "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS")
RECORDING_SAMPLERS: Final = frozenset({"always_on", "parentbased_always_on"})
"""Samplers that keep every span of a run (whose spans have no sampled-out parent)."""
PROTOCOLS: Final = ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL")


def key_value_pairs(name: str, raw: str) -> dict[str, str]:
    """``k1=v1,k2=v2`` as the specification reads it: keys and values stripped, values percent-decoded. An empty
    pair (two commas, or one at an end: the SDK's reader warns about it, unlocated), a pair without ``=``, with an
    empty key, or (for headers) a name or value that would end the HTTP header line is ``ValueError("<name>: …")``."""
    pairs: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            raise ValueError(f"{name}: expected key=value pairs separated by commas, got an empty pair (two commas "
                             "in a row, or one at an end)")
        key, sep, value = item.partition("=")
        shown = repr(item.strip())[:60]
        if not sep or not key.strip():
            raise ValueError(f"{name}: expected key=value pairs separated by commas, got {shown}")
        decoded = unquote(value.strip())
        if name.endswith("_HEADERS") and any(c in key + decoded for c in "\r\n\x00"):
            raise ValueError(f"{name}: a header name or value holds a line break or NUL, in {shown}")
        pairs[key.strip()] = decoded
    return pairs


def check_pairs(environ: Mapping[str, str]) -> None:
    """Every pair variable that is set reads (``ValueError`` naming the variable and the pair otherwise)."""
    for name in PAIR_VARIABLES:
        if environ.get(name, "").strip():
            key_value_pairs(name, environ[name])


def telemetry_notes(environ: Mapping[str, str]) -> list[str]:
    """One warning line per variable the run will not follow as written (see the module's text)."""
    notes: list[str] = []
    sampler = environ.get("OTEL_TRACES_SAMPLER", "").strip()
    if sampler and sampler.lower() not in RECORDING_SAMPLERS:
        notes.append(f"telemetry: OTEL_TRACES_SAMPLER={sampler[:40]!r} ignored: a run records every span "
                     "(traces.jsonl and the report's trace waterfall are outputs of the run)")
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        notes.append("telemetry: OTEL_SDK_DISABLED=true: no spans are recorded (traces.jsonl stays empty, the "
                     "report has no trace waterfall)")
    for name in PROTOCOLS:
        value = environ.get(name, "").strip()
        if value and value.lower() != "http/protobuf":
            notes.append(f"telemetry: {name}={value[:40]!r} ignored: memharness exports OTLP over http/protobuf only")
    return notes


def resource_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """``OTEL_RESOURCE_ATTRIBUTES``' pairs, decoded, which override the run's own attributes — except
    ``service.name`` when ``OTEL_SERVICE_NAME`` is set (the specification: that variable wins). A value
    ``check_pairs`` refuses gives nothing (the CLI refused it before any work)."""
    try:
        pairs = key_value_pairs("OTEL_RESOURCE_ATTRIBUTES", environ.get("OTEL_RESOURCE_ATTRIBUTES", ""))
    except ValueError:
        return {}
    if environ.get("OTEL_SERVICE_NAME", "").strip():
        pairs.pop("service.name", None)
    return pairs


_SAID: set[tuple[str, str]] = set()


def warn_notes(environ: Mapping[str, str], warn: Callable[[str], object], *, run_id: str = "") -> None:
    """``warn`` each of ``telemetry_notes`` once per run (a run builds one telemetry setup per system)."""
    for note in telemetry_notes(environ):
        if (run_id, note) not in _SAID:
            _SAID.add((run_id, note))
            warn(note)
