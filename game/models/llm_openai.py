"""`OpenAIDialogueModel`: any OpenAI-compatible chat endpoint, streamed.

Works with OpenAI itself and with local servers that speak the same API
(llama.cpp's ``llama-server``, vLLM, Ollama's ``/v1``, LM Studio...). Settings come
from arguments or the environment:

* ``WORLDLOOM_OPENAI_BASE_URL`` (else ``OPENAI_BASE_URL``; else OpenAI's own URL),
* ``WORLDLOOM_OPENAI_MODEL`` (required when no model is given),
* ``OPENAI_API_KEY`` (local servers usually accept any key; ``"none"`` is sent when unset).

The reply is requested with ``stream=True`` and read as server-sent
``chat.completion.chunk`` events; each non-empty ``choices[0].delta.content`` is a
delta. There is no tokenizer for a remote model, so :meth:`count_tokens` is an
estimate (characters / 4, rounded up), and the sink-prefix KV reuse is left to the
server (many cache a repeated prompt prefix on their own).

Needs the ``openai`` package (``pip install openai``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

from game.models.llm import Message, ModelError, check_messages


class OpenAIDialogueModel:
    """A chat model behind an OpenAI-compatible HTTP endpoint.

    Args:
        model: model name (default ``$WORLDLOOM_OPENAI_MODEL``).
        base_url: endpoint base, e.g. ``http://127.0.0.1:8080/v1`` (default from the environment).
        api_key: key (default ``$OPENAI_API_KEY``).
        context_size: the model's context, tokens (the API does not say it).
        timeout_s: per-request timeout, seconds.
        max_retries: retries on connection errors and 5xx answers.

    Raises:
        ModelError: ``openai`` is not installed, or no model name is known.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None, *,
                 context_size: int = 8192, timeout_s: float = 60.0, max_retries: int = 1) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ModelError("the openai dialogue model needs the openai package", hint="pip install openai") from exc
        self._openai: Any = openai
        self.model = model or os.environ.get("WORLDLOOM_OPENAI_MODEL", "")
        if not self.model:
            raise ModelError("no model name for the OpenAI-compatible endpoint",
                             hint="set WORLDLOOM_OPENAI_MODEL or pass openai:<model>")
        self.base_url = base_url or os.environ.get("WORLDLOOM_OPENAI_BASE_URL") or os.environ.get(
            "OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY") or "none"
        self._client: Any = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout_s,
                                          max_retries=max_retries)
        self.name = f"openai:{self.model}"
        self.context_size = context_size
        #: Token usage of the last reply when the server reported it.
        self.last_stats: dict[str, float] = {}

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        """Yield the reply as text deltas; see :meth:`game.models.llm.DialogueModel.stream`.

        ``seed`` is sent (servers that support it are then deterministic at a
        temperature above 0; others ignore it).

        Raises:
            ModelError: malformed messages, the endpoint is unreachable, refused the
                request or sent something that is not a chat completion stream.
        """
        msgs = check_messages(messages)
        where = self.base_url or "api.openai.com"
        try:
            response = self._client.chat.completions.create(model=self.model, messages=msgs, stream=True,
                                                            max_tokens=max_new_tokens, temperature=temperature,
                                                            seed=seed)
            try:
                for chunk in response:
                    choices = getattr(chunk, "choices", None) or []
                    if not choices:
                        usage = getattr(chunk, "usage", None)
                        if usage is not None:
                            self.last_stats = {"prompt_tokens": float(getattr(usage, "prompt_tokens", 0) or 0),
                                               "tokens": float(getattr(usage, "completion_tokens", 0) or 0)}
                        continue
                    delta = getattr(choices[0], "delta", None)
                    text = getattr(delta, "content", None) if delta is not None else None
                    if text:
                        yield str(text)
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()
        except self._openai.APIStatusError as exc:
            raise ModelError(f"the endpoint refused the request (HTTP {exc.status_code}): {exc.message}",
                             where=where) from exc
        except self._openai.APIConnectionError as exc:
            raise ModelError(f"cannot reach the endpoint: {exc}", where=where,
                             hint="check WORLDLOOM_OPENAI_BASE_URL and that the server runs") from exc
        except self._openai.OpenAIError as exc:
            raise ModelError(f"the endpoint failed: {exc}", where=where) from exc

    def count_tokens(self, text: str) -> int:
        """An estimate: characters / 4, rounded up (no tokenizer for a remote model)."""
        return math.ceil(len(text) / 4)
