"""The replay progress: a rich bar with ETA on a TTY, one summary line per strategy at the end otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.replay import ScenarioResult


_WORDS = (("passed", "passed"), ("failed", "failed"), ("error", "did not finish (error)"), ("skipped", "skipped"))
"""Each status as the verdict line counts it ("5 did not finish (error)"), in its order."""


def progress_bar(total: int) -> tuple[Callable[[ScenarioResult], None], Callable[[], None]]:
    """A rich progress bar on a TTY; otherwise nothing while replaying and one line per strategy at the end."""
    import time

    counts: dict[str, dict[str, int]] = {}
    started = time.monotonic()

    def count(r: ScenarioResult) -> None:
        by = counts.setdefault(r.strategy, {})
        by[r.status] = by.get(r.status, 0) + 1

    def lines() -> list[str]:
        """One line per strategy in the verdict's words and order, then the replay's one wall time (each line
        printed the same total, as if it were that strategy's)."""
        took = time.monotonic() - started
        out = [f"replayed {strategy}: {sum(by.values())} scenario run(s), "
               + ", ".join(f"{by[status]} {word}" for status, word in _WORDS if by.get(status))
               for strategy, by in counts.items()]
        if not counts:  # nothing replayed (the run stopped first): the error that stopped it is the only line
            return []
        return [*out, f"replayed {sum(sum(by.values()) for by in counts.values())} scenario run(s) in {took:.3g} s"]

    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        bar = Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=True)
        task = bar.add_task("", total=total)
        bar.start()

        def advance(r: ScenarioResult) -> None:
            count(r)
            failed = sum(by.get("failed", 0) + by.get("error", 0) for by in counts.values())
            bar.update(task, advance=1, description=f"{r.strategy} {r.scenario}" + (f" · {failed} failed" if failed else ""))

        def stop() -> None:
            bar.stop()
            for line in lines():
                print(line, file=sys.stderr)

        return advance, stop

    def stop_plain() -> None:
        for line in lines():
            print(line, file=sys.stderr)

    return count, stop_plain
