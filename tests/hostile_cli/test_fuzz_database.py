"""``memharness fuzz --database DIR`` under the derandomized profile (hostile probe, round 11).

Before: every ``--database`` with the default (``ci``) profile ended in ``memharness: internal error: InvalidArgument:
derandomize=True implies database=None …`` — Hypothesis refused the pair deep inside the first property. Now that is
one line naming the option, before any property runs, exit 2; with ``--profile dev`` the database is used. A generated
corpus (seeded; Hypothesis cannot run inside a Hypothesis test): the profile (given or the default), where the
database would go, and the other options beside it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.hostile_cli._support import assert_one_line_error, cli

CASES = 8


def _case(rng: random.Random, root: Path) -> tuple[list[str], str]:
    profile = rng.choice(["", "ci", "dev"])
    database = root.joinpath(*rng.sample(["a", "b", "c"], rng.randint(0, 2)), "db")
    if rng.random() < 0.5:
        database.mkdir(parents=True)
    pairs = [["--database", str(database)], ["--max-examples", "1"], ["--property", "planted-fact-recall"]]
    pairs += [["--profile", profile]] if profile else []
    pairs += [["--seed", str(rng.randint(0, 2**31))]] if rng.random() < 0.5 else []
    rng.shuffle(pairs)  # the options in any order
    return ["fuzz", *(part for pair in pairs for part in pair)], profile or "ci"


@pytest.mark.parametrize("seed", range(CASES))
def test_fuzz_database_is_refused_in_one_line_where_it_cannot_be_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int) -> None:
    rng = random.Random(seed)
    argv, profile = _case(rng, tmp_path)
    outcome = cli(argv, capsys)
    assert "internal error" not in outcome.err, outcome.err
    if profile == "ci":
        assert_one_line_error(outcome, mentions=("--database", "derandomized", "--profile dev"))
    else:
        assert outcome.code in (0, 1), outcome.err
