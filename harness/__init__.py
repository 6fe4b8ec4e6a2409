"""memory-harness: replay scenarios against a memory system, with telemetry, metrics, gates and reports."""

__version__ = "0.1.0"
