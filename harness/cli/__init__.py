"""Stage 6 — the ``memharness`` command line: parses arguments and calls stage functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.cli._parser import build_parser, command_of


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point: returns the exit code (0 ok, 1 gate/regression failure, 2 usage or scenario error).

    ``--help`` and ``--version`` are answered from the parser alone, before any command's module is imported."""
    import sys

    args = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help", "--version") for a in args) and "--" not in args:
        from harness.errors import HarnessError, one_line

        try:
            build_parser(command_of(args)).parse_args(args)  # prints and exits
        except HarnessError as exc:
            print(f"memharness: {one_line(str(exc))}", file=sys.stderr)
            return 2
    from harness.cli._commands import main as run

    return run(argv, environ)


__all__ = ["build_parser", "main"]
