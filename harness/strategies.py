"""Public Hypothesis strategies for memory systems (documented import path; they live in ``harness.tools``).

    from harness.strategies import conversations, topic_texts, memory_stores, hostile_model_replies
"""

from harness.tools._hypothesis import (
    CLOCK,
    CODEWORDS,
    DISTRACTORS,
    STATEMENTS,
    conversations,
    entries,
    hostile_model_replies,
    memory_stores,
    planted_facts,
    seeded_stores,
    topic_texts,
)

__all__ = ["CLOCK", "CODEWORDS", "DISTRACTORS", "STATEMENTS", "conversations", "entries", "hostile_model_replies",
           "memory_stores", "planted_facts", "seeded_stores", "topic_texts"]
