"""Stage 6 — the ``memharness`` command line: parses arguments and calls stage functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TOP_HELP_FILE = "top_help.txt"
"""``memharness --help`` as the parser prints it (fixed width), beside this module; written by ``memharness docs``."""


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point: returns the exit code (0 ok, 1 gate/regression failure, 2 usage or scenario error).

    ``memharness --help`` is printed from ``TOP_HELP_FILE``; a command's ``--help`` and ``--version`` are answered
    from the parser alone, before any command's module is imported."""
    import sys

    from harness.errors import interrupted, watch_interrupts

    watch_interrupts()  # first: a Ctrl-C or SIGTERM while the commands load is one line, not a traceback; and a
    # KeyboardInterrupt the system under test raises is its failure, not the user's Ctrl-C
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["-h"], ["--help"]) and _print_top_help():
        return 0
    if any(a in ("-h", "--help", "--version") for a in args) and "--" not in args:
        import contextlib

        from harness.cli._parser import build_parser, command_of
        from harness.errors import HarnessError

        with contextlib.suppress(HarnessError):  # a usage error is reported by the command line below, as always
            build_parser(command_of(args)).parse_args(args)  # prints and exits
    try:
        from harness.cli._commands import main as run
    except KeyboardInterrupt:
        return interrupted()
    return run(argv, environ)


def _print_top_help() -> bool:
    """Print the stored top-level help (no parser, no argparse import); False when the file is missing."""
    import os
    import sys

    try:
        with open(os.path.join(os.path.dirname(__file__), TOP_HELP_FILE), encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return False
    sys.stdout.write(text)
    return True


EXIT_GRACE_S = 5.0
"""How long ``memharness`` waits, after its work, for threads it did not start to finish before it exits anyway."""


def entry() -> None:
    """The ``memharness`` console command: ``main()``, then a normal exit. If threads someone else started (the
    system under test) are still running ``EXIT_GRACE_S`` seconds later, a non-daemon one would keep the process
    alive after every output is written: it says so in one line and exits anyway. Leaked file descriptors are said
    too."""
    import os
    import signal
    import sys
    import threading
    import time

    for stream in (sys.stdout, sys.stderr):  # a console that cannot show '—' or '→' (ASCII, cp1252) gets an escape,
        reconfigure = getattr(stream, "reconfigure", None)  # never a UnicodeEncodeError after the run's work is done
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    for unused in (signal.SIGUSR1, signal.SIGUSR2):  # nothing here uses them: a system under test signalling the
        signal.signal(unused, signal.SIG_IGN)  # harness's process with one ended the run with no output or verdict
    fds = _open_fds()
    code = main()
    for stop in (signal.SIGINT, signal.SIGTERM):  # the command has its answer: a signal from here on would end the
        signal.signal(stop, signal.SIG_IGN)  # interpreter's shutdown by SIGINT's default action, outputs whole but no code
    leaked = _open_fds() - fds
    if leaked > 16:  # the harness closes its own; a few may stay (caches, a log handler)
        print(f"note: {leaked} file descriptor(s) were left open during the run (the system under test?)",
              file=sys.stderr)

    def leave() -> None:  # now, whatever threads are left: the outputs are written, the streams flushed
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def watchdog() -> None:
        time.sleep(EXIT_GRACE_S)
        alive = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon
                 and t.is_alive()]
        print(f"note: {len(alive)} thread(s) still running {EXIT_GRACE_S:g} s after the run ({', '.join(alive[:3])}"
              f"{', …' if len(alive) > 3 else ''}): exiting without waiting for them", file=sys.stderr)
        leave()
    from harness.errors import USER_INTERRUPT

    if USER_INTERRUPT.is_set():  # stopped: say so with our code, not by the interpreter's SIGINT exit, which a
        import atexit  # KeyboardInterrupt met inside the interpreter's own machinery can still trigger after ours

        atexit._run_exitfuncs()
        leave()
    try:
        threading.Thread(target=watchdog, name="memharness-exit-watchdog", daemon=True).start()
    except RuntimeError:  # no thread to be had (a memory limit): there is no one to wait for anyway
        leave()
    sys.exit(code)


def _open_fds() -> int:
    import os

    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


__all__ = ["entry", "main"]
