"""The replay progress: a rich bar with ETA on a TTY, one summary line per strategy at the end otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.replay import ScenarioResult


def progress_bar(total: int) -> tuple[Callable[[ScenarioResult], None], Callable[[], None]]:
    """A rich progress bar on a TTY; otherwise nothing while replaying and one line per strategy at the end."""
    import time

    counts: dict[str, dict[str, int]] = {}
    started = time.monotonic()

    def count(r: ScenarioResult) -> None:
        by = counts.setdefault(r.strategy, {})
        by[r.status] = by.get(r.status, 0) + 1

    def lines() -> list[str]:
        took = time.monotonic() - started
        return [f"replayed {strategy}: {sum(by.values())} scenario run(s), "
                + ", ".join(f"{n} {status}" for status, n in sorted(by.items())) + f" ({took:.3g} s)"
                for strategy, by in counts.items()]

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
