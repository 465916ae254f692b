"""Ollama's own API: POST /api/chat streams NDJSON (one JSON object a line), GET /api/tags
lists the models, POST /api/show tells a model's context length."""

from __future__ import annotations

import json
import re
from typing import Any

from codeask.config import LLMSettings
from codeask.core.llm.base import LineStreamProvider
from codeask.core.llm.errors import LLMError
from codeask.core.llm.protocol import ChatUsage, Message
from codeask.core.llm.stream import int_or_none
from codeask.core.llm.urls import base_url, is_loopback

#: `num_ctx 4096` among a Modelfile's parameters (one `name value` per line).
_NUM_CTX = re.compile(r"^num_ctx\s+(\d{1,9})\s*$", re.M)


class Ollama(LineStreamProvider):
    """A local (or remote) Ollama server; `done: true` ends the stream."""

    name = "ollama"
    default_base_url = "http://127.0.0.1:11434"
    default_model = "qwen2.5-coder:7b"
    chat_path = "/api/chat"
    models_path = "/api/tags"
    end_marker = "done:true"

    def request_body(self, settings: LLMSettings, messages: list[Message]) -> dict[str, Any]:
        """Sampling goes in `options`; Ollama's default window is small and it silently cuts
        longer prompts, so `num_ctx` is always sent."""
        options = {
            "temperature": settings.temperature,
            "num_predict": settings.max_tokens,
            "num_ctx": settings.context_tokens,
        }
        return {"model": settings.model, "messages": messages, "stream": True, "options": options}

    def parse_line(self, line: str, usage: ChatUsage) -> tuple[str, bool] | None:
        """(text delta, done) from one NDJSON line; ValueError if it is not a chat chunk."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if "error" in data:
            raise LLMError(str(data["error"]))
        message = data.get("message")
        if message is None and "done" not in data:
            raise ValueError("neither message nor done")
        content = message.get("content", "") if isinstance(message, dict) else ""
        if data.get("done"):
            usage.prompt_tokens = int_or_none(data.get("prompt_eval_count"))
            usage.completion_tokens = int_or_none(data.get("eval_count"))
            usage.finish_reason = str(data.get("done_reason") or "stop")
            return str(content or ""), True
        return str(content or ""), False

    def model_names(self, data: Any) -> list[str]:
        """`{"models": [{"name": ...}, ...]}`."""
        return [str(item["name"]) for item in data["models"]]

    def list_hint(self, settings: LLMSettings) -> str:
        return f"list models with `ollama list` (or `ollama pull {settings.model}`)"

    def window_request(self, settings: LLMSettings) -> tuple[str, str, Any] | None:
        """The model's details."""
        return "POST", base_url(settings) + "/api/show", {"model": settings.model}

    def window_in(self, data: Any) -> Any:
        """`model_info["<architecture>.context_length"]`: the longest context the model was
        made for (the `num_ctx` we send may not exceed it). A Modelfile's `num_ctx` parameter
        only when that is missing: it is a default our `num_ctx` overrides, not a limit."""
        info = data.get("model_info") or {}
        length = info.get(f"{info.get('general.architecture')}.context_length")
        if length is not None:
            return length
        found = _NUM_CTX.search(str(data.get("parameters") or ""))
        return int(found.group(1)) if found else None

    def start_hint(self, url: str) -> str:
        """Only for this machine: a remote Ollama is not ours to start."""
        return " (start it with `ollama serve`)" if is_loopback(url) else ""


PROVIDER = Ollama()
