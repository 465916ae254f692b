"""Any OpenAI-compatible server (llama.cpp, vLLM, LM Studio, OpenAI, Ollama's /v1):
POST /v1/chat/completions streams server-sent events, GET /v1/models lists the models, and
llama.cpp's GET /props tells its context window (other servers answer 404: the setting holds)."""

from __future__ import annotations

import json
from typing import Any

from codeask.config import LLMSettings
from codeask.core.llm.base import LineStreamProvider
from codeask.core.llm.errors import LLMError
from codeask.core.llm.protocol import ChatUsage, Message
from codeask.core.llm.stream import int_or_none
from codeask.core.llm.urls import base_url


class OpenAICompatible(LineStreamProvider):
    """`data: [DONE]` (or a chunk's `finish_reason`) ends the stream.

    The default endpoint is a local Ollama's OpenAI-compatible API, so switching `llm.provider`
    alone keeps talking to the same server.
    """

    name = "openai"
    default_base_url = "http://127.0.0.1:11434"
    default_model = "qwen2.5-coder:7b"
    chat_path = "/v1/chat/completions"
    models_path = "/v1/models"
    end_marker = "[DONE]"

    def request_body(self, settings: LLMSettings, messages: list[Message]) -> dict[str, Any]:
        """`include_usage` asks for the token counts in a last chunk."""
        return {
            "model": settings.model,
            "messages": messages,
            "stream": True,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "stream_options": {"include_usage": True},
        }

    def parse_line(self, line: str, usage: ChatUsage) -> tuple[str, bool] | None:
        """(text delta, done) from one SSE line; None for non-data lines; ValueError if
        malformed."""
        if not line.startswith("data:"):
            return None  # blank keep-alives, comments (':'), event:/id:/retry: fields
        payload = line[5:].strip()
        if payload == "[DONE]":
            return "", True
        data = json.loads(payload)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if "error" in data:
            err = data["error"]
            raise LLMError(str(err.get("message", err) if isinstance(err, dict) else err))
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise ValueError("no choices")
        _copy_usage(data.get("usage"), usage)
        text = ""
        for choice in choices:
            delta = choice.get("delta") or {}
            text += str(delta.get("content") or "")
            if choice.get("finish_reason"):
                usage.finish_reason = str(choice["finish_reason"])
        return text, False

    def model_names(self, data: Any) -> list[str]:
        """`{"data": [{"id": ...}, ...]}`."""
        return [str(item["id"]) for item in data["data"]]

    def list_hint(self, settings: LLMSettings) -> str:
        return f"list models with GET {self.models_url(settings)}"

    def window_request(self, settings: LLMSettings) -> tuple[str, str, Any] | None:
        """llama.cpp's server properties (its one model; at the root, not under /v1)."""
        return "GET", base_url(settings) + "/props", None

    def window_in(self, data: Any) -> Any:
        """`{"default_generation_settings": {"n_ctx": 2048, ...}, ...}`: one slot's window,
        which is what one request gets."""
        return data["default_generation_settings"]["n_ctx"]


def _copy_usage(raw: Any, usage: ChatUsage) -> None:
    """Copy the token counts when the chunk carries them (final chunk with include_usage)."""
    if isinstance(raw, dict):
        usage.prompt_tokens = int_or_none(raw.get("prompt_tokens"))
        usage.completion_tokens = int_or_none(raw.get("completion_tokens"))


PROVIDER = OpenAICompatible()
