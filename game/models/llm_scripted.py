"""`ScriptedDialogueModel`: authored answers only, deterministic (tests, offline demos).

The last user message is matched against an ordered list of patterns (regular
expressions, searched case-insensitively); the first that matches gives the
answer, else the default. An answer may be a list of variants: the variant is
``variants[seed % len(variants)]``, so a caller that regenerates with a new seed
gets the next variant, and the same prompt and seed always give the same reply.

The reply streams word by word, as a real model's would.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from game.models.llm import Message, ModelError, check_messages

Answer = str | Sequence[str]


class ScriptedDialogueModel:
    """Answers from a table of ``(pattern, answer)``.

    Args:
        answers: ``(regex pattern, answer or list of variants)`` in priority order, or
            a mapping in insertion order.
        default: answer (or variants) when nothing matches.
        name: model name for records.
        context_size: the context it claims (tokens).

    Raises:
        ModelError: a pattern is not a valid regular expression, or an answer list is empty.
    """

    def __init__(self, answers: Sequence[tuple[str, Answer]] | Mapping[str, Answer] = (),
                 default: Answer = "...", name: str = "scripted", context_size: int = 8192) -> None:
        pairs = list(answers.items()) if isinstance(answers, Mapping) else list(answers)
        self._table: list[tuple[re.Pattern[str], tuple[str, ...]]] = []
        for pattern, answer in pairs:
            try:
                rx = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise ModelError(f"scripted answer pattern {pattern!r} is not a regular expression: {exc}") from exc
            self._table.append((rx, self._variants(answer, pattern)))
        self._default = self._variants(default, "default")
        self.name = name
        self.context_size = context_size
        #: Number of replies generated (for tests and benches).
        self.calls = 0

    @staticmethod
    def _variants(answer: Answer, where: str) -> tuple[str, ...]:
        variants = (answer,) if isinstance(answer, str) else tuple(str(a) for a in answer)
        if not variants:
            raise ModelError(f"scripted answer for {where!r} has no variants")
        return variants

    @classmethod
    def from_options(cls, options: Mapping[str, Any], name: str = "scripted") -> ScriptedDialogueModel:
        """Build from JSON-able options: ``{"answers": [[pattern, answer], ...], "default": ...}``.

        Raises:
            ModelError: the options are not of that shape.
        """
        raw = options.get("answers", [])
        if not isinstance(raw, list | tuple):
            raise ModelError("scripted options.answers must be a list of [pattern, answer] pairs")
        pairs: list[tuple[str, Answer]] = []
        for i, item in enumerate(raw):
            if not (isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise ModelError(f"scripted options.answers[{i}] must be [pattern, answer]")
            pairs.append((item[0], item[1]))
        default = options.get("default", "...")
        return cls(pairs, default=default, name=str(options.get("name", name)),
                   context_size=int(options.get("context_size", 8192)))

    def answer(self, messages: list[Message], seed: int = 0) -> str:
        """The full reply to ``messages`` (what :meth:`stream` yields, joined)."""
        msgs = check_messages(messages)
        question = next((m["content"] for m in reversed(msgs) if m["role"] == "user"), "")
        for rx, variants in self._table:
            if rx.search(question):
                return variants[seed % len(variants)]
        return self._default[seed % len(self._default)]

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        """Yield the authored answer word by word (at most ``max_new_tokens`` words).

        Raises:
            ModelError: the prompt is malformed.
        """
        text = self.answer(messages, seed)
        self.calls += 1
        for i, piece in enumerate(re.findall(r"\s*\S+", text)):
            if i >= max_new_tokens:
                return
            yield piece

    def count_tokens(self, text: str) -> int:
        """An estimate: characters / 4, rounded up (the usual rule of thumb for English BPE)."""
        return math.ceil(len(text) / 4)
