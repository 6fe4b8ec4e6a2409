"""Seed-compatibility switches: one bool per §7 entry of the SQLite memory spec (True = the seed's behaviour).

``Quirks.seed()`` reproduces the seed (OpenAkita memory v2 at cf98dab), bugs included; ``Quirks.fixed()`` turns
every switch off and runs the intended behaviour. ``Quirks.seed().but(q5_insert_or_replace=False)`` mixes them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Quirks:
    """Each field names its §7 entry; True reproduces the seed, False is the fix."""

    q1_decay_priority_case: bool = True
    """Q1: decay selects ``priority='SHORT_TERM'`` but rows store ``short_term``, so decay is a no-op."""
    q2_fts_sanitiser: bool = True
    """Q2: the sanitiser strips only ``"*(){}[]^~:`` and ORs bare tokens; punctuation and AND/OR/NOT make MATCH fail."""
    q3_cjk_unsegmented: bool = True
    """Q3: ``unicode61`` indexes a CJK run as one token; fixed: ``trigram`` index with CJK windows on the query."""
    q4_inverted_score: bool = True
    """Q4: ``1/(1+|bm25|)`` falls as the match improves; ``find_similar``'s ``> 0.8`` accepts only weak matches."""
    q5_insert_or_replace: bool = True
    """Q5: ``INSERT OR REPLACE`` fires no FTS delete trigger, orphaning index rows (and resets turn flags)."""
    q6_dedupe_ignores_expiry: bool = True
    """Q6: dedupe keeps an expired duplicate over a live one; cleanup then deletes the keeper."""
    q7_daily_no_retention: bool = True
    """Q7: the daily (dream) extraction path never sets ``expires_at``."""
    q8_demotion_keeps_expiry: bool = True
    """Q8: demotion to transient changes only ``priority``; such rows never expire."""
    q9_none_substring: bool = True
    """Q9: a reply whose text contains "none" anywhere (e.g. "NoneType") is treated as ``NONE``."""
    q9_importance_drops_batch: bool = True
    """Q9: one non-numeric ``importance`` discards the whole batch."""
    q9_failure_not_enqueued: bool = True
    """Q9: a failed extraction is never enqueued for retry."""
    q10_queue_loses_work: bool = True
    """Q10: ``failed`` is terminal and an empty extraction counts as failed."""
    q11_turns_extracted_twice: bool = True
    """Q11: real-time extraction never marks turns extracted, so the dream re-extracts them and makes a second episode."""
    q12_session_per_exchange: bool = True
    """Q12: the agent ends the session after every reply, so the ≤5-per-session cap resets each exchange."""
    q13_access_tracking_dead: bool = True
    """Q13: recall never bumps ``access_count`` / ``last_accessed_at``."""
    q14_updated_at_any_write: bool = True
    """Q14: every write (demotion, access bookkeeping) refreshes ``updated_at``, restarting recency and decay."""
    q16_short_ids: bool = True
    """Q16: 8-hex ids; a collision silently overwrites the older row."""
    q18_index_tail_kept: bool = True
    """Q18: the injected ``MEMORY.md`` keeps the last 900 characters; empty section headers are rendered."""
    q19_user_md_chinese_subject: bool = True
    """Q19: ``USER.md`` selects only ``subject == '用户'`` and overwrites without a backup."""
    q21_decompose_cache_ignores_context: bool = True
    """Q21: the LLM decomposition cache is keyed by ``query[:200]`` only and unbounded."""
    q22_like_unescaped: bool = True
    """Q22: ``%`` and ``_`` in LIKE keywords are wildcards."""
    q24_uppercase_rows_crash: bool = True
    """Q24: a row with an uppercase ``type``/``priority`` makes consolidation fail after step 1."""
    q26_episode_entities_broad: bool = True
    """Q26: any word longer than 2 characters ("the") is an episode entity, matched with ``LIKE %e%``."""

    @classmethod
    def seed(cls) -> Quirks:
        """The seed's behaviour, every quirk on."""
        return cls()

    @classmethod
    def fixed(cls) -> Quirks:
        """The intended behaviour, every quirk off."""
        return cls(**{f.name: False for f in fields(cls)})

    def but(self, **changes: bool) -> Quirks:
        """A copy with some switches changed (unknown names raise ``TypeError``)."""
        return replace(self, **changes)

    @classmethod
    def parse(cls, text: str) -> Quirks:
        """``seed`` | ``fixed``, then optional ``+qN_name`` / ``-qN_name`` overrides (``fixed+q1_decay_priority_case``)."""
        base, *mods = text.replace("-", " -").replace("+", " +").split()
        if base not in ("seed", "fixed"):
            raise ValueError(f"quirk mode must start with 'seed' or 'fixed', got {base!r}")
        quirks = cls.seed() if base == "seed" else cls.fixed()
        names = {f.name for f in fields(cls)}
        changes: dict[str, Any] = {}
        for mod in mods:
            name = mod[1:]
            if name not in names:
                raise ValueError(f"unknown quirk {name!r} (known: {', '.join(sorted(names))})")
            changes[name] = mod[0] == "+"
        return quirks.but(**changes)

    @property
    def mode(self) -> str:
        """``seed`` if every quirk is on, ``fixed`` if none is, else ``mixed``."""
        values = {getattr(self, f.name) for f in fields(self)}
        return "seed" if values == {True} else "fixed" if values == {False} else "mixed"

    def enabled(self) -> tuple[str, ...]:
        """The names of the switches that are on."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name))
