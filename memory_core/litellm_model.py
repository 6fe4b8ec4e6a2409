"""The real model adapter: structured JSON side-queries through litellm (the only module that imports it).

Any litellm provider string works (``openai/gpt-4o-mini``, ``anthropic/…``, ``ollama/…``, or ``openai/<name>`` with
``api_base`` for an OpenAI-compatible local server such as llama-cpp-python's). litellm is imported lazily with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so importing it never reaches for the network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from memory_core.clock import monotonic_ms
from memory_core.errors import ModelError
from memory_core.model import ModelReply, ModelRequest, parse_json_lenient, validate_schema


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@dataclass(frozen=True, slots=True)
class LiteLLMModel:
    """Calls a provider through ``litellm.completion`` with JSON output, then validates per the request's schema."""

    model: str
    api_base: str | None = None
    api_key: str | None = None
    timeout_scale: float = 1.0
    """Multiplies every request's timeout (a CPU-bound local model needs more than the spec's 5 s)."""
    seed: int | None = 0

    @property
    def name(self) -> str:
        """The litellm model string."""
        return self.model

    def response_format(self, request: ModelRequest) -> dict[str, Any]:
        """``json_schema`` where litellm says the model supports it, else ``json_object`` plus the schema
        (the form llama-cpp-python's server accepts)."""
        litellm = _litellm()
        try:
            strict = bool(litellm.supports_response_schema(model=self.model))
        except Exception:
            strict = False
        schema = dict(request.grammar or request.schema)
        if strict:
            return {"type": "json_schema", "json_schema": {"name": request.purpose.replace("-", "_"), "schema": schema}}
        return {"type": "json_object", "schema": schema}

    def query(self, request: ModelRequest, *, mock_response: dict[str, Any] | None = None) -> ModelReply:
        """One completion; timeouts, provider errors, bad JSON and schema violations become ``ModelError``.

        ``mock_response`` (a recorded ``ModelResponse`` dict) makes litellm answer offline with exactly that
        content and usage: cassette replay runs through this same adapter code.
        """
        litellm = _litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout_s * self.timeout_scale,
            "response_format": self.response_format(request),
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if mock_response is not None:
            kwargs["mock_response"] = mock_response
        if self.api_base:
            kwargs["api_base"] = self.api_base
            kwargs["api_key"] = self.api_key or "sk-local"
        elif self.api_key:
            kwargs["api_key"] = self.api_key
        t0 = monotonic_ms()
        try:
            response = litellm.completion(**kwargs)
        except litellm.Timeout as exc:
            raise ModelError(f"{self.model}: timed out after {kwargs['timeout']:.1f}s", reason="timeout") from exc
        except Exception as exc:
            raise ModelError(f"{self.model}: {type(exc).__name__}: {exc}", reason="provider") from exc
        latency = monotonic_ms() - t0
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        data = parse_json_lenient(text)
        validate_schema(data, request.schema)
        return ModelReply(
            data, text, getattr(response, "model", None) or self.model,
            int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0), latency,
            cost_usd=self._cost(litellm, response),
        )

    def _cost(self, litellm: Any, response: Any) -> float | None:
        """The call's price from litellm's local cost map; None for models it does not price (local ones)."""
        try:
            cost = litellm.completion_cost(completion_response=response, model=self.model)
        except Exception:
            return None
        return float(cost) if cost else None
