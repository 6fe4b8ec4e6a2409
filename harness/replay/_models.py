"""Model plumbing for a replay: where the replay is (for cassette messages), per-probe call counting, scripted models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.replay._records import NO_TOKENS, TokenUsage
from memory_core.errors import ModelError
from memory_core.model import Model, ModelReply, ModelRequest, ScriptedModel


@dataclass
class ProbeContext:
    """Where the replay is, for cassette error messages and recordings."""

    scenario: str = ""
    step: int = -1
    strategy: str = ""
    proxied: CallLog = field(default_factory=lambda: CallLog())
    """Calls the system made through the model proxy during the current step (counted as the probe's ``tokens``)."""


@dataclass
class CallLog:
    """Model calls made during the current probe."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    replayed: int = 0
    cost_usd: float | None = None
    prompt_versions: set[str] = field(default_factory=set)
    shown: list[str] = field(default_factory=list)
    """The text of every request's messages (``expect_model_shown`` / ``expect_model_hidden``)."""
    params: list[dict[str, Any]] = field(default_factory=list)
    """Every request's parameters: purpose, timeout_s, max_tokens, temperature (``expect_model_params``)."""
    answers: list[tuple[str, Any]] = field(default_factory=list)
    """Every answer: (purpose, parsed JSON), for the checks that hold a path to what its model said (``_quality``)."""

    def usage(self, also: CallLog | None = None) -> TokenUsage:
        """The calls and tokens of this log (and of ``also``: a step's calls through the model proxy)."""
        if also is None or not also.calls:
            if not (self.calls or self.input_tokens or self.output_tokens or self.replayed) and self.cost_usd is None:
                return NO_TOKENS  # most probes call no model: one shared record instead of one each (issue 34)
            return TokenUsage(self.calls, self.input_tokens, self.output_tokens, self.replayed, self.cost_usd)
        cost = None if self.cost_usd is None and also.cost_usd is None else (self.cost_usd or 0.0) + (also.cost_usd or 0.0)
        return TokenUsage(self.calls + also.calls, self.input_tokens + also.input_tokens,
                          self.output_tokens + also.output_tokens, self.replayed + also.replayed, cost)


@dataclass
class CountingModel:
    """Counts calls and tokens per probe, then delegates."""

    inner: Model
    log: CallLog = field(default_factory=CallLog)
    prompt_versions: set[str] = field(default_factory=set)
    """Every prompt version seen during the whole replay."""

    @property
    def name(self) -> str:
        return self.inner.name

    def query(self, request: ModelRequest) -> ModelReply:
        self.log.calls += 1
        self.log.shown.append("\n".join(m.content for m in request.messages))
        self.log.params.append({"purpose": request.purpose, "timeout_s": request.timeout_s,
                                "max_tokens": request.max_tokens, "temperature": request.temperature})
        self.log.prompt_versions.add(request.prompt_version)
        self.prompt_versions.add(request.prompt_version)
        reply = self.inner.query(request)
        self.log.answers.append((request.purpose, reply.data))
        self.log.input_tokens += reply.input_tokens
        self.log.output_tokens += reply.output_tokens
        self.log.replayed += int(reply.replayed)
        if reply.cost_usd is not None:
            self.log.cost_usd = (self.log.cost_usd or 0.0) + reply.cost_usd
        return reply


def scripted_model(replies: Sequence[Any]) -> Model:
    """A fresh scripted model from scenario replies ({error: reason} entries raise that ModelError)."""
    script: list[Any] = [ModelError(r.get("message") or f"scripted {r['error']}", reason=r["error"])
                         if isinstance(r, dict) and "error" in r else r for r in replies]
    return ScriptedModel.of(script, model_name="scripted")
