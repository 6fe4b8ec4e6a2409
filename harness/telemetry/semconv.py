"""Every telemetry name in one place (otel.md §5): a rename is one line here."""

from __future__ import annotations

from typing import Final

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_USAGE_INPUT: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT: Final = "gen_ai.usage.output_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_MEMORY_STORE_ID: Final = "gen_ai.memory.store.id"
GEN_AI_MEMORY_RECORD_COUNT: Final = "gen_ai.memory.record.count"
GEN_AI_MEMORY_QUERY_TEXT: Final = "gen_ai.memory.query.text"
GEN_AI_MEMORY_RECORDS: Final = "gen_ai.memory.records"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
ERROR_TYPE: Final = "error.type"
TEST_SUITE_NAME: Final = "test.suite.name"
TEST_CASE_NAME: Final = "test.case.name"
TEST_CASE_RESULT: Final = "test.case.result.status"

MEMORY_OPERATION: Final = "memory.operation"
MEMORY_STATUS: Final = "memory.status"
MEMORY_TRIGGER: Final = "memory.trigger"
MEMORY_SKIPPED_REASON: Final = "memory.skipped_reason"
MEMORY_TOPICS_TOUCHED: Final = "memory.topics.touched"
MEMORY_DREAM_DEDUPED: Final = "memory.dream.deduped"
MEMORY_RECALL_STRATEGY: Final = "memory.recall.strategy"
MEMORY_RECALL_CANDIDATES: Final = "memory.recall.candidates"
MEMORY_RECALL_QUERY_LENGTH: Final = "memory.recall.query.length"
MEMORY_RECALL_RECORD_IDS: Final = "memory.recall.record_ids"
MEMORY_RECALL_TOP_SCORE: Final = "memory.recall.top_score"
MEMORY_STRATEGY: Final = "memory.strategy"
MEMORY_FALLBACK_REASON: Final = "memory.fallback_reason"
MEMORY_RECORDS_DELETED: Final = "memory.records.deleted"
MEMORY_FORGET_CANDIDATES: Final = "memory.forget.candidates"
MEMORY_PATCHES: Final = "memory.records.created"
MEMORY_DURATION_REAL_MS: Final = "memory.duration_ms"
MEMORY_LLM_REPLAYED: Final = "memory.llm.replayed"
MEMORY_LLM_PURPOSE: Final = "memory.llm.purpose"
MEMORY_PROMPT_VERSION: Final = "memory.prompt.version"
MEMORY_SCENARIO_HASH: Final = "memory.scenario.hash"
MEMORY_SCENARIO_STRATEGY: Final = "memory.scenario.strategy"
MEMORY_STEP: Final = "memory.step"
MEMORY_SCENARIO_TIME: Final = "memory.scenario.time"
"""The scenario's fake clock at the span (spans themselves carry real wall-clock times)."""
CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

OPERATION_SPAN: Final = {"recall": "search_memory", "extract": "upsert_memory", "dream": "upsert_memory",
                         "forget": "delete_memory"}
DURATION_METRIC: Final = "gen_ai.client.operation.duration"
TOKEN_METRIC: Final = "gen_ai.client.token.usage"
RECALL_RECORDS_METRIC: Final = "memory.recall.records"
RECALL_CANDIDATES_METRIC: Final = "memory.recall.candidates"
RECORD_CHANGES_METRIC: Final = "memory.record.changes"
STORE_RECORDS_METRIC: Final = "memory.store.record.count"
STORE_INDEX_SIZE_METRIC: Final = "memory.store.index.size"
DURATION_BUCKETS: Final = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BUCKETS: Final = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
RECORDS_BUCKETS: Final = [0, 1, 2, 3, 5, 8, 13, 21]
CANDIDATES_BUCKETS: Final = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]
