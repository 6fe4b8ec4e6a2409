"""Stage 5 — tools: property fuzzing (Hypothesis strategies and properties), benchmarks, LoCoMo import."""

from harness.tools._fuzz import PROFILES, FuzzReport, fuzz
from harness.tools._properties import Property, Thresholds, default_properties

__all__ = ["PROFILES", "FuzzReport", "Property", "Thresholds", "default_properties", "fuzz"]
