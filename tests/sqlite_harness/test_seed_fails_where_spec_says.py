"""The shipped ``scenarios/sqlite`` suite fails in seed mode exactly where spec §7 says the seed is wrong, and
passes in fixed mode; each failing scenario fails because of its own quirk (``fixed+<quirk>`` fails it alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.replay import RunConfig, Worker
from harness.reporting import read_run
from harness.scenario import load_all

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "scenarios" / "sqlite"

QUIRK_OF: dict[str, str] = {
    # scenario id              §7 entry  the Quirks switch that alone makes it fail
    "bad-importance": "q9_importance_drops_batch",           # Q9: one non-numeric importance loses the batch
    "cjk-recall": "q3_cjk_unsegmented",                      # Q3: a CJK run is one unicode61 token
    "decay-thresholds": "q1_decay_priority_case",            # Q1: decay selects 'SHORT_TERM', rows store 'short_term'
    "decompose-cache-context": "q21_decompose_cache_ignores_context",  # Q21: cache keyed by query[:200] only
    "dedupe-with-expiry": "q6_dedupe_ignores_expiry",        # Q6: the expired duplicate is the keeper
    "demoted-expires": "q8_demotion_keeps_expiry",           # Q8 (and Q1): a demoted row never expires
    "english-punctuation": "q2_fts_sanitiser",               # Q2: ? . ' - + \ AND OR NOT break MATCH
    "episode-entities": "q26_episode_entities_broad",        # Q26: 'the' is an entity, LIKE %the%
    "failed-extraction-retried": "q9_failure_not_enqueued",  # Q9 + Q10: a failed extraction is never queued
    "forget-then-dream": "q11_turns_extracted_twice",        # Q11: the dream re-extracts a forgotten fact
    "forget-operator-words": "q2_fts_sanitiser",             # Q2: the matcher ORs every token
    "memory-md-empty-header": "q18_index_tail_kept",         # Q18: empty '## 偏好' header
    "memory-md-injection": "q18_index_tail_kept",            # Q18: the injection keeps the last 900 characters
    "none-substring": "q9_none_substring",                   # Q9: 'NoneType' in the reply reads as NONE
    "session-cap": "q12_session_per_exchange",               # Q12: the ≤ 5 cap resets every exchange
    "ttl-daily-path": "q7_daily_no_retention",               # Q7: the daily path sets no expires_at
    "turns-extracted-twice": "q11_turns_extracted_twice",    # Q11: the dream re-extracts, second Episode
    "update-in-place": "q5_insert_or_replace",               # Q5: INSERT OR REPLACE orphans FTS rows
    "uppercase-row": "q24_uppercase_rows_crash",             # Q24: 'SHORT_TERM' aborts consolidation
    "user-md-english": "q19_user_md_chinese_subject",        # Q19: USER.md only for subject '用户'
}
CONTROLS = {  # spec behaviour the seed gets right (§8.3 boundaries): pass in both modes
    "access-protects-from-decay", "episodes-kept", "recent-path-cutoff", "stuck-queue-recovery",
    "ttl-2h", "ttl-24h", "ttl-3d", "ttl-7d", "ttl-30d",
}
# strategies a failing scenario runs with in seed mode (every one of them fails)
SEED_FAILURES = {(sid, s) for sid in QUIRK_OF for s in ("heuristic", "bm25", "model")
                 if s in (load_all([SUITE / f"{sid}.yaml"])[0].strategies or ("heuristic",))}


def _failed(out: Path) -> set[tuple[str, str]]:
    _, results, _ = read_run(out)
    assert results
    assert not any(r.error for r in results), [r.error for r in results if r.error]
    return {(r.scenario, r.strategy) for r in results if not r.passed}


PIN_PREFIXES = ("read-", "life-")
"""Spec pins (issue 29: every normative rule of the read path and the lifecycle has a scenario that fails when it
is broken): they pass in fixed mode; in seed mode any quirk may fail them, so they are not part of the quirk map."""


QUIRK_PREFIX = "quirk-"
"""Seed pins (scenario key ``variant:``): they build the system in a quirk set themselves and pin what the seed does,
so they pass in any run; no other scenario names a variant."""


def test_every_scenario_is_mapped() -> None:
    scenarios = load_all([SUITE])
    ids = {s.id for s in scenarios}
    pins = {i for i in ids if i.startswith(PIN_PREFIXES)}
    quirks = {i for i in ids if i.startswith(QUIRK_PREFIX)}
    assert ids == set(QUIRK_OF) | CONTROLS | pins | quirks
    assert not (set(QUIRK_OF) | CONTROLS) & pins
    assert all(s.design == "s1-sqlite" and not s.systems for s in scenarios)
    assert {s.id for s in scenarios if s.variant} == quirks


@pytest.mark.slow
def test_seed_mode_fails_exactly_the_spec_quirks_and_fixed_passes(tmp_path: Path) -> None:
    assert main(["run", str(SUITE), "--system", "sqlite", "--no-gates", "--out", str(tmp_path / "fixed")],
                environ={}) == 0
    mapped = [str(SUITE / f"{sid}.yaml") for sid in sorted(set(QUIRK_OF) | CONTROLS)]
    assert main(["run", *mapped, "--system", "sqlite:seed", "--no-gates", "--out", str(tmp_path / "seed")],
                environ={}) != 0
    assert _failed(tmp_path / "fixed") == set()
    assert _failed(tmp_path / "seed") == SEED_FAILURES


@pytest.mark.parametrize("scenario_id", sorted(QUIRK_OF))
def test_each_scenario_fails_through_its_own_quirk(scenario_id: str) -> None:
    scenario = load_all([SUITE / f"{scenario_id}.yaml"])[0]
    strategy = (scenario.strategies or ("heuristic",))[0]
    worker = Worker(RunConfig(strategies=None, system=f"sqlite:fixed+{QUIRK_OF[scenario_id]}"))
    try:  # the fixed mode passes it (test above), so this one switch is what fails it
        assert not worker.run_one(scenario, strategy).passed
    finally:
        worker.shutdown()


def test_access_tracking_is_caught_once_decay_works() -> None:
    """Q13 is masked by Q1 at the seed (decay never runs); with decay fixed, dead access tracking deletes the
    memory that was recalled twice."""
    scenario = load_all([SUITE / "access-protects-from-decay.yaml"])[0]
    worker = Worker(RunConfig(strategies=None, system="sqlite:fixed+q13_access_tracking_dead"))
    try:
        assert not worker.run_one(scenario, "heuristic").passed
    finally:
        worker.shutdown()
